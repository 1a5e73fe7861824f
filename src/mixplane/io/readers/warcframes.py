"""Where WARC records begin and end, checked by hand: the slow path the WARC reader takes
only after a record failed to parse, to tell which record is broken and where reading can
go on.

A WARC file is either records one after another (`WARC/1.x` header lines, a blank line,
`Content-Length` bytes of block, a blank line), or the same with each record its own gzip
member, which is how crawlers and Common Crawl write them.
"""

from __future__ import annotations

import re
import zlib
from typing import IO

GZIP_MAGIC = b"\x1f\x8b\x08"
# A record's WARC headers end within this many bytes, or the record is not readable.
MAX_HEADER = 64 << 10
_SCAN_CHUNK = 1 << 20
_RECORD_START = re.compile(rb"WARC/1\.[01]\r?\n")
_CONTENT_LENGTH = re.compile(rb"\r?\ncontent-length:[ \t]*(\d+)", flags=re.IGNORECASE)


def record_end(handle: IO[bytes], offset: int, gz: bool) -> int | str:
    """The offset just past the record that starts at `offset`, or why its framing is wrong.

    The record must declare a Content-Length and have exactly that many bytes of block,
    followed by the blank line that closes it. In a gzip file the end is the end of the
    gzip member(s) holding the record.
    """
    data, ends = _record_bytes(handle, offset, gz)
    head_end = data.find(b"\r\n\r\n", 0, MAX_HEADER)
    if not data.startswith(b"WARC/") or head_end < 0:
        return "no complete WARC header block"
    declared = _CONTENT_LENGTH.search(data, 0, head_end + 2)
    if declared is None:
        return "no Content-Length header"
    length = int(declared.group(1))
    block_end = head_end + 4 + length
    if len(data) < block_end:
        return f"Content-Length {length} runs past the record's {len(data) - head_end - 4} bytes"
    if data[block_end : block_end + 4] != b"\r\n\r\n":
        return f"Content-Length {length} does not end the record (no blank line after it)"
    if not gz:
        return offset + block_end + 4
    # Each member of a gzip file holds whole records: the record must end with a member.
    member = next((end for size, end in ends if size >= block_end + 4), None)
    if member is None:
        return "gzip member cut short"
    if any(size == block_end + 4 for size, _ in ends):
        return member
    return f"Content-Length {length} leaves bytes in the record's gzip member"


def _record_bytes(handle: IO[bytes], offset: int, gz: bool) -> tuple[bytes, list[tuple[int, int]]]:
    """The bytes from `offset` on, enough to hold one record (its declared length and the
    closing blank line, up to one extra gzip member), with `(bytes so far, file offset)`
    at the end of each gzip member read."""
    handle.seek(offset)
    if not gz:
        head = handle.read(MAX_HEADER)
        declared = _CONTENT_LENGTH.search(head)
        length = int(declared.group(1)) if declared else 0
        return head + handle.read(max(0, length + 8 - len(head) + MAX_HEADER)), []
    data, ends, position = bytearray(), [], offset
    pending = b""
    while len(ends) < 2:
        decompressor = zlib.decompressobj(wbits=31)
        while not decompressor.eof:
            chunk = pending or handle.read(_SCAN_CHUNK)
            pending = b""
            if not chunk:
                return bytes(data), ends
            try:
                data += decompressor.decompress(chunk)
            except zlib.error:
                return bytes(data), ends
            position += len(chunk) - len(decompressor.unused_data)
        pending = decompressor.unused_data
        ends.append((len(data), position))
        declared = _CONTENT_LENGTH.search(data, 0, MAX_HEADER)
        if declared and len(data) >= data.find(b"\r\n\r\n") + int(declared.group(1)) + 8:
            break
        if not pending and not (pending := handle.read(_SCAN_CHUNK)):
            break
    return bytes(data), ends


def next_record_start(handle: IO[bytes], after: int, gz: bool) -> int | None:
    """The offset of the first record that starts after `after` (a gzip member whose data
    begins with `WARC/`, or a `WARC/1.x` line), or None when none does."""
    position = after + 1
    handle.seek(position)
    carry = b""
    while chunk := handle.read(_SCAN_CHUNK):
        window, base = carry + chunk, position - len(carry)
        for found in _starts(window, gz):
            if _starts_a_record(handle, base + found, gz):
                return base + found
        position += len(chunk)
        handle.seek(position)
        carry = window[-16:]
    return None


def _starts(window: bytes, gz: bool):
    if gz:
        found = window.find(GZIP_MAGIC)
        while found >= 0:
            yield found
            found = window.find(GZIP_MAGIC, found + 1)
    else:
        for match in _RECORD_START.finditer(window):
            if match.start() == 0 or window[match.start() - 1 : match.start()] == b"\n":
                yield match.start()


def _starts_a_record(handle: IO[bytes], offset: int, gz: bool) -> bool:
    if not gz:
        return True
    handle.seek(offset)
    try:
        return zlib.decompressobj(wbits=31).decompress(handle.read(4096), 16).startswith(b"WARC/")
    except zlib.error:
        return False
