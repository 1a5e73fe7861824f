"""Property columns added to a registered version without rewriting it (`mixplane annotate`).

A version may carry columns beside its shards' metadata: each is a folder holding one
Parquet file per shard, `STEM.parquet`, with that one column and one row per document in the
shard's order. A query joins it to the shard metadata by shard and row, the way the catalog
numbers documents, so the version's token and metadata files are those of the version it was
made from: referenced, never copied. The registry keeps the columns in the version's stored
manifest (`added_columns`), so catalogs written before them read unchanged.

Example:
    >>> column = AddedColumn.from_json({"name": "quality", "type": "DOUBLE",
    ...     "folder": "/data/tok/_columns/quality-0f1e", "from": "web@1",
    ...     "files": [{"path": "shard-00000-000.parquet", "size": 812, "hash": "xxh3_128:00"}]})
    >>> column.urls(["shard-00000-000"])
    ['/data/tok/_columns/quality-0f1e/shard-00000-000.parquet']
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
import xxhash

from mixplane.catalog.dataset import FolderScan
from mixplane.errors import ConfigError, MixplaneError
from mixplane.io.atomic import join_url

if TYPE_CHECKING:
    from mixplane.catalog.registry import DatasetVersion

ADDED_KEY = "added_columns"  # where a version's stored manifest lists them
COLUMN_SUFFIX = ".parquet"
COLUMN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
# Columns every version has, or the catalog uses internally: never a new column's name.
RESERVED = ("id", "text", "source", "n_tokens")
INTERNAL_PREFIX = "__mixplane"


@dataclass(frozen=True)
class ColumnFile:
    """One shard's file of an added column, as registered."""

    path: str  # relative to the column's folder
    size: int
    hash: str
    records: int | None = None

    def to_json(self) -> dict[str, Any]:
        entry = {"path": self.path, "size": self.size, "hash": self.hash}
        return entry | ({"records": self.records} if self.records is not None else {})


@dataclass(frozen=True)
class AddedColumn:
    """A column a version has beyond its shards' metadata: where its files are and where it
    came from (`source`: the version it was added to; `made_by`: what computed it)."""

    name: str
    kind: str  # DuckDB type of the values
    folder: str
    files: tuple[ColumnFile, ...]
    source: str
    made_by: dict[str, Any] = field(default_factory=dict)

    def urls(self, stems: list[str] | tuple[str, ...]) -> list[str]:
        """The column's file of each shard `stems` (the version's shards, in order)."""
        return [join_url(self.folder, stem + COLUMN_SUFFIX) for stem in stems]

    def describe(self) -> dict[str, Any]:
        """Where the column is and where it came from, without its list of files."""
        return {k: v for k, v in self.to_json().items() if k != "files"}

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.kind,
            "folder": self.folder,
            "from": self.source,
            "made_by": self.made_by,
            "files": [entry.to_json() for entry in self.files],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AddedColumn:
        files = tuple(
            ColumnFile(str(f["path"]), int(f["size"]), str(f["hash"]), f.get("records"))
            for f in data.get("files") or []
        )
        return cls(
            str(data["name"]),
            str(data["type"]),
            str(data["folder"]),
            files,
            str(data.get("from", "")),
            dict(data.get("made_by") or {}),
        )


def added_columns(manifest: dict[str, Any] | str | None) -> tuple[AddedColumn, ...]:
    """The added columns a version's stored manifest lists (the manifest, or its JSON text
    for just that key), oldest first."""
    if isinstance(manifest, str):
        entries = orjson.loads(manifest)
    else:
        entries = (manifest or {}).get(ADDED_KEY)
    return tuple(AddedColumn.from_json(entry) for entry in entries or [])


def check_new_column(name: str, existing: dict[str, str], where: str) -> None:
    """Refuse a new column's name that is not a plain identifier, is reserved, or is taken
    (DuckDB matches names case-insensitively).

    Example:
        >>> check_new_column("n_tokens", {"id": "VARCHAR"}, "web@1")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        mixplane.errors.ConfigError: web@1: 'n_tokens' is a reserved column (...); ...
    """
    if not COLUMN_NAME.match(name) or name.lower().startswith(INTERNAL_PREFIX):
        raise ConfigError(
            f"{where}: {name!r} is not a column name; use letters, digits and '_', starting "
            "with a letter or '_' (up to 63 characters), e.g. quality"
        )
    if name.lower() in RESERVED:
        raise ConfigError(
            f"{where}: {name!r} is a reserved column ({', '.join(RESERVED)}); choose another "
            "name with --as"
        )
    taken = {column.lower(): column for column in existing}
    if name.lower() in taken:
        raise ConfigError(
            f"{where} already has a column {taken[name.lower()]!r}; choose another name with "
            "--as, or annotate an earlier version that lacks it"
        )


def annotated_fingerprint(source_fingerprint: str, column: AddedColumn) -> str:
    """What a version made by adding `column` to a source version is: the source's data (its
    fingerprint) and the column's files."""
    content = {
        "source": source_fingerprint,
        "column": [column.name, column.kind, [f.hash for f in column.files]],
    }
    digest = xxhash.xxh3_128(orjson.dumps(content, option=orjson.OPT_SORT_KEYS))
    return f"xxh3_128:{digest.hexdigest()}"


def with_column(
    source: DatasetVersion, manifest: dict[str, Any], column: AddedColumn
) -> FolderScan:
    """What registering `source` with `column` added records: the same shards, folder and
    tokenizer, the schema with the column, the stored manifest listing it (`manifest`:
    `source`'s), and a fingerprint of both. Refuses a column whose files do not hold one row
    per document of each shard."""
    check_new_column(column.name, source.schema, source.ref)
    if len(column.files) != len(source.shards):
        raise MixplaneError(
            f"column {column.name!r} has {len(column.files)} files for the "
            f"{len(source.shards)} shards of {source.ref}"
        )
    for shard, entry in zip(source.shards, column.files, strict=True):
        if entry.path != shard.stem + COLUMN_SUFFIX or entry.records != shard.documents:
            raise MixplaneError(
                f"{column.folder}: {entry.path} holds {entry.records} rows where shard "
                f"{shard.stem} of {source.ref} has {shard.documents} documents"
            )
    listed = [*(manifest.get(ADDED_KEY) or []), column.to_json()]
    return FolderScan(
        uri=source.uri,
        manifest={**manifest, ADDED_KEY: listed},
        shards=source.shards,
        schema={**source.schema, column.name: column.kind},
        fingerprint=annotated_fingerprint(source.fingerprint, column),
        uniform=source.uniform,
    )
