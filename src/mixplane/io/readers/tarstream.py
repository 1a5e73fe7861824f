"""Reading a tar archive from a forward-only stream, member by member, with byte offsets.

The standard library's streaming mode reports a cut archive without saying where, and a
member it cannot finish is lost with everything after it. Here each 512-byte header is
parsed as it comes (ustar, GNU long names, pax `path`/`size` records), a member's data is
read with bounded memory, and a cut or corrupt archive ends the iteration with a `Broken`
item that says at which byte and what went wrong; every member before it was yielded whole.
A compressed stream that is cut (`.tar.gz`, `.tar.zst`) gives every byte it still can
first, so its archive ends where a plain tar cut at the same byte would, the decompressor's
error added to the message.

Example:
    >>> import io, tarfile
    >>> buffer = io.BytesIO()
    >>> with tarfile.open(fileobj=buffer, mode="w") as tar:
    ...     info = tarfile.TarInfo("a.txt"); info.size = 2
    ...     tar.addfile(info, io.BytesIO(b"hi"))
    >>> _ = buffer.seek(0)
    >>> reader = TarReader(buffer, limit=1 << 20)
    >>> [(m.name, bytes(m.data)) for m in reader], reader.position
    ([('a.txt', b'hi')], 1536)
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from mixplane.error_text import describe_error
from mixplane.io.readers.lines import CHUNK, PREFIX

BLOCK = 512
_REGULAR = (b"0", b"\0", b"7")
# Errors a decompressing stream raises when its data is cut or damaged.
STREAM_ERRORS = (OSError, EOFError, zlib.error, ValueError)


@dataclass(frozen=True, slots=True)
class Member:
    """A regular file of the archive. `offset` is the byte of its header. When its size is
    over the limit, `data` holds only its first bytes and `oversized` is True."""

    name: str
    offset: int
    size: int
    data: bytes | bytearray
    oversized: bool = False


@dataclass(frozen=True, slots=True)
class Broken:
    """The archive cannot be read past `offset`: `error` says why. `name` and `partial` are
    the member it broke in (if any) and the bytes of it that came."""

    offset: int
    error: str
    name: str | None = None
    partial: bytes = b""


class _Counted:
    """Reads exactly what is asked unless the stream ends, counting the bytes.

    A decompressing stream that fails (a cut `.tar.gz`) ends the data here instead of
    raising: every byte it could still give is returned first, and `error` says why the data
    ended, so the archive is cut where its bytes stop, as a plain tar would be.
    """

    def __init__(self, stream: IO[bytes]):
        self.stream = stream
        self.position = 0
        self.error: str | None = None
        # `read1` returns what one underlying read gave, so a failure loses no decoded bytes;
        # a buffered `read` drops the bytes it gathered in the call that fails.
        self._read = getattr(stream, "read1", stream.read)

    def read(self, size: int) -> bytes:
        parts, wanted = [], size
        while wanted > 0 and self.error is None:
            try:
                chunk = self._read(min(wanted, CHUNK))
            except STREAM_ERRORS as error:
                self.error = describe_error(error)
                break
            if not chunk:
                break
            parts.append(chunk)
            wanted -= len(chunk)
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        self.position += len(data)
        return data


class TarReader:
    """The regular files of the tar archive in `stream`, in order; the last item is a
    `Broken` if the archive is cut or corrupt. `limit` bounds the bytes kept per member;
    `position` is how many bytes of the stream were read."""

    def __init__(self, stream: IO[bytes], limit: int):
        self._reader = _Counted(stream)
        self.limit = limit

    @property
    def position(self) -> int:
        return self._reader.position

    def __iter__(self) -> Iterator[Member | Broken]:
        return _members(self._reader, self.limit)


def _members(reader: _Counted, limit: int) -> Iterator[Member | Broken]:
    long_name: str | None = None
    pax: dict[str, str] = {}
    while True:
        offset = reader.position
        block = reader.read(BLOCK)
        if not block:
            if reader.error:  # the stream failed between members: the archive was cut
                yield Broken(offset, f"unreadable stream after byte {offset}: {reader.error}")
            return  # no end-of-archive blocks: accepted, as tar itself does
        if len(block) < BLOCK:
            error = f"tar truncated at byte {reader.position} inside a header"
            name = long_name or pax.get("path") or _partial_name(block)
            yield Broken(offset, error + _because(reader), name)
            return
        if block == bytes(BLOCK):
            return  # end of archive
        problem = _check(block)
        kind = block[156:157]
        name = long_name or pax.get("path") or _name(block)
        try:
            size = int(pax["size"]) if "size" in pax else _number(block[124:136])
        except ValueError as error:
            problem = problem or f"pax size {error}"
        if problem:
            yield Broken(offset, f"corrupt tar header at byte {offset}: {problem}")
            return
        if kind in (b"x", b"g", b"L", b"K"):
            # Extension headers describe the member that follows.
            data = reader.read(size)
            if len(data) < size:
                yield _cut(reader, offset, name, size, data)
                return
            reader.read(-size % BLOCK)
            if kind == b"L":
                long_name = data.rstrip(b"\0").decode("utf-8", "surrogateescape")
            elif kind == b"x":
                try:
                    pax = _pax(data)
                except ValueError as error:
                    yield Broken(offset, f"corrupt pax header at byte {offset}: {error}")
                    return
            continue
        long_name, pax = None, {}
        if kind not in _REGULAR:
            _skip(reader, size)  # directories, links, devices hold no sample data
            continue
        data, got = _data(reader, size, limit)
        if got < size:
            yield _cut(reader, offset, name, size, bytes(data))
            return
        reader.read(-size % BLOCK)
        yield Member(name, offset, size, data, size > limit)


def _because(reader: _Counted) -> str:
    return f" (unreadable stream: {reader.error})" if reader.error else ""


def _cut(reader: _Counted, offset: int, name: str, size: int, data: bytes) -> Broken:
    error = (
        f"tar truncated at byte {reader.position}: member {name!r} (header at byte {offset}) "
        f"declares {size} bytes, {len(data)} present{_because(reader)}"
    )
    return Broken(offset, error, name, data[:PREFIX])


def _data(reader: _Counted, size: int, limit: int) -> tuple[bytes | bytearray, int]:
    """A member's data, or only its first bytes when it is over `limit`."""
    if size <= limit:
        data = reader.read(size)
        return data, len(data)
    prefix, got = bytearray(), 0
    while got < size:
        chunk = reader.read(min(CHUNK, size - got))
        if not chunk:
            break
        if len(prefix) < PREFIX:
            prefix += chunk[: PREFIX - len(prefix)]
        got += len(chunk)
    return prefix, got


def _skip(reader: _Counted, size: int) -> None:
    remaining = size + (-size % BLOCK)
    while remaining > 0 and (chunk := reader.read(min(CHUNK, remaining))):
        remaining -= len(chunk)


def _check(block: bytes) -> str | None:
    """Why a header block is not a valid tar header, or None."""
    try:
        stored = _number(block[148:156])
        _number(block[124:136])
    except ValueError as error:
        return str(error)
    unsigned = sum(block[:148]) + 8 * 32 + sum(block[156:])
    signed = unsigned - 2 * sum(b for b in block[:148] + block[156:] if b > 127)
    if stored not in (unsigned, signed):
        return f"checksum {stored} does not match the header's {unsigned}"
    return None


def _partial_name(block: bytes) -> str | None:
    """The member name a cut header holds, or None when its name field is not all there
    (or a ustar prefix that lengthens it begins but is cut). A prefix the cut came before
    is taken as absent: tar writers name long paths with pax or GNU records instead."""
    if len(block) < 100 or not block[:1].strip(b"\0"):
        return None
    if 345 < len(block) < 500 and block[257:263] == b"ustar\x00" and block[345]:
        return None
    return _name(block.ljust(BLOCK, b"\0"))


def _number(field: bytes) -> int:
    """A header number: octal digits, or base-256 (GNU) when the top bit is set."""
    if field and field[0] & 0x80:
        value = int.from_bytes(field[1:], "big")
        return value - (1 << (8 * (len(field) - 1))) if field[0] & 0x40 else value
    digits = field.replace(b"\0", b" ").strip()
    if not digits:
        return 0
    try:
        return int(digits, 8)
    except ValueError:
        raise ValueError(f"bad number field {bytes(field)!r}") from None


def _name(block: bytes) -> str:
    name = block[:100].split(b"\0", 1)[0]
    if block[257:263] == b"ustar\x00":  # POSIX ustar: the name may have a prefix
        prefix = block[345:500].split(b"\0", 1)[0]
        if prefix:
            name = prefix + b"/" + name
    return name.decode("utf-8", "surrogateescape")


def _pax(data: bytes) -> dict[str, str]:
    """The `key=value` records of a pax extended header ("LEN key=value\\n" each)."""
    records, position = {}, 0
    while position < len(data):
        space = data.find(b" ", position)
        if space < 0:
            break
        length = int(data[position:space])
        if length <= 0:
            break
        key, _, value = data[space + 1 : position + length - 1].partition(b"=")
        records[key.decode("utf-8", "replace")] = value.decode("utf-8", "surrogateescape")
        position += length
    return records
