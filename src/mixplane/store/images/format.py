"""The image shard format "mixplane-images", version 2: names, tar members and the index.

A shard is three files sharing a stem (`part-NNNNN`):

- `.tar`: a WebDataset-compatible tar; per sample, in order, `KEY.EXT` (the image),
  `KEY.txt` (the caption) and `KEY.json` (id, source, caption and the metadata). Plain
  ustar headers with fixed mode, owner and time, so identical samples give identical bytes.
- `.idx`: a 24-byte header `<8sIIQ` (magic `MXIMGIDX`, version, reserved 0, sample count
  n), then n + 1 little-endian uint64 byte offsets: where each sample's first header starts,
  and last where the last sample ends (the two zero end blocks follow it); then (version 2)
  n little-endian uint64 xxh3_64 digests, one of each sample's bytes `[offset_i,
  offset_i+1)`, so a sample read by a ranged request is checked on its own. Version 1
  indexes (no digests) are still read; their samples cannot be read by ranges.
- `.meta.parquet`: one row per sample, in the same order.

Everything here is pure: building and parsing bytes, choosing names. `docs/images-format.md`
describes the same layout for readers in other languages.
"""

from __future__ import annotations

import struct

import numpy as np
import xxhash

from mixplane.errors import MixplaneError

FORMAT_NAME = "mixplane-images"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1: no sample digests
MAGIC = b"MXIMGIDX"
# magic, version (uint32), reserved (uint32, 0), sample count (uint64)
HEADER = struct.Struct("<8sIIQ")
HEADER_SIZE = HEADER.size  # 24: offsets start 8-byte aligned
OFFSET_DTYPE = np.dtype("<u8")

TAR, IDX, META = ".tar", ".idx", ".meta.parquet"
SUFFIXES = (TAR, IDX, META)
FILE_SUFFIXES = {"tar": TAR, "idx": IDX, "meta": META}

BLOCK = 512
END_BLOCKS = b"\0" * (2 * BLOCK)  # a tar ends with two zero blocks
MODE = 0o644
# ustar field layout: (offset, size) of the fields read back.
_NAME, _SIZE, _CHKSUM, _TYPE, _MAGIC, _PREFIX = (
    (0, 100),
    (124, 12),
    (148, 8),
    (156, 1),
    (257, 6),
    (345, 155),
)
_REGULAR = (b"0", b"\0")
_MAX_SIZE = 8**11 - 1  # 11 octal digits: 8 GiB, far above any image


def sample_key(task: int, index: int) -> str:
    """The key of sample `index` of the shard written by task `task` (no dots, sortable).

    Example:
        >>> sample_key(3, 42)
        '00003-0000042'
    """
    return f"{task:05d}-{index:07d}"


def _octal(value: int, width: int) -> bytes:
    """A NUL-terminated zero-padded octal field of `width` bytes."""
    return b"%0*o\0" % (width - 1, value)


def tar_header(name: str, size: int) -> bytes:
    """The 512-byte ustar header of a regular file `name` of `size` bytes, with mode 0644,
    owner 0:0, no owner names and mtime 0.

    Example:
        >>> header = tar_header("00000-0000000.txt", 5)
        >>> len(header), header[257:263]
        (512, b'ustar\\x00')
    """
    encoded = name.encode("utf-8")
    if len(encoded) > 100:
        raise ValueError(f"tar member name {name!r} is longer than 100 bytes")
    if not 0 <= size <= _MAX_SIZE:
        raise ValueError(f"tar member {name!r}: size {size} does not fit a ustar header")
    header = bytearray(BLOCK)
    header[0 : len(encoded)] = encoded
    header[100:108] = _octal(MODE, 8)
    header[108:116] = _octal(0, 8)  # uid
    header[116:124] = _octal(0, 8)  # gid
    header[124:136] = _octal(size, 12)
    header[136:148] = _octal(0, 12)  # mtime
    header[148:156] = b" " * 8  # the checksum is computed with its own field as spaces
    header[156:157] = b"0"
    header[257:263] = b"ustar\0"
    header[263:265] = b"00"
    header[329:337] = _octal(0, 8)  # devmajor
    header[337:345] = _octal(0, 8)  # devminor
    header[148:155] = b"%06o\0" % sum(header)
    return bytes(header)


def tar_member(name: str, data: bytes) -> bytes:
    """A whole tar member: header, data, zero padding to the next 512-byte boundary.

    Example:
        >>> len(tar_member("a.txt", b"hello"))
        1024
    """
    return tar_header(name, len(data)) + data + b"\0" * (-len(data) % BLOCK)


def split_name(name: str) -> tuple[str, str]:
    """`(key, extension)` of a member name as WebDataset groups it: the key is the path up
    to the first dot of the file name, the extension the rest, lowercased.

    Example:
        >>> split_name("dir/00001-0000002.meta.json")
        ('dir/00001-0000002', 'meta.json')
    """
    folder, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    key = f"{folder}/{stem}" if folder else stem
    return key, ext.lower() if dot else ""


def _field(header: bytes, field: tuple[int, int]) -> bytes:
    start, size = field
    return header[start : start + size]


def _parse_octal(raw: bytes, what: str, where: str) -> int:
    text = raw.split(b"\0", 1)[0].strip()
    try:
        return int(text or b"0", 8)
    except ValueError:
        raise MixplaneError(f"{where}: bad {what} field {raw!r} in a tar header") from None


def parse_members(data: bytes | memoryview, where: str = "sample") -> dict[str, bytes | str]:
    """The members of one sample's bytes (its headers and data, as the index delimits them):
    `{extension: data}` plus `"__key__"`. Raises `MixplaneError` naming `where` if a header
    is damaged, the members' keys differ, an extension repeats or the bytes end early.

    Example:
        >>> data = tar_member("k.jpg", b"JPEG") + tar_member("k.txt", b"a cat")
        >>> parse_members(data)
        {'__key__': 'k', 'jpg': b'JPEG', 'txt': b'a cat'}
    """
    view = memoryview(data).cast("B")
    sample: dict[str, bytes | str] = {}
    position = 0
    while position < len(view):
        if position + BLOCK > len(view):
            raise MixplaneError(f"{where}: ends inside a tar header (byte {position})")
        header = bytes(view[position : position + BLOCK])
        if not any(header):
            break  # end blocks
        name, size = _check_header(header, f"{where} (byte {position})")
        start = position + BLOCK
        end = start + size
        if end > len(view):
            raise MixplaneError(
                f"{where}: member {name!r} needs {size} bytes, only {len(view) - start} remain"
            )
        key, ext = split_name(name)
        if "__key__" not in sample:
            sample["__key__"] = key
        elif sample["__key__"] != key:
            raise MixplaneError(
                f"{where}: member {name!r} belongs to key {key!r}, not {sample['__key__']!r}"
            )
        if ext in sample:
            raise MixplaneError(f"{where}: extension {ext!r} appears twice under key {key!r}")
        sample[ext] = bytes(view[start:end])
        position = end + (-size % BLOCK)
    if "__key__" not in sample:
        raise MixplaneError(f"{where}: no tar member in the sample's bytes")
    return sample


def _check_header(header: bytes, where: str) -> tuple[str, int]:
    """`(name, size)` of a regular-file ustar header whose checksum is right."""
    stored = _parse_octal(_field(header, _CHKSUM), "checksum", where)
    computed = sum(header[:148]) + 8 * 32 + sum(header[156:])
    if stored != computed:
        raise MixplaneError(
            f"{where}: tar header checksum {stored} but the header sums to {computed}; "
            "the shard is corrupt or the index points between headers"
        )
    if _field(header, _TYPE) not in _REGULAR:
        raise MixplaneError(f"{where}: tar member type {_field(header, _TYPE)!r} is not a file")
    name = _field(header, _NAME).split(b"\0", 1)[0]
    if _field(header, _MAGIC).startswith(b"ustar"):
        prefix = _field(header, _PREFIX).split(b"\0", 1)[0]
        if prefix:
            name = prefix + b"/" + name
    size = _parse_octal(_field(header, _SIZE), "size", where)
    return name.decode("utf-8", "replace"), size


def sample_digest(data: bytes | memoryview) -> int:
    """The digest the index keeps of a sample's bytes (headers, data and padding)."""
    return xxhash.xxh3_64_intdigest(data)


def encode_index(offsets: np.ndarray | list[int], digests: np.ndarray | list[int] | None) -> bytes:
    """A whole `.idx` file for samples starting at `offsets[:-1]` and ending at `offsets[-1]`,
    with each sample's digest (version 2), or without (`None`: version 1).

    Example:
        >>> data = encode_index([0, 2048, 4096], [7, 9])
        >>> offsets, digests = decode_index(data, "x.idx")
        >>> len(data), offsets.tolist(), digests.tolist()
        (64, [0, 2048, 4096], [7, 9])
    """
    offsets = np.asarray(offsets, dtype=OFFSET_DTYPE)
    if len(offsets) == 0:
        raise ValueError("an index has at least one offset (the end of the samples)")
    if digests is None:
        return HEADER.pack(MAGIC, 1, 0, len(offsets) - 1) + offsets.tobytes()
    digests = np.asarray(digests, dtype=OFFSET_DTYPE)
    if len(digests) != len(offsets) - 1:
        raise ValueError(f"{len(offsets) - 1} samples need as many digests, got {len(digests)}")
    header = HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(offsets) - 1)
    return header + offsets.tobytes() + digests.tobytes()


def decode_index(data: bytes | memoryview, where: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The n + 1 offsets of an `.idx` file's bytes and its n sample digests (None in a
    version 1 index), checked: magic, version, length, offsets starting at 0, increasing, on
    512-byte boundaries. Raises `MixplaneError` naming `where`.

    Example:
        >>> decode_index(encode_index([0, 1536], None), "x.idx")[0].tolist()
        [0, 1536]
    """
    raw = memoryview(data).cast("B")
    if len(raw) < HEADER_SIZE:
        raise MixplaneError(f"{where}: index is {len(raw)} bytes, shorter than its header")
    magic, version, _reserved, count = HEADER.unpack_from(raw)
    if magic != MAGIC:
        raise MixplaneError(f"{where}: not a mixplane image index (magic {magic!r})")
    if version not in READABLE_VERSIONS:
        raise MixplaneError(
            f"{where}: image format version {version}; this mixplane reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}, upgrade mixplane to read it"
        )
    digest_count = count if version >= 2 else 0
    expected = HEADER_SIZE + (count + 1 + digest_count) * OFFSET_DTYPE.itemsize
    if len(raw) != expected:
        raise MixplaneError(
            f"{where}: index has {len(raw)} bytes, expected {expected} for {count} samples; "
            "it is truncated or corrupt"
        )
    offsets = np.frombuffer(raw, dtype=OFFSET_DTYPE, offset=HEADER_SIZE, count=count + 1)
    if offsets[0] != 0:
        raise MixplaneError(f"{where}: first sample offset is {offsets[0]}, expected 0")
    steps = np.diff(offsets.astype(np.int64))
    if np.any(steps <= 0) or np.any(offsets % BLOCK):
        raise MixplaneError(
            f"{where}: sample offsets are not increasing multiples of {BLOCK}; the index is corrupt"
        )
    if version < 2:
        return offsets, None
    start = HEADER_SIZE + (count + 1) * OFFSET_DTYPE.itemsize
    return offsets, np.frombuffer(raw, dtype=OFFSET_DTYPE, offset=start, count=count)


def tar_size(offsets: np.ndarray) -> int:
    """The size of the tar an index describes: its samples, then the two end blocks."""
    return int(offsets[-1]) + len(END_BLOCKS)
