"""Parquet files, read a row group at a time; tasks may take a range of row groups.

A file pyarrow cannot open (empty, truncated, not Parquet at all) is one quarantined record,
with its first 64 KiB, as a compressed file that breaks is; a row group it cannot decode is
one quarantined record naming its rows, and the other row groups are read. A transport
failure (a reset connection, a server without range requests) is not the file's fault and
is raised as it is.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.io.readers.base import Quarantined, ReadOptions, ReadStats, Shard, default_source
from mixplane.io.readers.lines import PREFIX
from mixplane.io.readers.rows import table_documents
from mixplane.io.urls import url_filesystem

UNREADABLE_FILE = "unreadable Parquet file"
UNREADABLE_GROUP = "unreadable Parquet row group"


def unreadable(error: BaseException) -> bool:
    """Whether pyarrow refused the bytes themselves: its own errors (a bad footer is an
    `ArrowInvalid`, an undecodable page a plain `OSError`), not one the file object raised
    while fetching them (those keep their type, such as `ConnectionResetError`)."""
    return isinstance(error, pa.ArrowException) or type(error) is OSError


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def row_group_sizes(url: str, storage_options: dict) -> list[int]:
    """Compressed byte size of each row group, for splitting a file into tasks. A file that
    cannot be opened as Parquet raises; see `unreadable`."""
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        meta = pq.ParquetFile(handle).metadata
        return [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]


def has_source_column(url: str, storage_options: dict) -> bool:
    """Whether the file's rows carry a `source` column of their own (its footer says so).
    True for a file that cannot be opened as Parquet (quarantined when read): then they may."""
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        try:
            return "source" in pq.read_schema(handle).names
        except Exception as error:
            if unreadable(error):
                return True
            raise


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield a Document per row of row groups `[start, end)`, named `NAME#ROW`."""
    source = default_source(shard, options)
    fs, path = url_filesystem(shard.url, options.storage_options)
    with fs.open(path, "rb") as handle:
        try:
            parquet = pq.ParquetFile(handle)
        except Exception as error:
            if not unreadable(error):
                raise
            handle.seek(0)
            error = f"{UNREADABLE_FILE}: {one_line(error)}"
            yield Quarantined(shard.url, error, handle.read(PREFIX), reason=UNREADABLE_FILE)
            return
        meta = parquet.metadata
        end = meta.num_row_groups if shard.end is None else shard.end
        row = sum(meta.row_group(i).num_rows for i in range(shard.start))
        for group in range(shard.start, end):
            rows = meta.row_group(group).num_rows
            stats.bytes += meta.row_group(group).total_byte_size
            try:
                table = parquet.read_row_group(group)
            except Exception as error:
                if not unreadable(error):
                    raise
                where = f"{shard.url}#row group {group} (rows {row}-{row + rows - 1})"
                error = f"{UNREADABLE_GROUP} of {rows} rows: {one_line(error)}"
                yield Quarantined(where, error, b"", reason=UNREADABLE_GROUP)
            else:
                yield from table_documents(table, shard, options, source, row)
            row += rows
