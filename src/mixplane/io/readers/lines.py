"""Splitting a byte stream into lines, keeping what a broken stream gave before it broke.

`for line in stream` loses the start of the line a truncated compressed stream breaks in
(buffered readline drops what it collected when the decompressor raises), and joins the
pieces of a long line into a second copy of it. Here chunks come from `read1`, one
decompression step at a time, and a line longer than a chunk grows in place in one
bytearray.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Cut:
    """The stream broke with `error`; `partial` holds the bytes of the line it broke in."""

    error: Exception
    partial: bytes


Line = bytes | bytearray | Cut


def split_lines(stream: IO[bytes]) -> Iterator[Line]:
    """Yield each line with its newline (the last may have none); a read error yields a
    Cut and ends the lines."""
    read = getattr(stream, "read1", None) or stream.read
    # The start of a line that goes on in the next chunk. It sits in a list so that it is
    # handed over by `pop()`: a suspended generator keeps its locals, and a long line held
    # by one would stay in memory while its document goes through the stages.
    tail = [bytearray()]
    while True:
        try:
            chunk = read(CHUNK)
        except (OSError, EOFError, ValueError) as error:
            yield Cut(error, bytes(tail[0]))
            return
        if not chunk:
            break
        start = 0
        while end := chunk.find(b"\n", start) + 1:
            if tail[0]:
                tail[0] += memoryview(chunk)[start:end]
                yield tail.pop()
                tail.append(bytearray())
            else:
                yield chunk[start:end]
            start = end
        tail[0] += memoryview(chunk)[start:]
    if tail[0]:
        yield tail.pop()


def line_size(line: Line) -> int:
    return len(line.partial) if isinstance(line, Cut) else len(line)
