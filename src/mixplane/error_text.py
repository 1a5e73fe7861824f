"""The text of an exception as recorded in outputs: the same for the same failure, every run.

Some libraries put an object's default repr in their messages (Pillow's "cannot identify
image file <_io.BytesIO object at 0x7f3a...>"); the address differs between runs, and a
detail that holds it would make `_excluded/`, `_quarantine/` and the manifest hashes differ
between two identical runs. `describe_error` drops such addresses.

Example:
    >>> import io
    >>> describe_error(ValueError(f"cannot read {io.BytesIO()!r}"))
    'ValueError: cannot read <_io.BytesIO object>'
"""

from __future__ import annotations

import re

# " at 0x7f3a2c1d9e40" in a default repr (`<function f at 0x...>`, `<X object at 0x...>`).
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def describe_error(error: BaseException, limit: int = 500) -> str:
    """`TYPE: message`, without memory addresses, cut to `limit` characters."""
    return without_addresses(f"{type(error).__name__}: {error}")[:limit]


def without_addresses(text: str) -> str:
    """`text` with the memory addresses of default reprs removed.

    Example:
        >>> without_addresses("<function f at 0x7f00aa> failed")
        '<function f> failed'
    """
    return _ADDRESS.sub("", text)
