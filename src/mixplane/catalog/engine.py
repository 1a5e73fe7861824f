"""DuckDB as the query engine: sandboxed connections and views over shard metadata.

Queries run on a fresh in-memory connection that may read only the folders of the shards it
was opened for: file access elsewhere, extension loading and configuration changes are switched
off before any predicate reaches it. That is a second wall behind predicate validation.

Example:
    >>> connection = sandbox(["/data/tok/shard-00000-000.meta.parquet"])  # doctest: +SKIP
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from typing import Any

import duckdb

from mixplane.errors import MixplaneError
from mixplane.io.atomic import is_local
from mixplane.io.urls import url_filesystem

SHARD_COLUMN = "__mixplane_shard"
ROW_COLUMN = "__mixplane_row"


def quote_literal(text: str) -> str:
    """A SQL string literal.

    Example:
        >>> quote_literal("it's")
        "'it''s'"
    """
    return "'" + text.replace("'", "''") + "'"


def quote_name(name: str) -> str:
    """A SQL identifier.

    Example:
        >>> print(quote_name('a"b'))
        "a""b"
    """
    return '"' + name.replace('"', '""') + '"'


def sandbox(
    urls: Iterable[str], storage_options: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection that may read only the folders holding `urls`."""
    urls = list(urls)
    connection = duckdb.connect(
        ":memory:",
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
    )
    remote = sorted({url.split("://", 1)[0] for url in urls if not is_local(url)})
    for protocol in remote:
        example = next(url for url in urls if url.startswith(f"{protocol}://"))
        fs, _ = url_filesystem(example, storage_options)
        connection.register_filesystem(fs)
    folders = sorted({posixpath.dirname(url).rstrip("/") + "/" for url in urls})
    listing = ", ".join(quote_literal(folder) for folder in folders)
    connection.execute("SET enable_progress_bar = false")
    # Footers are read once at bind time and reused by the scan.
    connection.execute("SET parquet_metadata_cache = true")
    connection.execute(f"SET allowed_directories = [{listing}]")
    connection.execute("SET enable_external_access = false")
    connection.execute("SET lock_configuration = true")
    return connection


def parquet_source(urls: list[str], union: bool = True) -> str:
    """`read_parquet` over `urls` (in this order).

    With `union`, files may have different columns (merged by name, missing ones NULL);
    without, all files must share one schema, which spares reading every footer up front.
    """
    listing = ", ".join(quote_literal(url) for url in urls)
    return f"read_parquet([{listing}], union_by_name = {str(union).lower()})"


def same_schema(connection: duckdb.DuckDBPyConnection, urls: list[str]) -> bool:
    """True when every file has the same columns, in the same order, of the same types."""
    listing = ", ".join(quote_literal(url) for url in urls)
    rows = connection.execute(
        "SELECT file_name, name, type, repetition_type, converted_type, logical_type "
        f"FROM parquet_schema([{listing}])"
    ).fetchall()
    signatures: dict[str, list[tuple]] = {}
    for file_name, *column in rows:
        signatures.setdefault(file_name, []).append(tuple(str(part) for part in column))
    return len({tuple(signature) for signature in signatures.values()}) <= 1


def documents_view(
    urls: list[str],
    schema: dict[str, str],
    missing: dict[str, str],
    union: bool = True,
    added: Sequence[tuple[str, list[str]]] = (),
) -> str:
    """SQL of a view with one row per document: its properties, shard number and row number.

    `missing` are columns other datasets have and these shards do not: they read as NULL of
    the other datasets' type, so one predicate runs over datasets with different properties.
    `added` are columns kept beside the shards' metadata (name, one file per shard in the
    order of `urls`, a row per document): joined by shard and row number.
    """
    names = {name for name, _ in added}
    own = [quote_name(name) for name in schema if name not in names]
    position = [f"file_index AS {SHARD_COLUMN}", f"file_row_number AS {ROW_COLUMN}"]
    nulls = [f"CAST(NULL AS {kind}) AS {quote_name(name)}" for name, kind in missing.items()]
    if not added:
        columns = [*own, *nulls, *position]
        return f"SELECT {', '.join(columns)} FROM {parquet_source(urls, union)}"
    base = f"(SELECT {', '.join([*own, *position])} FROM {parquet_source(urls, union)}) AS base"
    # A left join: a document is never lost to an added column (its files' row counts are
    # checked at registration and their sizes before each query).
    joins = [
        f"LEFT JOIN (SELECT {quote_name(name)}, {', '.join(position)} "
        f"FROM {parquet_source(files, union=False)}) AS added_{i} "
        f"USING ({SHARD_COLUMN}, {ROW_COLUMN})"
        for i, (name, files) in enumerate(added)
    ]
    columns = [quote_name(name) for name in schema] + nulls + [SHARD_COLUMN, ROW_COLUMN]
    return f"SELECT {', '.join(columns)} FROM {base} {' '.join(joins)}"


def describe(connection: duckdb.DuckDBPyConnection, urls: list[str]) -> dict[str, str]:
    """Column names and DuckDB types over all `urls`, in order of first appearance."""
    rows = connection.execute(f"DESCRIBE SELECT * FROM {parquet_source(urls)}").fetchall()
    return {name: kind for name, kind, *_ in rows}


def shard_counts(
    connection: duckdb.DuckDBPyConnection, urls: list[str], union: bool = True
) -> list[tuple[int, int]]:
    """`(documents, tokens)` of each file in `urls`, read from its `n_tokens` column."""
    rows = connection.execute(
        "SELECT file_index, count(*), coalesce(sum(n_tokens), 0) "
        f"FROM {parquet_source(urls, union)} GROUP BY file_index"
    ).fetchall()
    counts = {int(index): (int(docs), int(tokens)) for index, docs, tokens in rows}
    return [counts.get(index, (0, 0)) for index in range(len(urls))]


def engine_error(error: duckdb.Error, where: str) -> MixplaneError:
    """A DuckDB failure as a one-line user error."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return MixplaneError(f"{where}: {first}")
