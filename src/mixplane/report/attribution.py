"""The attribution list: for each document counted, its URL, licence, source, dataset
version and id (and the tokens counted), as CSV, streamed from DuckDB in batches so a
large dataset never sits in memory.

Example:
    >>> write_attribution(connection, "attribution.csv")  # doctest: +SKIP
    274
"""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow.csv as pacsv

from mixplane.io.atomic import atomic_open
from mixplane.report.aggregate import NOT_DETECTED, quote_literal

COLUMNS = ("url", "license", "source", "dataset", "document_id", "tokens")
BATCH_ROWS = 1 << 16


def attribution_sql(relation: str = "documents", ordered: bool = True) -> str:
    """The list's query: one row a document, in dataset, shard and row order. A plain scan
    of the shards' metadata is in that order already: `ordered=False` spares the sort
    (which holds every row)."""
    order = " ORDER BY dataset, shard, row" if ordered else ""
    return (
        f"SELECT url, coalesce(license, {quote_literal(NOT_DETECTED)}) AS license, source, "
        f"dataset, id AS document_id, tokens FROM {relation}{order}"
    )


def write_attribution(
    connection: duckdb.DuckDBPyConnection,
    out: str,
    storage_options: dict[str, Any] | None = None,
    relation: str = "documents",
    ordered: bool = True,
) -> int:
    """Write the attribution list of `relation` to `out` (any fsspec URL); returns the rows
    written. The file is written whole or not at all (a temporary name, then renamed)."""
    query = connection.sql(attribution_sql(relation, ordered))
    # The method's name differs between DuckDB versions.
    reader = (getattr(query, "to_arrow_reader", None) or query.fetch_arrow_reader)(BATCH_ROWS)
    rows = 0
    with (
        atomic_open(out, storage_options) as handle,
        pacsv.CSVWriter(handle, reader.schema) as writer,
    ):
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows
