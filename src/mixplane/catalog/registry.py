"""The registry: datasets and their immutable versions, kept in a DuckDB file.

Rows are only ever inserted. A version records where its shards are, the tokenizer, the
schema of its properties, and per shard the document and token counts; registering changed
data adds version N+1, and registering the same data again returns the version it already has.

Example:
    >>> with Registry("catalog.duckdb") as registry:  # doctest: +SKIP
    ...     version = registry.add(scan, "web")
    >>> version.ref  # doctest: +SKIP
    'web@1'
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson

from mixplane.catalog.columns import ADDED_KEY, AddedColumn, added_columns
from mixplane.catalog.dataset import META_SUFFIX, TOKENS, FolderScan, Shard, dataset_kind
from mixplane.errors import MixplaneError
from mixplane.io.atomic import join_url
from mixplane.refs import NAME, NAME_RULE, parse_ref
from mixplane.store.format import MASKED_FORMAT_VERSION

REGISTRY_FORMAT = 1
_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS catalog_info (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE IF NOT EXISTS versions (
        name VARCHAR, version INTEGER, uri VARCHAR, fingerprint VARCHAR,
        documents BIGINT, tokens BIGINT, tokenizer VARCHAR, schema VARCHAR,
        manifest VARCHAR, registered_at TIMESTAMP, uniform BOOLEAN,
        PRIMARY KEY (name, version))""",
    """CREATE TABLE IF NOT EXISTS shards (
        name VARCHAR, version INTEGER, position INTEGER, stem VARCHAR,
        documents BIGINT, tokens BIGINT, meta_size BIGINT,
        PRIMARY KEY (name, version, position))""",
]


@dataclass(frozen=True)
class DatasetVersion:
    """One registered version of a dataset."""

    name: str
    version: int
    uri: str
    fingerprint: str
    documents: int
    tokens: int
    tokenizer: dict[str, Any]
    schema: dict[str, str]
    shards: tuple[Shard, ...]
    registered_at: str
    uniform: bool = False  # all shards share one schema (queries skip merging by name)
    # `tokens` (token shards) or `image_text` (image shards, documents hold no tokens);
    # read from the stored manifest, so catalogs written before image data need no change.
    kind: str = TOKENS
    # Columns added beside the shards' metadata (`mixplane annotate`), oldest first.
    added: tuple[AddedColumn, ...] = ()
    # Fine-tuning data: its shards carry loss masks (token format version 2).
    masks: bool = False

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def stems(self) -> list[str]:
        return [shard.stem for shard in self.shards]

    def meta_urls(self) -> list[str]:
        """The metadata Parquet of every shard, in shard order."""
        return [join_url(self.uri, stem + META_SUFFIX) for stem in self.stems]

    def added_sources(self) -> list[tuple[str, list[str]]]:
        """Each added column's name and its files, one per shard in shard order."""
        return [(column.name, column.urls(self.stems)) for column in self.added]

    @property
    def lineage_root(self) -> str:
        """The folder whose manifest starts this version's lineage: the newest added
        column's (whose parents lead back through the others to the shards'), else the
        shards' folder."""
        return self.added[-1].folder if self.added else self.uri

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly description (without the shard list)."""
        return {
            "dataset": self.ref,
            "name": self.name,
            "version": self.version,
            "uri": self.uri,
            "documents": self.documents,
            "tokens": self.tokens,
            "kind": self.kind,
            "masks": self.masks,
            "shards": len(self.shards),
            "tokenizer": self.tokenizer,
            "columns": {name: readable_type(kind) for name, kind in self.schema.items()},
            "added_columns": [column.describe() for column in self.added],
            "fingerprint": self.fingerprint,
            "registered_at": self.registered_at,
        }


def readable_type(kind: str) -> str:
    """A column's type as users read it: a column whose files declare no type because it
    holds no value anywhere (Parquet's null type) reads as 'null (no values)'.

    Example:
        >>> readable_type('"NULL"'), readable_type("VARCHAR[]")
        ('null (no values)', 'VARCHAR[]')
    """
    return "null (no values)" if is_null_type(kind) else kind


def is_null_type(kind: str) -> bool:
    """Whether `kind` is Parquet's null type: the column holds no value and declares no type."""
    return kind.strip('"').upper() == "NULL"


class Registry:
    """Access to a catalog file. Writes hold DuckDB's file lock only while registering."""

    def __init__(self, path: str | os.PathLike, writable: bool = False):
        self.path = os.fspath(path)
        if not writable and not os.path.exists(self.path):
            raise MixplaneError(
                f"no catalog at {self.path}; create it with `mixplane catalog register`"
            )
        try:
            self.connection = duckdb.connect(self.path, read_only=not writable)
        except duckdb.Error as error:
            raise MixplaneError(f"cannot open catalog {self.path}: {error}") from error
        if writable:
            for statement in _SCHEMA:
                self.connection.execute(statement)
            self.connection.execute(
                "INSERT OR IGNORE INTO catalog_info VALUES ('format', ?)", [str(REGISTRY_FORMAT)]
            )
        self._check_format()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    def add(self, scan: FolderScan, name: str) -> tuple[DatasetVersion, bool]:
        """Record `scan` as the next version of `name`; `(version, created)`.

        Same fingerprint and location as the latest version: nothing is written and that
        version comes back with `created=False`.
        """
        with self.transaction():
            return self.add_next(scan, name)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything written inside is committed together, or not at all."""
        self.connection.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    def add_next(
        self, scan: FolderScan, name: str, after: int | None = None
    ) -> tuple[DatasetVersion, bool]:
        """`add` inside the caller's `transaction`; with `after`, refuses unless the latest
        version is that one (a version made from it must not hide one registered since)."""
        if not NAME.match(name):
            raise MixplaneError(f"bad dataset name {name!r}: {NAME_RULE} (max 128 characters)")
        latest = self.connection.execute(
            "SELECT version, fingerprint, uri FROM versions WHERE name = ? "
            "ORDER BY version DESC LIMIT 1",
            [name],
        ).fetchone()
        if after is not None and (latest is None or latest[0] != after):
            raise MixplaneError(
                f"{name}@{latest and latest[0]} was registered while {name}@{after} was being "
                "changed; run the command again"
            )
        if latest and latest[1] == scan.fingerprint and latest[2] == scan.uri:
            return self.get(name, latest[0]), False
        number = latest[0] + 1 if latest else 1
        self._insert(scan, name, number)
        return self.get(name, number), True

    def _insert(self, scan: FolderScan, name: str, number: int) -> None:
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
        self.connection.execute(
            "INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                name,
                number,
                scan.uri,
                scan.fingerprint,
                scan.documents,
                scan.tokens,
                _json(scan.manifest.get("tokenizer") or {}),
                _json(scan.schema),
                _json(scan.manifest),
                now,
                scan.uniform,
            ],
        )
        rows = [
            (name, number, position, shard.stem, shard.documents, shard.tokens, shard.meta_size)
            for position, shard in enumerate(scan.shards)
        ]
        self.connection.executemany("INSERT INTO shards VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def get(self, name: str, version: int | None = None) -> DatasetVersion:
        """A version of `name` (the latest when `version` is None)."""
        query = (
            "SELECT name, version, uri, fingerprint, documents, tokens, tokenizer, schema, "
            "strftime(registered_at, '%Y-%m-%dT%H:%M:%SZ'), uniform, "
            "json_extract_string(manifest, '$.kind'), "
            "json_extract_string(manifest, '$.config.output_format'), "
            f"json_extract(manifest, '$.{ADDED_KEY}'), "
            "json_extract_string(manifest, '$.format.version'), "
            "json_extract_string(manifest, '$.config.output_media') FROM versions WHERE name = ?"
        )
        if version is None:
            row = self.connection.execute(
                query + " ORDER BY version DESC LIMIT 1", [name]
            ).fetchone()
        else:
            row = self.connection.execute(query + " AND version = ?", [name, version]).fetchone()
        if row is None:
            raise MixplaneError(self._unknown_message(name, version))
        shards = self.connection.execute(
            "SELECT stem, documents, tokens, meta_size FROM shards "
            "WHERE name = ? AND version = ? ORDER BY position",
            [row[0], row[1]],
        ).fetchall()
        return DatasetVersion(
            name=row[0],
            version=row[1],
            uri=row[2],
            fingerprint=row[3],
            documents=row[4],
            tokens=row[5],
            tokenizer=orjson.loads(row[6]),
            schema=orjson.loads(row[7]),
            shards=tuple(Shard(*shard) for shard in shards),
            registered_at=row[8],
            uniform=bool(row[9]),
            kind=dataset_kind(
                {"kind": row[10], "config": {"output_format": row[11], "output_media": row[14]}}
            ),
            added=added_columns(row[12]) if row[12] else (),
            masks=row[13] == str(MASKED_FORMAT_VERSION),
        )

    def resolve(self, ref: str) -> DatasetVersion:
        """`name` (latest version) or `name@N`."""
        return self.get(*parse_ref(ref))

    def versions(self) -> list[tuple[str, int]]:
        """Every `(name, version)`, by name then version."""
        return self.connection.execute(
            "SELECT name, version FROM versions ORDER BY name, version"
        ).fetchall()

    def latest(self) -> list[DatasetVersion]:
        """The latest version of every dataset, by name."""
        rows = self.connection.execute(
            "SELECT name, max(version) FROM versions GROUP BY name ORDER BY name"
        ).fetchall()
        return [self.get(name, version) for name, version in rows]

    def manifest(self, name: str, version: int) -> dict[str, Any]:
        """The manifest `name@version` was registered with. Safe from any thread (it reads
        on a cursor of its own)."""
        cursor = self.connection.cursor()
        try:
            row = cursor.execute(
                "SELECT manifest FROM versions WHERE name = ? AND version = ?", [name, version]
            ).fetchone()
        finally:
            cursor.close()
        if row is None:
            raise MixplaneError(self._unknown_message(name, version))
        return orjson.loads(row[0])

    def _unknown_message(self, name: str, version: int | None) -> str:
        known = self.connection.execute(
            "SELECT DISTINCT name FROM versions ORDER BY name"
        ).fetchall()
        names = ", ".join(row[0] for row in known) or "none yet"
        if version is not None and any(row[0] == name for row in known):
            numbers = self.connection.execute(
                "SELECT version FROM versions WHERE name = ? ORDER BY version", [name]
            ).fetchall()
            listed = ", ".join(f"{name}@{row[0]}" for row in numbers)
            return (
                f"dataset {name} has no version {version}; its versions: {listed} "
                "(see `mixplane catalog list`)"
            )
        return f"no dataset named {name!r} in {self.path}; registered: {names}"

    def _check_format(self) -> None:
        try:
            row = self.connection.execute(
                "SELECT value FROM catalog_info WHERE key = 'format'"
            ).fetchone()
        except duckdb.CatalogException as error:
            raise MixplaneError(f"{self.path} is not a mixplane catalog") from error
        if row is None or int(row[0]) > REGISTRY_FORMAT:
            raise MixplaneError(
                f"{self.path}: catalog format {row and row[0]} is newer than this mixplane reads"
            )


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()
