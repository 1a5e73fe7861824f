"""`image_safety` with real models made here: a module that scores how red an image is,
saved as TorchScript and exported to ONNX, run on real image shards through the pipeline."""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image
from readme_blocks import readme_block

from mixplane import run_pipeline
from mixplane.document import Document
from mixplane.errors import ConfigError
from mixplane.stages.build import build_stage
from mixplane.stages.image.safety_spec import SafetySpec

torch = pytest.importorskip("torch")

SPEC = """\
size: 32
resize: squash
scale: 255
activation: softmax
unsafe: 1
labels: [safe, unsafe]
"""


class Redness(torch.nn.Module):
    """Logits (safe, unsafe): unsafe grows with how much the red channel outweighs the
    others, on pixels scaled to [0, 1]."""

    def forward(self, pixels):
        red = pixels[:, 0].mean(dim=(1, 2))
        others = pixels[:, 1:].mean(dim=(1, 2, 3))
        unsafe = 12.0 * (red - others - 0.35)
        return torch.stack([torch.zeros_like(unsafe), unsafe], dim=1)


def photo(seed: int, red: bool) -> bytes:
    """A noisy 48x40 image: mostly red, or of another colour."""
    rng = np.random.default_rng(seed)
    if red:
        base = np.array([rng.integers(190, 240), rng.integers(0, 50), rng.integers(0, 50)])
    else:  # any colour whose red is not its strongest channel
        base = rng.integers(40, 200, 3)
        base[0] = base.min()
    pixels = base + rng.normal(0, 18, (40, 48, 3))
    buffer = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    """Two tars of 8 samples; samples 1, 4 and 6 of each are red, one sample is corrupt."""
    raw = tmp_path_factory.mktemp("raw")
    for shard in range(2):
        with tarfile.open(raw / f"shard-{shard}.tar", "w") as tar:
            for n in range(8):
                key = f"s{shard}-{n}"
                image = photo(10 * shard + n, red=n in (1, 4, 6))
                if shard == 1 and n == 7:
                    image = image[:60]  # cut short: decode_image excludes it
                for member, payload in ((f"{key}.png", image), (f"{key}.txt", b"a photo")):
                    info = tarfile.TarInfo(member)
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
    return raw


@pytest.fixture(scope="module")
def torchscript_model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch deprecates TorchScript
        torch.jit.script(Redness()).save(str(folder / "redness.pt"))
    (folder / "redness.yaml").write_text(SPEC)
    return folder / "redness.pt"


def run(shards: Path, output: Path, stage: dict, workers: int = 1):
    return run_pipeline(
        {
            "input": str(shards / "*.tar"),
            "output": str(output),
            "output_format": "webdataset",
            "workers": workers,
            "stages": [{"decode_image": {}}, {"image_safety": stage}],
        }
    )


def kept_scores(output: Path) -> dict[str, float]:
    rows = pq.read_table(sorted(output.glob("part-*.meta.parquet"))).to_pylist()
    return {row["id"].rsplit("/", 1)[1]: row["unsafe_score"] for row in rows}


def excluded(output: Path) -> dict[str, tuple[str, dict]]:
    rows = pq.read_table(output / "_excluded").to_pylist()
    return {r["id"].rsplit("/", 1)[1]: (r["reason"], json.loads(r["detail"])) for r in rows}


RED = {f"s{shard}-{n}" for shard in range(2) for n in (1, 4, 6)}


def test_red_images_are_dropped_with_the_reason_and_the_model_hash_is_recorded(
    shards, torchscript_model, tmp_path
):
    stage = {"model": str(torchscript_model), "mode": "filter", "threshold": 0.5}
    out = tmp_path / "out"
    result = run(shards, out, stage)
    assert (result.stats["kept"], result.stats["excluded"]) == (9, 7), excluded(out)
    reasons = excluded(out)
    assert reasons.pop("s1-7")[0] == "corrupt_image"
    assert set(reasons) == RED
    for reason, detail in reasons.values():
        assert reason == "unsafe_image" and detail["threshold"] == 0.5
        assert detail["unsafe_score"] > 0.9
    scores = kept_scores(out)
    assert len(scores) == 9 and max(scores.values()) < 0.1

    manifest = json.loads((out / "_manifest.json").read_text())
    (record,) = [s for s in manifest["stages"] if s["name"] == "image_safety"]
    digest = hashlib.sha256(torchscript_model.read_bytes()).hexdigest()
    assert record["model_sha256"] == digest and record["model"] == str(torchscript_model)
    assert record["spec"]["unsafe"] == [1] and record["spec"]["activation"] == "softmax"


def test_the_same_model_in_onnx_gives_the_same_scores_on_any_number_of_workers(
    shards, torchscript_model, tmp_path
):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    onnx_model = tmp_path / "redness.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the exporter's own notice
        torch.onnx.export(
            Redness(),
            (torch.zeros(2, 3, 32, 32),),
            str(onnx_model),
            dynamo=False,
            input_names=["pixels"],
            dynamic_axes={"pixels": {0: "batch"}},
        )
    run(shards, tmp_path / "torch", {"model": str(torchscript_model)})
    onnx_stage = {"model": str(onnx_model), "spec": yaml.safe_load(SPEC), "batch_size": 3}
    outputs = {}
    for workers in (1, 2):  # workers import onnxruntime, not torch: a cheap second run
        out = tmp_path / f"onnx-{workers}"
        run(shards, out, onnx_stage, workers)
        outputs[workers] = {
            p.relative_to(out).as_posix(): p.read_bytes()
            for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix in (".tar", ".idx", ".parquet")
        }
    assert outputs[1] == outputs[2]
    torch_scores, onnx_scores = kept_scores(tmp_path / "torch"), kept_scores(tmp_path / "onnx-1")
    assert set(onnx_scores) == set(torch_scores) and len(onnx_scores) == 15  # annotate: all
    for key, score in onnx_scores.items():
        assert score == pytest.approx(torch_scores[key], abs=1e-6)
        assert (score > 0.5) == (key in RED)


def test_images_become_the_models_input_as_described():
    image = Image.new("RGB", (4, 2))
    image.paste((255, 0, 0), (0, 0, 2, 2))  # left half red, right half blue
    image.paste((0, 0, 255), (2, 0, 4, 2))
    plain = SafetySpec(size=2, unsafe=0, resize="squash").pixels(image)
    assert plain.shape == (3, 2, 2) and plain.dtype == np.float32
    crop = SafetySpec(size=2, unsafe=0).pixels(image)  # the centred 2x2: red, then blue
    assert crop[:, 0, 0].tolist() == [1.0, 0.0, 0.0] and crop[:, 0, 1].tolist() == [0, 0, 1.0]
    spec = SafetySpec(size=[2, 2], unsafe=0, channels="BGR", layout="NHWC",
                      scale=1.0, mean=[10, 20, 30], std=[2, 4, 5])  # fmt: skip
    bgr = spec.pixels(image)
    assert bgr.shape == (2, 2, 3)
    assert bgr[0, 0].tolist() == [(0 - 10) / 2, (0 - 20) / 4, (255 - 30) / 5]  # B, G, R


def test_scores_read_the_described_columns_after_the_activation():
    logits = np.array([[0.0, 0.0, 2.0], [1.0, 3.0, -1.0]])
    softmax = SafetySpec(size=1, unsafe=[1, 2], activation="softmax").scores(logits)
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert softmax == pytest.approx(expected[:, 1:].sum(axis=1))
    sigmoid = SafetySpec(size=1, unsafe=0, activation="sigmoid").scores(np.array([0.0, 2.0]))
    assert sigmoid == pytest.approx([0.5, 1 / (1 + np.exp(-2))])


def one_line_error(options: dict) -> str:
    with pytest.raises(ConfigError) as caught:
        build_stage("image_safety", options)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_missing_corrupt_or_misdescribed_model_is_one_clear_line(torchscript_model, tmp_path):
    missing = tmp_path / "gone.pt"
    (tmp_path / "gone.yaml").write_text(SPEC)
    assert one_line_error({"model": str(missing)}) == (
        f"image safety model {missing}: file not found"
    )
    corrupt = tmp_path / "gone.pt"
    corrupt.write_bytes(torchscript_model.read_bytes()[:200])
    assert "torch cannot load it as TorchScript" in one_line_error({"model": str(corrupt)})

    alone = tmp_path / "alone.pt"
    alone.write_bytes(torchscript_model.read_bytes())
    message = one_line_error({"model": str(alone)})
    assert "no description beside it (alone.yaml, alone.yml, alone.json)" in message

    model = str(torchscript_model)
    message = one_line_error({"model": model, "spec": {"size": 32, "unsafe": 5}})
    assert "output 0 has shape [2, 2] for 2 images" in message and "column(s) [5]" in message
    message = one_line_error({"model": model, "spec": {"size": 32, "unsafe": 1, "output": 1}})
    assert "it has 1 output(s); its description reads output 1" in message
    linear = tmp_path / "linear.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        layers = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 2))
        torch.jit.script(layers).save(str(linear))
    message = one_line_error({"model": str(linear), "spec": {"size": 16, "unsafe": 1}})
    assert "fails on a batch of 2 blank 3x16x16 inputs (RuntimeError: " in message
    message = one_line_error({"model": model, "spec": {"size": 32, "unsafe": 1, "mean": 3}})
    assert "the stage's spec: mean:" in message
    bad = tmp_path / "bad.yaml"
    bad.write_text("size: 32\nunsafe: 1\ncolour: RGB\n")
    assert f"{bad}: colour: unknown field" in one_line_error({"model": model, "spec": str(bad)})
    assert "mode filter needs a threshold" in one_line_error({"model": model, "mode": "filter"})
    assert "unknown format" in one_line_error({"model": str(tmp_path / "gone.yaml")})


def test_a_corrupt_onnx_file_is_one_clear_line(tmp_path):
    pytest.importorskip("onnxruntime")
    model = tmp_path / "broken.onnx"
    model.write_bytes(b"\x08\x07not a protobuf at all" * 10)
    (tmp_path / "broken.json").write_text(json.dumps({"size": 8, "unsafe": 0}))
    assert "onnxruntime cannot load it" in one_line_error({"model": str(model)})


def test_a_score_that_is_not_a_number_is_a_stage_error(torchscript_model):
    stage = build_stage("image_safety", {"model": str(torchscript_model)})
    with pytest.raises(ValueError, match="doc: the safety model scored the image nan"):
        stage._judge(Document("doc", "", "web"), float("nan"))


def test_an_onnx_model_with_a_fixed_batch_size_scores_any_number_of_images(
    torchscript_model, tmp_path
):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    fixed = tmp_path / "fixed.onnx"  # exported for batches of exactly 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(Redness(), (torch.zeros(2, 3, 32, 32),), str(fixed), dynamo=False)
    (tmp_path / "fixed.yaml").write_text(SPEC)
    docs = [Document(f"d{n}", "", "web", media={"png": photo(n, n == 1)}) for n in range(3)]
    stage = build_stage("image_safety", {"model": str(fixed)})
    assert stage._model.fixed_batch == 2  # 3 images: a batch of 2, then 1 and a blank one
    onnx = stage.apply_batch(docs)
    torchscript = build_stage("image_safety", {"model": str(torchscript_model)})
    expected = torchscript.apply_batch([Document(d.id, "", "web", media=d.media) for d in docs])
    for got, want in zip(onnx, expected, strict=True):
        assert got.metadata["unsafe_score"] == pytest.approx(
            want.metadata["unsafe_score"], abs=1e-6
        )
    assert [d.metadata["unsafe_score"] > 0.5 for d in onnx] == [False, True, False]


def test_without_onnxruntime_the_stage_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    model = tmp_path / "any.onnx"
    model.write_bytes(b"not loaded")
    (tmp_path / "any.yaml").write_text(SPEC)
    message = one_line_error({"model": str(model)})
    assert message.endswith("pip install 'mixplane[onnx]'")


def test_the_docs_pipeline_and_description_run_as_written(shards, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    images_md = Path(__file__).parent.parent / "docs" / "images.md"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "raw").symlink_to(shards)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(Redness(), (torch.zeros(1, 3, 224, 224),), "models/nsfw.onnx",
                          dynamo=False, dynamic_axes={"pixels": {0: "batch"}},
                          input_names=["pixels"])  # fmt: skip
    (tmp_path / "models" / "nsfw.yaml").write_text(
        readme_block("yaml", "# models/nsfw.yaml", images_md)
    )
    config = yaml.safe_load(readme_block("yaml", "image_safety: {model:", images_md))
    result = run_pipeline(config)
    assert (result.stats["kept"], result.stats["excluded"]) == (9, 7)
    reasons = excluded(tmp_path / "clean-images")
    assert {key for key, (reason, _) in reasons.items() if reason == "unsafe_image"} == RED
