"""Table rows (Parquet row groups, Arrow record batches) as documents."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from mixplane.document import Document
from mixplane.io.readers.base import (
    Quarantined,
    ReadOptions,
    Shard,
    for_shard,
    oversized,
    record_id,
    row_to_document,
)
from mixplane.io.readers.lines import PREFIX


def table_documents(
    table: pa.Table,
    shard: Shard,
    options: ReadOptions,
    source: str,
    first_row: int,
    extra: dict[str, Any] | None = None,
) -> Iterator[Document | Quarantined]:
    """A Document per row, named `NAME#ROW`, with `extra` properties where the row has none.

    A row whose text is over `max_record_bytes` is quarantined with the text's first bytes;
    its text never becomes a Python string.
    """
    limit = options.max_record_bytes
    options = for_shard(options, shard)
    sizes = _text_sizes(table, options.text_key)
    big: dict[int, tuple[int, bytes]] = {}
    if sizes is not None:
        over = pc.greater(sizes, limit)
        if pc.any(over).as_py():
            column = table.column(options.text_key)
            for index in pc.indices_nonzero(over).to_pylist():
                prefix = column[index].as_buffer()[:PREFIX].to_pybytes()
                big[index] = (sizes[index].as_py(), prefix)
            emptied = pc.if_else(over, pa.scalar(None, column.type), column)
            position = table.schema.get_field_index(options.text_key)
            table = table.set_column(position, options.text_key, emptied)
    for index, record in enumerate(table.to_pylist()):
        row = first_row + index
        where, fallback_id = f"{shard.url}#row {row}", f"{shard.name}#{row}"
        for key, value in (extra or {}).items():
            record.setdefault(key, value)
        if index in big:
            size, prefix = big[index]
            yield oversized(where, size, limit, prefix, record_id(record, options, fallback_id))
        else:
            yield row_to_document(record, options, source, fallback_id, where)


def _text_sizes(table: pa.Table, text_key: str) -> pa.ChunkedArray | None:
    """The byte size of each row's text, if the table has a text column of strings."""
    if text_key not in table.column_names:
        return None
    column = table.column(text_key)
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return None  # not text: the row is quarantined for that when it is converted
    return pc.binary_length(column)
