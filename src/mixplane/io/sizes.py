"""Byte sizes as people write them (`200GB`, `512MiB`) and as people read them.

>>> parse_size("200GB"), parse_size("1GiB"), parse_size(1000)
(200000000000, 1073741824, 1000)
>>> size_text(1_234_567)
'1.2 MB'
"""

from __future__ import annotations

import re

_DECIMAL = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def parse_size(value: int | str | None) -> int | None:
    """Bytes from a number or a text like `200GB`, `1.5 TiB`, `512MiB`; None stays None.
    Raises ValueError for anything else."""
    if value is None or isinstance(value, int):
        return value
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(I?)B?\s*", str(value).upper())
    if not match:
        raise ValueError(f"{value!r} is not a size (e.g. 200GB, 512MiB, 1000000000)")
    number, unit, binary = match.groups()
    scale = 1024 ** ("KMGT".index(unit) + 1) if binary and unit else _DECIMAL[unit]
    return int(float(number) * scale)


def size_text(size: float) -> str:
    """A size for a message: `512 B`, `1.2 MB`, `3.0 GB`."""
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000:
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"
