"""The pipeline configuration: one model shared by YAML files, the CLI and the Python API.

Example:
    >>> config = PipelineConfig.model_validate(
    ...     {"input": "raw/*.jsonl", "output": "clean/", "stages": [{"normalize": {}}]}
    ... )  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from mixplane.configs import read_yaml_overridden, validate_config
from mixplane.errors import ConfigError
from mixplane.io.readers.base import MAX_RECORD_BYTES
from mixplane.stages.base import SourceScoped, Stage
from mixplane.stages.build import build_stage
from mixplane.stages.global_stage import GlobalStage


class InputConfig(BaseModel):
    """One input: a URL pattern (braces and globs allowed) and how to read its records."""

    model_config = ConfigDict(extra="forbid")

    path: str | list[str] | None = Field(
        None, description="URL, glob or brace pattern (or a list of them)"
    )
    paths: str | None = Field(
        None,
        description="instead of path: a file listing input files, one a line (plain or gzip, "
        "as Common Crawl's warc.paths.gz); each listed file is one task",
    )
    base: str | None = Field(
        None,
        description="prefix joined to the relative entries of 'paths' "
        "(for Common Crawl: https://data.commoncrawl.org/ or s3://commoncrawl/)",
    )
    format: str = Field(
        "auto",
        description="jsonl, parquet, text, html, warc (WARC and WET), hf_disk, webdataset, "
        "image_folder, audio_folder or auto",
    )
    text_key: str = Field("text", description="field holding the document text (or caption)")
    id_key: str = Field("id", description="field holding the document id")
    source: str | None = Field(None, description="source name; default: the file's folder name")
    image_key: str | None = Field(
        None, description="field holding image bytes (raw in Parquet, base64 in JSON Lines)"
    )
    audio_key: str | None = Field(
        None,
        description="field holding an audio clip: bytes, a path (relative to the file's "
        "folder) or a {bytes, path} struct as Hugging Face datasets store audio",
    )
    url_key: str | None = Field(
        None, description="field holding an image URL (the fetch_images stage downloads it)"
    )
    license: str | None = Field(
        None,
        description="the licence of every record of this input (CC-BY-4.0...): kept as the "
        "declared_license field, which the license stage reads first",
    )

    @model_validator(mode="after")
    def _one_source(self) -> InputConfig:
        if (self.path is None) == (self.paths is None):
            raise ValueError("set one of 'path' (files or patterns) and 'paths' (a list file)")
        if self.base is not None and self.paths is None:
            raise ValueError("'base' resolves the entries of 'paths'; it needs 'paths'")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_lists(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        # Inputs written before 'paths' (or 'license') existed keep their outputs hash.
        data = handler(self)
        for key in ("path", "paths", "base", "license"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

    def patterns(self) -> list[str]:
        """The input's patterns, or for a `paths` input the list file."""
        if self.path is None:
            return [str(self.paths)]
        return [self.path] if isinstance(self.path, str) else list(self.path)


class StageConfig(BaseModel):
    """A stage by name (built-in) or import path, with its options.

    `sources` limits the stage to documents from those sources; others pass through
    untouched (in YAML: `- gopher_quality: {sources: [web, forum], min_doc_words: 50}`).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    options: dict[str, Any] = Field(default_factory=dict)
    sources: list[str] | None = None

    def build(self) -> Stage:
        """The stage instance; raises ConfigError for a bad name or option."""
        stage = build_stage(self.name, self.options)
        if self.sources is None:
            return stage
        if isinstance(stage, GlobalStage):
            raise ConfigError(f"stage {self.name!r} sees the whole corpus; it takes no 'sources'")
        return SourceScoped(inner=stage, sources=frozenset(self.sources))


class PipelineConfig(BaseModel):
    """What to read, which stages to run, where to write, and how to parallelise."""

    model_config = ConfigDict(extra="forbid")

    input: list[InputConfig]
    output: str = Field(description="output folder URL")
    stages: list[StageConfig] = Field(default_factory=list)
    output_format: Literal["parquet", "jsonl", "webdataset"] = Field(
        "parquet",
        description="parquet or jsonl documents, or webdataset: image-text or audio-text "
        "shards (tar + idx + meta.parquet, see docs/images-format.md)",
    )
    output_media: Literal["image", "audio"] = Field(
        "image",
        description="with output_format: webdataset, what each sample carries: an image "
        "(image-text shards) or an audio clip (audio-text shards)",
    )
    task_size_mb: float = Field(
        256.0, gt=0, description="split large files into tasks of this size"
    )
    max_record_bytes: int = Field(
        MAX_RECORD_BYTES,
        gt=0,
        description="records above this size are quarantined unread (32 MiB by default)",
    )
    workers: int = Field(1, ge=1, description="parallel tasks")
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = Field(None, description="existing Ray cluster; default: start one")
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options, e.g. {endpoint_url: ...} for S3"
    )
    allow_mostly_quarantined: bool = Field(
        False,
        description="finish without an error even when nearly every record of an input is "
        "quarantined for one reason (by default that fails the run, outputs written all the same)",
    )
    max_stage_errors: int = Field(
        0,
        ge=0,
        description="records a stage's code may raise on (each goes to _errors/ with its "
        "traceback) before the run fails, outputs written all the same",
    )

    # (the stages they were made for, the records): a model is hashed once per config.
    _records: tuple[bytes, list[dict[str, Any]]] | None = PrivateAttr(None)

    @field_validator("input", mode="before")
    @classmethod
    def _inputs(cls, value: Any) -> Any:
        items = value if isinstance(value, list) else [value]
        return [{"path": item} if isinstance(item, str) else item for item in items]

    @model_validator(mode="after")
    def _media_needs_shards(self) -> PipelineConfig:
        if self.output_media != "image" and self.output_format != "webdataset":
            raise ValueError(
                f"output_media: {self.output_media} writes media shards; set "
                "output_format: webdataset (or leave output_media out)"
            )
        return self

    @field_validator("stages", mode="before")
    @classmethod
    def _stages(cls, value: Any) -> Any:
        stages = []
        for item in value or []:
            if isinstance(item, str):
                stages.append({"name": item})
            elif isinstance(item, dict) and set(item) - {"name", "options"} and len(item) == 1:
                ((name, options),) = item.items()
                options = dict(options or {})
                sources = options.pop("sources", None)
                stages.append({"name": name, "options": options, "sources": sources})
            else:
                stages.append(item)
        return stages

    def outputs_hash(self) -> str:
        """Hash of everything that decides the outputs (not how many workers made them)."""
        decisive = self.model_dump(
            mode="json",
            exclude={
                "output",
                "workers",
                "executor",
                "ray_address",
                "storage_options",
                "allow_mostly_quarantined",
                "max_stage_errors",
            },
        )
        if self.output_media == "image":
            del decisive["output_media"]  # the default: runs from before it keep their hash
        provenance = [record for record in self.stage_records() if len(record) > 1]
        if provenance:  # only then, so pipelines whose stages record nothing keep their hash
            decisive["stage_provenance"] = provenance
        return hashlib.sha256(orjson.dumps(decisive, option=orjson.OPT_SORT_KEYS)).hexdigest()

    def stage_records(self) -> list[dict[str, Any]]:
        """Each stage's name and what it depends on beyond its options (an engine's library
        and version, a model's content hash), in pipeline order: the manifest's `stages`.

        Example:
            >>> config.stage_records()  # doctest: +SKIP
            [{'name': 'extract', 'engine': 'trafilatura', 'library': 'trafilatura', ...},
             {'name': 'classify', 'model': 'models/q', 'model_sha256': '9f...'}]
        """
        key = orjson.dumps([spec.model_dump(mode="json") for spec in self.stages])
        if self._records is None or self._records[0] != key:
            stages = [spec.build() for spec in self.stages]
            records = [{"name": stage.stage_name(), **stage.provenance()} for stage in stages]
            self._records = (key, records)
        return self._records[1]

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> PipelineConfig:
        """Load a YAML file; `overrides` (e.g. `workers=4`) win over the file."""
        data = read_yaml_overridden(path, "input, output and stages", overrides)
        return cls.parse(data, where=str(path))

    @classmethod
    def parse(cls, data: dict[str, Any], where: str = "config") -> PipelineConfig:
        """Validate a dict, turning pydantic's report into one readable line."""
        return validate_config(cls, data, where)
