"""JSON Lines, optionally compressed. Uncompressed files can be read in byte ranges."""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from mixplane.io.readers.base import (
    Quarantined,
    ReadOptions,
    ReadStats,
    Shard,
    default_source,
    to_document,
)
from mixplane.io.urls import compression_of, open_url, url_filesystem

# How much of a file to look at for its first record's fields.
PEEK_BYTES = 1 << 20


def has_source_field(url: str, storage_options: dict) -> bool:
    """Whether the file's first record carries a `source` field of its own. True also when
    no record is found in its first MiB: then it may."""
    with open_url(url, "rb", storage_options) as stream:
        try:
            head = stream.read(PEEK_BYTES)
        except (OSError, EOFError, ValueError):
            return True  # unreadable here, quarantined when read; assume it may
    lines = head.split(b"\n")
    if len(head) == PEEK_BYTES:
        lines.pop()  # cut in the middle
    for line in lines:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a blank or broken line; look at the next one
        if isinstance(record, dict):
            return "source" in record
    return len(head) == PEEK_BYTES


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield a Document per line whose first byte lies in `[start, end)`; blank lines are skipped.

    Records are named `NAME@OFFSET` (byte offset of the line in the uncompressed stream),
    which does not depend on how the file was split into tasks.
    """
    source = default_source(shard, options)
    if shard.start or shard.end is not None:
        if compression_of(shard.url):
            raise ValueError("byte ranges need an uncompressed file")
        yield from _read_range(shard, options, stats, source)
        return
    line_no = 0
    offset = 0
    with open_url(shard.url, "rb", options.storage_options) as stream:
        try:
            for line in stream:
                line_no += 1
                if not line.isspace():
                    yield _parse(line, shard, options, source, offset, line_no)
                offset += len(line)
        except (OSError, EOFError, ValueError) as error:
            # A truncated or corrupt compressed stream: keep what was read, quarantine the rest.
            yield Quarantined(
                location=f"{shard.url}:{line_no + 1} (byte {offset})",
                error=f"unreadable stream: {error}",
                raw=b"",
            )
    stats.bytes += offset


def _read_range(shard: Shard, options: ReadOptions, stats: ReadStats, source: str):
    fs, path = url_filesystem(shard.url, options.storage_options)
    end = shard.end if shard.end is not None else fs.size(path)
    with fs.open(path, "rb", block_size=1 << 22) as stream:
        offset = shard.start
        line_no = 0 if offset == 0 else None
        if offset:
            # The line straddling `start` belongs to the previous range.
            stream.seek(offset - 1)
            offset += len(stream.readline()) - 1
        while offset < end:
            line = stream.readline()
            if not line:
                break
            if line_no is not None:
                line_no += 1
            if not line.isspace():
                yield _parse(line, shard, options, source, offset, line_no)
            stats.bytes += len(line)
            offset += len(line)


def _parse(line: bytes, shard: Shard, options, source: str, offset: int, line_no: int | None):
    where = f"{shard.url}:{line_no}" if line_no is not None else f"{shard.url}@{offset}"
    stripped = line.strip()
    try:
        record = orjson.loads(stripped)
    except orjson.JSONDecodeError as error:
        return Quarantined(location=where, error=f"invalid JSON: {error}", raw=line)
    if not isinstance(record, dict):
        kind = type(record).__name__
        return Quarantined(
            location=where, error=f"JSON value is {kind}, expected an object", raw=line
        )
    result = to_document(record, options, source, f"{shard.name}@{offset}")
    if isinstance(result, str):
        return Quarantined(location=where, error=result, raw=line)
    return result
