"""HTTP Range requests over a body held whole (RFC 9110, section 14), for the audio route:
a browser's <audio> element asks for `Range: bytes=a-b` to seek.

One range is answered (206 with its part); a header that is not a valid `bytes` range set is
ignored (the whole body, 200), as is one asking for several ranges (allowed: a server may
always ignore Range) and one sent with `If-Range` (the service gives no validator it could
match). A valid range set that no byte of the body satisfies is refused (416).

Example:
    >>> requested_range("bytes=0-99", 1000), requested_range("bytes=-10", 1000)
    ((0, 100), (990, 1000))
    >>> requested_range("bytes=5-1", 1000) is None, requested_range("items=0-1", 1000) is None
    (True, True)
"""

from __future__ import annotations

import re

from mixplane.errors import MixplaneError

_SPEC = re.compile(r"(\d+)-(\d*)|-(\d+)")


class RangeNotSatisfiable(MixplaneError):
    """No byte of the body is in the requested range (416)."""


def requested_range(header: str | None, size: int) -> tuple[int, int] | None:
    """`(start, end)` (end exclusive) of the part of a `size`-byte body that the `Range`
    header asks for, or None for the whole body; `RangeNotSatisfiable` if it asks for none
    of it."""
    if header is None:
        return None
    unit, equals, text = header.strip().partition("=")
    if not equals or unit.lower() != "bytes":
        return None
    specs = [spec.strip(" \t") for spec in text.split(",")]
    specs = [spec for spec in specs if spec]  # empty list elements are allowed and ignored
    found = [_SPEC.fullmatch(spec) for spec in specs]
    if not found or not all(found):
        return None
    if len(found) > 1:
        return None
    first, last, suffix = found[0].groups()  # type: ignore[union-attr]
    if suffix is not None:
        length = int(suffix)
        if length == 0 or size == 0:
            raise RangeNotSatisfiable(f"bytes=-{suffix} asks for none of {size:,} bytes")
        return max(0, size - length), size
    start = int(first)
    if last and int(last) < start:
        return None  # an invalid range-spec makes the whole header invalid
    if start >= size:
        raise RangeNotSatisfiable(f"the range starts at byte {start:,} of {size:,}")
    end = size if not last else min(int(last) + 1, size)
    return start, end
