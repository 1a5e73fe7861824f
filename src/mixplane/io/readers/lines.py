"""Splitting a byte stream into lines, with bounded memory, keeping what a broken stream gave
before it broke.

`for line in stream` loses the start of the line a truncated compressed stream breaks in
(buffered readline drops what it collected when the decompressor raises), joins the pieces
of a long line into a second copy of it, and holds a line of any length. Here chunks come
from `read1`, one decompression step at a time; a line longer than a chunk grows in place
in one bytearray, and a line longer than the limit is not kept at all: only its size and
first bytes, so a 5 GB line without a newline costs as little as a short one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

CHUNK = 1 << 20
# What an over-long line keeps of itself: enough to see what it is.
PREFIX = 64 << 10


@dataclass(frozen=True, slots=True)
class Cut:
    """The stream broke with `error`; `partial` holds the bytes of the line it broke in."""

    error: Exception
    partial: bytes


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line over the limit: its size in bytes (newline included) and its first bytes."""

    size: int
    prefix: bytes


Line = bytes | bytearray | LongLine | Cut


def split_lines(stream: IO[bytes], limit: int | None = None) -> Iterator[Line]:
    """Yield each line with its newline (the last may have none), or a LongLine for a line
    over `limit` bytes; a read error yields a Cut and ends the lines."""
    read = getattr(stream, "read1", None) or stream.read
    limit = limit or 1 << 62
    tail = _Tail(limit)  # the start of a line that goes on in the next chunk
    while True:
        try:
            chunk = read(CHUNK)
        except (OSError, EOFError, ValueError) as error:
            yield Cut(error, bytes(tail.data))
            return
        if not chunk:
            break
        start = 0
        while end := chunk.find(b"\n", start) + 1:
            if tail:
                tail.add(memoryview(chunk)[start:end])
                # Straight from take(): a suspended generator keeps its locals, and a long
                # line held by one would stay in memory while its document is processed.
                yield tail.take()
            elif end - start > limit:
                yield LongLine(end - start, chunk[start : min(end, start + PREFIX)])
            else:
                yield chunk[start:end]
            start = end
        tail.add(memoryview(chunk)[start:])
    if tail:
        yield tail.take()


class _Tail:
    """A line being assembled from chunks; past the limit only its first bytes are kept and
    the rest is counted."""

    __slots__ = ("data", "dropped", "limit")

    def __init__(self, limit: int):
        self.limit = limit
        self.data = bytearray()
        self.dropped = -1  # bytes not kept, once over the limit

    def __bool__(self) -> bool:
        return bool(self.data) or self.dropped >= 0

    def add(self, piece: memoryview) -> None:
        if self.dropped < 0 and len(self.data) + len(piece) <= self.limit:
            self.data += piece
            return
        if self.dropped < 0:
            self.dropped = 0
        kept = piece[: max(0, PREFIX - len(self.data))]
        self.data += kept
        self.dropped += len(piece) - len(kept)
        if len(self.data) > PREFIX:  # it was long but under the limit until this piece
            self.dropped += len(self.data) - PREFIX
            del self.data[PREFIX:]

    def take(self) -> bytearray | LongLine:
        data, self.data = self.data, bytearray()
        if self.dropped < 0:
            return data
        size, self.dropped = len(data) + self.dropped, -1
        return LongLine(size, bytes(data))


def line_size(line: Line) -> int:
    if isinstance(line, Cut):
        return len(line.partial)
    return line.size if isinstance(line, LongLine) else len(line)
