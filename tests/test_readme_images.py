"""The README's image-text configs are valid as written: every input key, stage and option
exists, and the mixture parses as an image-text mixture."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from mixplane.mix.spec import MixtureSpec
from mixplane.process.config import PipelineConfig
from mixplane.process.pipeline import Pipeline

README = Path(__file__).parent.parent / "README.md"


def readme_yaml(marker: str) -> dict:
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(), flags=re.S)
    return yaml.safe_load(next(block for block in blocks if marker in block))


def test_readme_image_pipeline_builds():
    config = PipelineConfig.parse(readme_yaml("output_format: webdataset"))
    Pipeline(config)  # stages and the sources they name are checked here
    assert config.output_format == "webdataset"
    names = [stage.build().stage_name() for stage in config.stages]
    assert names == [
        "fetch_images",
        "decode_image",
        "caption_filter",
        "langid",
        "dedup_image",
        "resize_image",
    ]
    assert config.input[2].url_key == "url"


def test_readme_image_mixture_parses():
    spec = MixtureSpec.parse(readme_yaml("kind: image_text"))
    assert spec.kind == "image_text"
    assert sorted(spec.components) == ["art", "photos"]
