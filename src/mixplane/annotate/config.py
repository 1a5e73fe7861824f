"""What to annotate and how: one model shared by the CLI and the Python API.

Example (what `mixplane annotate web@1 --classifier models/quality --as quality` builds):

    >>> config = AnnotateConfig.parse(
    ...     {"dataset": "web@1", "classifier": "models/quality", "as": "quality"})
    >>> config.column, config.text, config.catalog
    ('quality', 'auto', 'catalog.duckdb')
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from mixplane.configs import validate_config

TEXT_SOURCES = ("auto", "parts", "tokens")


class AnnotateConfig(BaseModel):
    """Score every document of a registered version with a classifier and register the
    scores as a new version's column; the documents and token files stay where they are."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    dataset: str = Field(description="the version to annotate: NAME@N, or NAME for the latest")
    classifier: str = Field(description="the model folder (`mixplane classifier train/import`)")
    column: str = Field(
        validation_alias=AliasChoices("as", "column"),
        description="the new property's name (option `as` or `column`)",
    )
    label: str | None = Field(
        None, description="the label whose probability is the score; default: the positive one"
    )
    catalog: str = Field("catalog.duckdb", description="the catalog file holding the dataset")
    output: str | None = Field(
        None,
        description="folder for the column's files; default: _columns/COLUMN-HASH inside "
        "the dataset's folder",
    )
    text: Literal["auto", "parts", "tokens"] = Field(
        "auto",
        description="where the documents' text comes from: the files the version was "
        "tokenized from (parts), its tokens decoded (tokens), or parts when they are "
        "still there and unchanged, else tokens (auto)",
    )
    batch_size: int = Field(1024, ge=1, description="documents per classifier call")
    workers: int = Field(1, ge=1, description="tasks scored side by side (processes)")
    storage_options: dict[str, Any] = Field(default_factory=dict, description="fsspec options")

    @classmethod
    def parse(cls, data: dict[str, Any], where: str = "annotate options") -> AnnotateConfig:
        """Validate a dict, turning pydantic's report into one readable line."""
        return validate_config(cls, data, where)
