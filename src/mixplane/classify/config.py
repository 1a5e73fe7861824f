"""How to train a classifier: one model shared by YAML files, the CLI and the Python API.

Example (YAML, as `mixplane classifier train quality.yaml` reads it):

    output: models/quality
    catalog: catalog.duckdb
    positive: "source = 'wiki'"          # a catalog predicate, since a catalog is given
    negative: "source = 'web'"
    max_per_class: 200000
    seed: 0

Without `catalog`, `positive` and `negative` are paths (files, globs or folders), or
`{paths: [...]}`; with it, predicates, or `{where: ..., datasets: [...]}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mixplane.configs import read_yaml_overridden, validate_config
from mixplane.errors import ConfigError


class ClassData(BaseModel):
    """Where one class's examples come from: a catalog query, or document files."""

    model_config = ConfigDict(extra="forbid")

    where: str | None = Field(None, description="catalog predicate selecting the documents")
    datasets: list[str] | None = Field(None, description="catalog datasets (NAME or NAME@N)")
    paths: list[str] | None = Field(
        None, description="JSON Lines / Parquet files, globs or folders (e.g. a process output)"
    )

    @model_validator(mode="after")
    def _one_source(self) -> ClassData:
        if (self.where is None) == (self.paths is None):
            raise ValueError("give either where (a catalog query) or paths (files)")
        if self.datasets is not None and self.where is None:
            raise ValueError("datasets goes with where (a catalog query)")
        return self


class TrainConfig(BaseModel):
    """A fastText quality classifier: its data, how it is sampled, and fastText's settings.

    Word bigrams as in DCLM; the other fastText settings are fastText's own defaults for
    supervised training. `threads: 1` (the default) makes training deterministic: the same
    data, config and seed give a byte-identical model file. More threads train faster but
    race on the shared weights, so the model then differs from run to run.
    """

    model_config = ConfigDict(extra="forbid")

    output: str = Field(description="the model folder to create (must not exist yet)")
    positive: ClassData = Field(description="the examples to score high")
    negative: ClassData = Field(description="the examples to score low")
    catalog: str | None = Field(None, description="catalog file the queries run against")
    text_key: str = Field("text", description="field holding the text in JSON Lines / Parquet")
    positive_label: str = Field("hq", pattern=r"^\S+$", description="the positive class's label")
    negative_label: str = Field("lq", pattern=r"^\S+$", description="the negative class's label")
    max_per_class: int | None = Field(
        None, ge=1, description="examples per class at most (default: all the smaller has)"
    )
    holdout: float = Field(0.1, ge=0.0, lt=1.0, description="share of each class held out")
    seed: int = Field(0, ge=0, description="seeds sampling, the split and fastText")
    lowercase: bool = Field(True, description="lowercase texts before fastText sees them")
    epoch: int = Field(5, ge=1)
    lr: float = Field(0.1, gt=0.0)
    dim: int = Field(100, ge=1)
    word_ngrams: int = Field(2, ge=1)
    min_count: int = Field(1, ge=1)
    bucket: int = Field(2_000_000, ge=1, description="hash buckets for word n-grams")
    threads: int = Field(1, ge=1, description="1 keeps training deterministic")
    storage_options: dict[str, Any] = Field(default_factory=dict, description="fsspec options")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """A bare string is a predicate when a catalog is given, else a path."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key in ("positive", "negative"):
            value = data.get(key)
            if isinstance(value, str):
                data[key] = {"where": value} if data.get("catalog") else {"paths": [value]}
            elif isinstance(value, list):
                data[key] = {"paths": value}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> TrainConfig:
        if self.positive_label == self.negative_label:
            raise ValueError("positive_label and negative_label must differ")
        for name, data in (("positive", self.positive), ("negative", self.negative)):
            if data.where is not None and self.catalog is None:
                raise ValueError(f"{name} is a catalog query; give the catalog too")
        return self

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> TrainConfig:
        """Load a YAML file; `overrides` that are not None win over the file."""
        data = read_yaml_overridden(path, "output, positive and negative", overrides)
        return cls.parse(data, where=str(path))

    @classmethod
    def parse(cls, data: dict[str, Any], where: str = "classifier config") -> TrainConfig:
        """Validate a dict, turning pydantic's report into one readable line."""
        return validate_config(cls, data, where)


def as_config(config: TrainConfig | dict[str, Any] | str | Path, **overrides: Any) -> TrainConfig:
    """A TrainConfig from a config, a dict or a YAML path, with `overrides` applied."""
    if isinstance(config, TrainConfig):
        data = config.model_dump()
    elif isinstance(config, dict):
        data = dict(config)
    elif isinstance(config, str | Path):
        return TrainConfig.from_yaml(config, **overrides)
    else:
        raise ConfigError(f"expected a TrainConfig, a dict or a YAML path, got {type(config)}")
    data.update({key: value for key, value in overrides.items() if value is not None})
    return TrainConfig.parse(data)
