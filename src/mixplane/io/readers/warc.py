"""WARC archives, WET files included (uncompressed, or gzip-compressed per record), read with
FastWARC.

Records become documents by type: `response` and `resource` (a crawled page, usually HTML,
for the extract stage) and `conversion` (a WET file's plain text, ready as it is). Request,
warcinfo, revisit and metadata records carry no document. A WAT file (metadata records of
JSON about other records) is refused with a ConfigError: it holds no page text.

A record that cannot be read is quarantined with its offset and the reason, and reading goes
on at the next record: a record cut short, a wrong Content-Length, bytes that are not WARC,
a payload over `max_record_bytes`, binary data (NUL bytes) under a text content type.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from fastwarc.stream_io import GzipReader
from fastwarc.warc import ArchiveIterator, WarcHeaderMap, WarcRecord, WarcRecordType

from mixplane.document import Document
from mixplane.errors import ConfigError
from mixplane.io.readers.base import (
    Quarantined,
    ReadOptions,
    ReadStats,
    Shard,
    default_source,
    oversized,
    read_bounded,
)
from mixplane.io.readers.charsets import charset_label, decode_page
from mixplane.io.readers.lines import PREFIX
from mixplane.io.readers.warcframes import GZIP_MAGIC, next_record_start, record_end
from mixplane.io.urls import url_filesystem

DOCUMENT_TYPES = WarcRecordType.response | WarcRecordType.resource | WarcRecordType.conversion
# Content types that promise text. Other types (PDF, images) are decoded all the same and left
# to the extract stage, which excludes them as unsupported unless told to keep them.
_TEXT_TYPES = ("text/", "application/xhtml", "application/xml", "application/json")
# Bytes of a payload looked at for NUL bytes, which text in an 8-bit or multi-byte charset
# never holds: a binary file served under a text content type.
_SNIFF = 1024
# Response headers the opt_out stage reads, by the metadata field they are kept in (only
# when the response has them, so other records' fields stay as they were).
OPT_OUT_HEADERS = {
    "X-Robots-Tag": "http_x_robots_tag",
    "tdm-reservation": "http_tdm_reservation",
    "tdm-policy": "http_tdm_policy",
}


def wat_refused(where: str) -> ConfigError:
    """The error for a WAT file: what it holds, and what to read instead."""
    return ConfigError(
        f"{where}: is a WAT file (JSON metadata about crawled records: headers, links, "
        "<meta> tags), which holds no page text to train on; read the crawl's WET files "
        "(plain text, format warc) or its WARC files (HTML, with the extract stage) instead"
    )


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield a Document per response, resource or conversion record, keeping its text.

    The id is the record's WARC-Record-ID. Metadata: `url` (WARC-Target-URI), `warc_date`,
    `warc_record_id`, `content_type` (the media type, without parameters),
    `http_content_type` (the HTTP header as sent, None without HTTP) and `charset` (the codec
    the payload was decoded with, see `charsets`) and `warc_truncated` (the crawler's
    WARC-Truncated reason, such as `length`, when it kept only the start of the page). The
    response headers publishers opt out of AI training with are kept when present (see
    `OPT_OUT_HEADERS`), several of one name joined by ", ".

    Example:
        >>> docs = list(read(Shard("crawl.warc.gz", "crawl.warc.gz", "warc"),
        ...                  ReadOptions(), ReadStats()))  # doctest: +SKIP
    """
    fs, path = url_filesystem(shard.url, options.storage_options)
    with fs.open(path, "rb") as handle:
        head = handle.read(8)
        if not head:
            yield Quarantined(f"{shard.url}@0", "empty file: it holds no WARC record", b"")
            return
        gz = head.startswith(GZIP_MAGIC)
        if not gz and not head.startswith(b"WARC/"):
            error = f"not a WARC file: it starts with {head!r}, neither 'WARC/' nor gzip"
            yield Quarantined(f"{shard.url}@0", error, head, reason="not a WARC file")
            return
        start: int | None = 0
        while start is not None:
            start = yield from _read_from(handle, start, gz, shard, options, stats)


def _read_from(
    handle: IO[bytes], start: int, gz: bool, shard: Shard, options: ReadOptions, stats: ReadStats
) -> Iterator:
    """Read records from `start` on; return where to go on after a broken stretch (None at
    the end of the file).

    A record's results are held back until the next record parses: a wrong Content-Length
    only shows when the record after it does not parse, and then the held record is the
    broken one.
    """
    handle.seek(start)
    stream = GzipReader(handle) if gz else handle
    records = ArchiveIterator(stream, parse_http=True, stream_detect=False)
    held: list = []
    last: int | None = None
    while True:
        try:
            record = next(records)
        except StopIteration:
            yield from held
            if (
                gz
                and (cut := stream.frame_start_position()) is not None
                and cut > (-1 if last is None else last)
            ):
                # FastWARC stops quietly at a gzip member cut short.
                where = f"{shard.url}@{cut}"
                yield Quarantined(where, "WARC ends inside a record (gzip member cut short)", b"")
            return None
        except OSError as error:
            return (yield from _broken(handle, start, last, held, gz, shard.url, error))
        yield from held
        last = record.stream_pos
        held = list(_record_results(record, shard, options, stats))


def _broken(
    handle: IO[bytes],
    start: int,
    last: int | None,
    held: list,
    gz: bool,
    url: str,
    error: OSError,
) -> Iterator:
    """After a record failed to parse: quarantine what is broken, return where to go on."""
    after, broken = start, None
    if last is not None:
        end = record_end(handle, last, gz)
        if isinstance(end, str):
            after, broken = last, end
        else:
            yield from held
            after = end
    resume = next_record_start(handle, after, gz)
    if resume is None:
        skipped = "to the end of the file"
    else:
        skipped = f"{resume - after} bytes, reading again at offset {resume}"
    # The skipped bytes as they are in the file (compressed, in a gzip file), up to PREFIX.
    handle.seek(after)
    raw = handle.read(PREFIX if resume is None else min(PREFIX, resume - after))
    if broken:
        ids = [r.id if isinstance(r, Document) else r.doc_id for r in held]
        error = f"broken WARC record: {broken} (skipped {skipped})"
        yield Quarantined(f"{url}@{last}", error, raw, next(iter(ids), None), "broken WARC record")
    else:
        error = f"unreadable WARC data: {error} (skipped {skipped})"
        yield Quarantined(f"{url}@{after}", error, raw, reason="unreadable WARC data")
    return resume


def _record_results(record: WarcRecord, shard: Shard, options: ReadOptions, stats: ReadStats):
    """The document (or quarantined record) a WARC record gives, if any."""
    headers = record.headers
    where = f"{shard.url}@{record.stream_pos}"
    if "Content-Length" not in headers:
        yield Quarantined(where, "WARC ends inside a record's headers", b"")
        return
    kind = record.record_type
    if kind == WarcRecordType.metadata and _media_type(headers.get("Content-Type")) == (
        "application/json"
    ):
        raise wat_refused(shard.url)
    if not kind & DOCUMENT_TYPES:
        return
    limit = options.max_record_bytes
    payload, size = read_bounded(record.reader, limit)
    stats.bytes += size
    record_id = (record.record_id or "").strip("<>") or None
    doc_id = record_id or f"{shard.name}@{record.stream_pos}"
    if size > limit:
        yield oversized(where, size, limit, bytes(payload), doc_id)
        return
    if size < record.content_length:
        error = f"truncated WARC record ({size} of {record.content_length} payload bytes)"
        yield Quarantined(where, error, bytes(payload), doc_id, reason="truncated WARC record")
        return
    http_type = record.http_headers.get("Content-Type") if record.is_http else None
    content_type = http_type or headers.get("Content-Type") or ""
    media = _media_type(content_type)
    if kind == WarcRecordType.conversion:
        media = media or "text/plain"
    declared = charset_label(content_type) or (
        "utf-8" if kind == WarcRecordType.conversion else None
    )
    text_type = not media or media.startswith(_TEXT_TYPES)
    if text_type and b"\x00" in payload[:_SNIFF] and not (declared or "").startswith("utf-16"):
        error = f"binary payload (NUL bytes) under Content-Type {media or 'none'}"
        yield Quarantined(where, error, bytes(payload[:_SNIFF]), doc_id, reason="binary payload")
        return
    text, codec, _ = decode_page(bytes(payload), declared, html="html" in media or not media)
    del payload  # the text is all that is needed now
    metadata = {
        "url": headers.get("WARC-Target-URI"),
        "warc_date": headers.get("WARC-Date"),
        "warc_record_id": record_id,
        "content_type": media or None,
        "http_content_type": http_type,
        "charset": codec,
        "warc_truncated": headers.get("WARC-Truncated"),
    }
    if record.is_http:
        metadata.update(_opt_out_headers(record.http_headers))
    yield Document(doc_id, text, default_source(shard, options), metadata)


def _opt_out_headers(http_headers: WarcHeaderMap) -> dict[str, str]:
    """The opt-out response headers a record has, by metadata field."""
    found = {}
    pairs = http_headers.astuples()
    for name, field in OPT_OUT_HEADERS.items():
        values = [value.strip() for key, value in pairs if key.lower() == name.lower()]
        if values:
            found[field] = ", ".join(values)
    return found


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()
