"""Running a validated predicate over one dataset version and returning its ranges.

DuckDB scans the shards' metadata Parquet (only the columns the predicate reads, with row
groups skipped by their statistics) and streams back the shard and row number of each match
in Arrow batches; they are compressed into ranges batch by batch, so memory follows the number
of ranges, not of matching documents.

Example:
    >>> engine = open_engine(meta_urls(version))  # doctest: +SKIP
    >>> predicate = check_predicate("language = 'de'", version.schema, engine)  # doctest: +SKIP
    >>> part = select_version(engine, version, meta_urls(version), predicate, {})  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import duckdb

from mixplane.catalog.dataset import META_SUFFIX, list_folder, list_meta_files
from mixplane.catalog.engine import (
    ROW_COLUMN,
    SHARD_COLUMN,
    documents_view,
    engine_error,
    sandbox,
)
from mixplane.catalog.predicate import ValidPredicate
from mixplane.catalog.registry import DatasetVersion
from mixplane.catalog.selection import DatasetSelection, merge_runs, runs_of
from mixplane.errors import MixplaneError
from mixplane.io.columns import integers

BATCH_ROWS = 1 << 20


def meta_urls(version: DatasetVersion) -> list[str]:
    """The metadata Parquet of every shard of `version`, in shard order."""
    return version.meta_urls()


def added_urls(version: DatasetVersion) -> list[str]:
    """The files of every column added to `version` (none for most versions)."""
    return [url for _, urls in version.added_sources() for url in urls]


def open_engine(
    urls: list[str], storage_options: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """One sandboxed connection that may read the shard metadata files `urls` (of every
    version it will query, their added columns' files included)."""
    return sandbox(urls, storage_options)


def select_version(
    connection: duckdb.DuckDBPyConnection,
    version: DatasetVersion,
    urls: list[str],
    predicate: ValidPredicate,
    missing: dict[str, str],
    storage_options: dict[str, Any] | None = None,
) -> DatasetSelection:
    """The documents of `version` matching `predicate`, as ranges.

    `connection` comes from `open_engine` (or is a cursor of it); `urls` are the version's
    metadata files (`meta_urls`, or their local copies); the caller has checked the version
    unchanged (`check_unchanged`). `missing` maps columns this version lacks (but other
    queried versions have) to a type; they read as NULL here.
    """
    pieces = []
    try:
        connection.execute(
            "CREATE OR REPLACE TEMP VIEW documents AS "
            + documents_view(
                urls, version.schema, missing, not version.uniform, version.added_sources()
            )
        )
        relation = connection.sql(
            f"SELECT CAST({SHARD_COLUMN} AS INTEGER), CAST({ROW_COLUMN} AS BIGINT), "
            "CAST(coalesce(n_tokens, 0) AS BIGINT) FROM documents " + predicate.framed()
        )
        for batch in _arrow_batches(relation):
            shard, row, tokens = (integers(column) for column in batch.columns)
            pieces.append(runs_of(shard, row, tokens))
    except duckdb.Error as error:
        raise engine_error(error, f"query failed on {version.ref}") from error
    shard, start, end, tokens = merge_runs(pieces)
    return DatasetSelection.from_runs(
        version.ref,
        version.uri,
        [s.stem for s in version.shards],
        shard,
        start,
        end,
        tokens,
        version.documents,
        version.tokens,
        storage_options,
        tuple((column.name, column.folder) for column in version.added),
    )


def _arrow_batches(relation: duckdb.DuckDBPyRelation):
    """The relation's rows as Arrow record batches (the method's name differs by version)."""
    reader = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
    return reader(BATCH_ROWS)


def check_unchanged(version: DatasetVersion, storage_options: dict[str, Any] | None) -> None:
    """Refuse to query a version whose metadata files changed since it was registered.

    Versions are immutable: if the folder was rewritten, register it again (a new version)
    rather than letting an old version silently return different documents.
    """
    try:
        sizes = list_meta_files(version.uri, storage_options)
    except MixplaneError as error:
        raise MixplaneError(f"{version.ref}: its folder is gone ({error})") from error
    for shard in version.shards:
        size = sizes.get(shard.stem)
        if size != shard.meta_size:
            state = "is missing" if size is None else "changed"
            raise MixplaneError(
                f"{version.ref}: {shard.stem}{META_SUFFIX} in {version.uri} {state} since it "
                f"was registered; register the folder again to make a new version"
            )
    check_added_unchanged(version, storage_options)


def check_added_unchanged(version: DatasetVersion, storage_options: dict[str, Any] | None) -> None:
    """Refuse to query a version whose added columns' files changed since registration."""
    for column in version.added:
        try:
            sizes = list_folder(column.folder, storage_options)
        except MixplaneError as error:
            raise MixplaneError(
                f"{version.ref}: the folder of its column {column.name!r} is gone ({error}); "
                f"annotate {column.source} again"
            ) from error
        for entry in column.files:
            size = sizes.get(entry.path)
            if size != entry.size:
                state = "is missing" if size is None else "changed"
                raise MixplaneError(
                    f"{version.ref}: {entry.path} of its column {column.name!r} in "
                    f"{column.folder} {state} since it was registered; annotate "
                    f"{column.source} again"
                )
