"""Property values as JSON carries them (for `trace`, `explain`, samples and the service).

Kept apart from the catalog, whose package loads DuckDB, so the loader's forensics can
convert values without it.

Example:
    >>> import datetime
    >>> json_value({"when": datetime.date(2024, 5, 1), "tags": ["a", 1]})
    {'when': '2024-05-01', 'tags': ['a', 1]}
"""

from __future__ import annotations

from typing import Any


def json_value(value: Any) -> Any:
    """A property value as JSON carries it: lists and mappings item by item, other types
    (dates, decimals, bytes) as text.

    Example:
        >>> json_value(b"caf\\xc3\\xa9"), json_value((1, None))
        ('café', [1, None])
    """
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
