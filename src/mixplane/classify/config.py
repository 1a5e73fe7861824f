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
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mixplane.configs import read_yaml_overridden, validate_config


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


class TrainCommon(BaseModel):
    """What every classifier's training config shares: where the model goes, where the data
    comes from, and how it is sampled and held out. Kind-specific configs extend it."""

    model_config = ConfigDict(extra="forbid")

    #: Keys holding a data selection: a bare string is a predicate or a path (see `_shorthand`).
    data_keys: ClassVar[tuple[str, ...]] = ("positive", "negative")

    output: str = Field(description="the model folder to create (must not exist yet)")
    catalog: str | None = Field(None, description="catalog file the queries run against")
    text_key: str = Field("text", description="field holding the text in JSON Lines / Parquet")
    holdout: float = Field(0.1, ge=0.0, lt=1.0, description="share held out for metrics")
    seed: int = Field(0, ge=0, description="seeds sampling, the split and training")
    storage_options: dict[str, Any] = Field(default_factory=dict, description="fsspec options")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """A bare string is a predicate when a catalog is given, else a path."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key in cls.data_keys:
            value = data.get(key)
            if isinstance(value, str):
                data[key] = {"where": value} if data.get("catalog") else {"paths": [value]}
            elif isinstance(value, list):
                data[key] = {"paths": value}
        return data

    def check_catalog(self) -> None:
        """Every catalog query needs the catalog."""
        for name in self.data_keys:
            data = getattr(self, name)
            if data is not None and data.where is not None and self.catalog is None:
                raise ValueError(f"{name} is a catalog query; give the catalog too")

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> Self:
        """Load a YAML file; `overrides` that are not None win over the file."""
        data = read_yaml_overridden(path, "output and the training data", overrides)
        return cls.parse(data, where=str(path))

    @classmethod
    def parse(cls, data: dict[str, Any], where: str = "classifier config") -> Self:
        """Validate a dict, turning pydantic's report into one readable line."""
        return validate_config(cls, data, where)


class TrainConfig(TrainCommon):
    """A fastText quality classifier: its data, how it is sampled, and fastText's settings.

    Word bigrams as in DCLM; the other fastText settings are fastText's own defaults for
    supervised training. `threads: 1` (the default) makes training deterministic: the same
    data, config and seed give a byte-identical model file. More threads train faster but
    race on the shared weights, so the model then differs from run to run.
    """

    kind: Literal["fasttext"] = Field("fasttext", description="the model: fastText")
    positive: ClassData = Field(description="the examples to score high")
    negative: ClassData = Field(description="the examples to score low")
    positive_label: str = Field("hq", pattern=r"^\S+$", description="the positive class's label")
    negative_label: str = Field("lq", pattern=r"^\S+$", description="the negative class's label")
    max_per_class: int | None = Field(
        None, ge=1, description="examples per class at most (default: all the smaller has)"
    )
    lowercase: bool = Field(True, description="lowercase texts before fastText sees them")
    epoch: int = Field(5, ge=1)
    lr: float = Field(0.1, gt=0.0)
    dim: int = Field(100, ge=1)
    word_ngrams: int = Field(2, ge=1)
    min_count: int = Field(1, ge=1)
    bucket: int = Field(2_000_000, ge=1, description="hash buckets for word n-grams")
    threads: int = Field(1, ge=1, description="1 keeps training deterministic")

    @model_validator(mode="after")
    def _consistent(self) -> TrainConfig:
        if self.positive_label == self.negative_label:
            raise ValueError("positive_label and negative_label must differ")
        self.check_catalog()
        return self
