"""Writers for the corpus files, byte-for-byte reproducible.

Compression settings are fixed (zstd level 3, gzip level 6 with mtime 0 and no file name
in the header, WARC records gzipped one by one as warcio does), and nothing depends on
the clock: WARC dates and record ids come from the caller. Every file is written under a
temporary name and renamed when complete.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
from contextlib import ExitStack
from typing import Any, BinaryIO

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from mixplane.io.atomic import atomic_open, join_url
from mixplane.synth.webdress import dress

ZSTD_LEVEL = 3
GZIP_LEVEL = 6
PARQUET_ROW_GROUP = 5_000


class JsonlSink:
    """JSON Lines compressed by suffix: `.jsonl.zst`, `.jsonl.gz` or plain `.jsonl`."""

    def __init__(self, url: str):
        self._stack = ExitStack()
        raw = self._stack.enter_context(atomic_open(url))
        if url.endswith(".zst"):
            compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
            self._out = self._stack.enter_context(compressor.stream_writer(raw, closefd=False))
        elif url.endswith(".gz"):
            # filename="" keeps the temporary file's name out of the gzip header.
            self._out = self._stack.enter_context(
                gzip.GzipFile(
                    filename="", fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0
                )
            )
        else:
            self._out = raw
        self.records = 0

    def write(self, record: dict[str, Any]) -> None:
        self._out.write(orjson.dumps(record) + b"\n")
        self.records += 1

    def close(self) -> None:
        self._stack.close()


class ParquetSink:
    """Rows buffered in memory and written as one Parquet file (zstd) on close."""

    def __init__(self, url: str, schema: pa.Schema):
        self.url = url
        self.schema = schema
        self.rows: dict[str, list[Any]] = {name: [] for name in schema.names}
        self.records = 0

    def write(self, record: dict[str, Any]) -> None:
        for name, values in self.rows.items():
            values.append(record[name])
        self.records += 1

    def close(self) -> None:
        table = pa.table(self.rows, schema=self.schema)
        with atomic_open(self.url) as handle:
            pq.write_table(table, handle, compression="zstd", row_group_size=PARQUET_ROW_GROUP)


class WarcSink:
    """A `.warc.gz` file of `response` records behind one `warcinfo` record."""

    def __init__(
        self,
        url: str,
        info_id: str,
        date: str,
        handle: BinaryIO | None = None,
        profile: str = "compact",
    ):
        """Write to `url`, or into `handle` (an open binary file) when one is given.
        `profile` "realistic" dresses each page as `webdress` says."""
        self._profile = profile
        self._stack = ExitStack()
        self._raw = handle if handle is not None else self._stack.enter_context(atomic_open(url))
        self._writer = WARCWriter(self._raw, gzip=True)
        name = url.rsplit("/", 1)[-1]
        payload = b"software: mixplane synth\r\nformat: WARC File Format 1.1\r\n"
        headers = {"WARC-Record-ID": f"<{info_id}>", "WARC-Date": date, "WARC-Filename": name}
        info = self._writer.create_warc_record(
            "",
            "warcinfo",
            payload=io.BytesIO(payload),
            length=len(payload),
            warc_content_type="application/warc-fields",
            warc_headers_dict=headers,
        )
        self._writer.write_record(info)
        self.records = 0
        self.offsets: list[int] = []

    def write(
        self,
        record_id: str,
        url: str,
        date: str,
        html: str,
        extra_headers: list[tuple[str, str]] | None = None,
    ) -> None:
        """Write a 200 response carrying `html` (and `extra_headers` after the usual ones);
        `record_id` is a `urn:uuid:` string."""
        body, content_type, length, extra = html.encode("utf-8"), "text/html; charset=utf-8", 0, {}
        if self._profile == "realistic":
            page = dress(html, record_id)
            body, content_type, length = page.body, page.content_type, page.length
            extra = {"WARC-Truncated": "length"} if page.truncated else {}
        headers = StatusAndHeaders(
            "200 OK",
            [
                ("Content-Type", content_type),
                ("Content-Length", str(length or len(body))),
                ("Server", "nginx"),
                *(extra_headers or ()),
            ],
            protocol="HTTP/1.1",
        )
        # Digests computed here, in one pass, spare warcio re-reading the payload twice.
        headers.compute_headers_buffer()
        warc_headers = {
            "WARC-Record-ID": f"<{record_id}>",
            "WARC-Date": date,
            "WARC-Payload-Digest": _sha1(body),
            "WARC-Block-Digest": _sha1(headers.headers_buff + body),
            **extra,
        }
        record = self._writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=headers,
            warc_headers_dict=warc_headers,
        )
        self.offsets.append(self._raw.tell())
        self._writer.write_record(record)
        self.records += 1

    def close(self) -> None:
        self._stack.close()


def _sha1(data: bytes) -> str:
    """A WARC digest value: 'sha1:' and the base-32 SHA-1 of `data`."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def write_text(url: str, text: str) -> None:
    with atomic_open(url) as handle:
        handle.write(text.encode("utf-8"))


def write_json(url: str, value: Any) -> None:
    with atomic_open(url) as handle:
        handle.write(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        handle.write(b"\n")


__all__ = ["JsonlSink", "ParquetSink", "WarcSink", "join_url", "write_json", "write_text"]
