"""Turning rows with varying metadata keys into Arrow tables."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pyarrow as pa


def column_array(values: list[Any]) -> pa.Array:
    """An Arrow array for one column; values of mixed types fall back to JSON strings.

    Example:
        >>> column_array([1, None, 3]).type
        DataType(int64)
        >>> column_array([1, "a"]).to_pylist()
        ['1', '"a"']
    """
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array(
            [None if v is None else orjson.dumps(v, default=str).decode() for v in values],
            type=pa.string(),
        )


# Texts above this many characters are encoded to UTF-8 here (see `string_array`).
_LARGE_TEXT = 1 << 20


def string_array(values: list[Any]) -> pa.Array:
    """A string array. A large non-ASCII text is encoded here rather than by Arrow: Arrow
    asks Python for the UTF-8 form, which Python then keeps inside the str for as long as
    the str lives, a second copy of the text through the write.

    Example:
        >>> string_array(["a", None, "ü" * 3]).to_pylist()
        ['a', None, 'üüü']
    """
    return pa.array(
        [
            value.encode()
            if isinstance(value, str) and len(value) > _LARGE_TEXT and not value.isascii()
            else value
            for value in values
        ],
        type=pa.string(),
    )


def rows_to_table(fixed: dict[str, list[Any]], metadata: list[dict[str, Any]]) -> pa.Table:
    """A table with the `fixed` columns first, then one column per metadata key.

    Metadata keys appear in order of first appearance; a row missing a key gets null.
    """
    keys: dict[str, None] = {}
    for row in metadata:
        for key in row:
            if key not in keys and key not in fixed:
                keys[key] = None
    arrays = {name: string_array(values) for name, values in fixed.items()}
    for key in keys:
        arrays[key] = column_array([row.get(key) for row in metadata])
    return pa.table(arrays)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table | None:
    """Cast `table` to `schema` (missing columns become null), or None if it cannot be done
    without losing columns or values."""
    if not set(table.column_names) <= set(schema.names):
        return None
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            if column.type != field.type:
                if field.type == pa.null():
                    return None
                try:
                    column = column.cast(field.type, safe=True)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                    return None
            columns.append(column)
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def integers(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A null-free integer column as numpy, sharing its buffers where it has one chunk.

    pyarrow's own conversion imports pandas the first time (a quarter of a second, longer
    than a selective query or a shard's token counts take). Example:
        >>> integers(pa.chunked_array([[1, 2], [3]])).tolist()
        [1, 2, 3]
    """
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        if chunk.null_count or not pa.types.is_integer(chunk.type):
            raise ValueError(f"{chunk.type} with {chunk.null_count} nulls: not null-free integers")
        kind = "i" if pa.types.is_signed_integer(chunk.type) else "u"
        dtype = np.dtype(f"<{kind}{chunk.type.bit_width // 8}")
        offset = chunk.offset * dtype.itemsize
        buffer = chunk.buffers()[1]
        parts.append(
            np.frombuffer(buffer, dtype=dtype, count=len(chunk), offset=offset)
            if len(chunk)
            else np.zeros(0, dtype=dtype)
        )
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
