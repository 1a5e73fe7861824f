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
    for_shard,
    oversized,
    record_id,
    to_document,
)
from mixplane.io.readers.lines import Cut, LongLine, line_size, split_lines
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
    """Yield a Document per line whose first byte lies in `[start, end)`; blank lines are
    counted in `stats.blank`.

    Records are named `NAME@OFFSET` (byte offset of the line in the uncompressed stream),
    which does not depend on how the file was split into tasks.
    """
    source = default_source(shard, options)
    options = for_shard(options, shard)
    if shard.start or shard.end is not None:
        if compression_of(shard.url):
            raise ValueError("byte ranges need an uncompressed file")
        fs, path = url_filesystem(shard.url, options.storage_options)
        end = shard.end if shard.end is not None else fs.size(path)
        with fs.open(path, "rb", block_size=1 << 22) as stream:
            yield from _records(stream, shard, options, stats, source, end)
        return
    with open_url(shard.url, "rb", options.storage_options) as stream:
        yield from _records(stream, shard, options, stats, source, None)


def _records(stream, shard: Shard, options: ReadOptions, stats: ReadStats, source: str, end):
    """The records of the lines starting in `[shard.start, end)` (`end` None: to the end)."""
    offset = shard.start
    if offset:
        # The line straddling `start` belongs to the previous range; read from the byte
        # before it, so a line starting exactly at `start` is seen whole.
        stream.seek(offset - 1)
    limit = options.max_record_bytes
    lines = split_lines(stream, limit)
    if offset:
        offset += line_size(next(lines, b"")) - 1
    first = offset
    line_no = 0 if offset == 0 else None  # line numbers are known when reading from the top
    for line in lines:
        if end is not None and offset >= end:
            break
        size = line_size(line)
        if line_no is not None:
            line_no += 1
        where = f"{shard.url}:{line_no}" if line_no is not None else f"{shard.url}@{offset}"
        if isinstance(line, Cut):
            # A truncated or corrupt compressed stream: what came before it was read; the
            # line it broke in is kept as far as it got.
            error = f"unreadable stream: {line.error}"
            yield Quarantined(f"{where} (byte {offset})", error, line.partial)
        elif isinstance(line, LongLine):
            yield oversized(where, line.size, limit, line.prefix)
        elif line.isspace():
            stats.blank += 1
        else:
            result = _parse(line, shard, options, source, offset, where)
            del line  # a long line's bytes are not needed once its document exists
            yield result
        offset += size
    stats.bytes += offset - first


def _parse(line: bytes | bytearray, shard: Shard, options, source: str, offset: int, where: str):
    try:
        record = orjson.loads(line)  # whitespace around the value, newline included, is fine
    except orjson.JSONDecodeError as error:
        bad_byte = _invalid_utf8(line)
        if bad_byte is not None:
            return Quarantined(where, bad_byte, bytes(line), reason="invalid UTF-8")
        return Quarantined(where, f"invalid JSON: {error}", bytes(line))
    if not isinstance(record, dict):
        kind = type(record).__name__
        return Quarantined(where, f"JSON value is {kind}, expected an object", bytes(line))
    fallback_id = f"{shard.name}@{offset}"
    result = to_document(record, options, source, fallback_id)
    if isinstance(result, str):
        doc_id = record_id(record, options, fallback_id)
        return Quarantined(where, result, bytes(line), doc_id)
    return result


def _invalid_utf8(line: bytes | bytearray) -> str | None:
    """Where the line stops being UTF-8, said plainly (orjson only says "surrogates not
    allowed"); None if it is valid UTF-8."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"invalid UTF-8 at byte {error.start} of the line: {error.reason}"
    return None
