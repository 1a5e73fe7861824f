"""Parquet files, read a row group at a time; tasks may take a range of row groups."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow.parquet as pq

from mixplane.io.readers.base import ReadOptions, ReadStats, Shard, default_source
from mixplane.io.readers.rows import table_documents
from mixplane.io.urls import url_filesystem


def row_group_sizes(url: str, storage_options: dict) -> list[int]:
    """Compressed byte size of each row group, for splitting a file into tasks."""
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        meta = pq.ParquetFile(handle).metadata
        return [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]


def has_source_column(url: str, storage_options: dict) -> bool:
    """Whether the file's rows carry a `source` column of their own (its footer says so)."""
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        return "source" in pq.read_schema(handle).names


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield a Document per row of row groups `[start, end)`, named `NAME#ROW`."""
    source = default_source(shard, options)
    fs, path = url_filesystem(shard.url, options.storage_options)
    with fs.open(path, "rb") as handle:
        parquet = pq.ParquetFile(handle)
        meta = parquet.metadata
        end = meta.num_row_groups if shard.end is None else shard.end
        row = sum(meta.row_group(i).num_rows for i in range(shard.start))
        for group in range(shard.start, end):
            stats.bytes += meta.row_group(group).total_byte_size
            table = parquet.read_row_group(group)
            yield from table_documents(table, shard, options, source, row)
            row += table.num_rows
