"""The record that flows through processing.

A `Document` has an id, its text, the source it came from and a flat metadata dict; an
image-text sample also carries its media (the image's encoded bytes, by file extension) and
its caption as the text. Stages add metadata or return a `Drop` naming the reason; a record
is never lost silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Document:
    """One record.

    Example:
        >>> doc = Document(id="wiki/a.jsonl@0", text="Hello", source="wiki")
        >>> doc.metadata["language"] = "en"
    """

    id: str
    text: str
    source: str
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Encoded media by lowercase file extension without the dot (`{"jpg": b"..."}`); None
    #: for a text document.
    media: dict[str, bytes] | None = None


@dataclass(frozen=True, slots=True)
class Drop:
    """A stage's decision to exclude a document, with a short machine-readable reason.

    `reason` is a stable identifier (counted in statistics); `detail` may carry numbers that
    explain it (for example the measured ratio and the threshold).

    Example:
        >>> Drop("too_short", {"words": 3, "min_words": 50})
        Drop(reason='too_short', detail={'words': 3, 'min_words': 50})
    """

    reason: str
    detail: dict[str, Any] | None = None


# Column names a document occupies in Parquet; metadata keys may not shadow them.
RESERVED_COLUMNS = ("id", "text", "source")
