"""Plain-text and HTML files in a folder: one document per file."""

from __future__ import annotations

from collections.abc import Iterator

from mixplane.document import Document
from mixplane.io.readers.base import (
    Quarantined,
    ReadOptions,
    ReadStats,
    Shard,
    default_source,
    oversized,
    read_bounded,
)
from mixplane.io.urls import open_url


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield one Document named after the file; HTML keeps its markup for `extract`.

    A file that is not valid UTF-8 is quarantined with its bytes, one over
    `max_record_bytes` with its first bytes (read no further than the limit, then only
    counted); an empty file yields nothing (there is no record in it).
    """
    limit = options.max_record_bytes
    with open_url(shard.url, "rb", options.storage_options) as stream:
        try:
            data, size = read_bounded(stream, limit)
        except (OSError, EOFError, ValueError) as error:
            yield Quarantined(shard.url, f"unreadable file: {error}", b"", shard.name)
            return
    stats.bytes += size
    if size > limit:
        yield oversized(shard.url, size, limit, bytes(data), shard.name)
        return
    if not data or data.isspace():
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        message = f"invalid UTF-8 at byte {error.start}: {error.reason}"
        yield Quarantined(shard.url, message, bytes(data), shard.name, reason="invalid UTF-8")
        return
    del data  # the text is all that is needed now
    text = text.removeprefix("\ufeff")
    metadata = {"content_type": "text/html" if shard.format == "html" else "text/plain"}
    yield Document(shard.name, text, default_source(shard, options), metadata)
