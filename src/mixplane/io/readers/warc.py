"""WARC archives (optionally gzip-compressed per record), read with warcio."""

from __future__ import annotations

from collections.abc import Iterator

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

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
from mixplane.io.urls import url_filesystem


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield a Document per `response` (or `resource`) record, keeping its HTML as text.

    The id is the record's WARC-Record-ID; metadata holds `url`, `warc_date` and
    `content_type`. Other record types (request, metadata, warcinfo) carry no document.
    """
    source = default_source(shard, options)
    limit = options.max_record_bytes
    fs, path = url_filesystem(shard.url, options.storage_options)
    with fs.open(path, "rb") as handle:
        iterator = ArchiveIterator(handle)
        try:
            for record in iterator:
                if record.rec_type not in ("response", "resource"):
                    continue
                payload, size = read_bounded(record.content_stream(), limit)
                offset = iterator.get_record_offset()  # only valid once the payload is read
                stats.bytes += size
                headers = record.http_headers
                content_type = (
                    (headers.get_header("Content-Type") if headers else None)
                    or record.rec_headers.get_header("Content-Type")
                    or ""
                )
                where = f"{shard.url}@{offset}"
                doc_id = record.rec_headers.get_header("WARC-Record-ID") or f"{shard.name}@{offset}"
                doc_id = doc_id.strip("<>")
                if size > limit:
                    yield oversized(where, size, limit, bytes(payload), doc_id)
                    continue
                if record.raw_stream.limit > 0:
                    # The archive ended before this record's declared Content-Length.
                    yield Quarantined(where, "truncated WARC record", bytes(payload), doc_id)
                    continue
                try:
                    text = payload.decode(_charset(content_type))
                except (UnicodeDecodeError, LookupError) as error:
                    message = f"cannot decode payload: {error}"
                    yield Quarantined(where, message, bytes(payload), doc_id)
                    continue
                del payload  # the text is all that is needed now
                metadata = {
                    "url": record.rec_headers.get_header("WARC-Target-URI"),
                    "warc_date": record.rec_headers.get_header("WARC-Date"),
                    "content_type": content_type.split(";")[0].strip() or None,
                }
                yield Document(doc_id, text, source, metadata)
            size = fs.size(path)
            if iterator.offset < size:
                # warcio stops quietly when an archive is cut inside a record's headers.
                where = f"{shard.url}@{iterator.offset}"
                yield Quarantined(where, f"WARC ends inside a record ({size} bytes)", b"")
        except (ArchiveLoadFailed, OSError, EOFError, ValueError, AttributeError) as error:
            # warcio raises AttributeError on a record cut inside its headers.
            yield Quarantined(f"{shard.url}@{iterator.offset}", f"unreadable WARC: {error}", b"")


def _charset(content_type: str) -> str:
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"
