"""Checksums of a shard's token runs (`.sums`), so a reader can fetch and verify byte ranges.

A whole-file hash only checks a whole download. To read just the document pieces a rank
needs, the `.bin` is cut into *units*: each document from its first token, in runs of at
most `unit_tokens` tokens (empty documents have none). A unit never spans two documents,
so a piece of a short document costs one unit, and a piece of a long one at most two
partial units beyond its own bytes. The `.sums` file lists where each unit starts and the
xxh3_64 of its bytes; its own hash is in the manifest like every other file's.

Layout (little-endian):

| offset | size | content |
| --- | --- | --- |
| 0 | 8 | magic `MXTOKSUM` |
| 8 | 4 | version (1), uint32 |
| 12 | 4 | unit size in tokens, uint32 |
| 16 | 8 | number of units `n`, uint64 |
| 24 | 8 (n + 1) | token offset where each unit starts; the last is the shard's token count |
| 32 + 8 n | 8 n | xxh3_64 of each unit's bytes, uint64 |

Example:
    >>> starts = unit_starts(np.array([3, 0, 5]), unit_tokens=2)
    >>> starts.tolist()  # units [0,2) [2,3) [3,5) [5,7) [7,8), and the end
    [0, 2, 3, 5, 7, 8]
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import xxhash

from mixplane.errors import MixplaneError

MAGIC = b"MXTOKSUM"
VERSION = 1
HEADER = struct.Struct("<8sIIQ")
UNIT_TOKENS = 1024  # 2 KiB of uint16: ~0.8% of the tokens' size in checksums, small waste


def unit_starts(lengths: np.ndarray, unit_tokens: int = UNIT_TOKENS) -> np.ndarray:
    """Token offsets of the units of documents of `lengths` (concatenated), with the total
    token count appended."""
    lengths = np.asarray(lengths, dtype=np.int64)
    doc_starts = np.cumsum(lengths) - lengths
    per_doc = -(-lengths // unit_tokens)  # ceil; 0 for an empty document
    first = np.repeat(doc_starts, per_doc)
    run = np.arange(int(per_doc.sum())) - np.repeat(np.cumsum(per_doc) - per_doc, per_doc)
    return np.append(first + run * unit_tokens, int(lengths.sum())).astype(np.uint64)


def hash_units(data: bytes | memoryview, starts: np.ndarray, itemsize: int) -> np.ndarray:
    """xxh3_64 of each unit of `data` (tokens from `starts[0]`), `starts` as from
    `unit_starts` (n + 1 offsets, in tokens)."""
    view = memoryview(data).cast("B")
    edges = ((np.asarray(starts, dtype=np.int64) - int(starts[0])) * itemsize).tolist()
    digest = xxhash.xxh3_64_intdigest
    return np.array(
        [digest(view[lo:hi]) for lo, hi in zip(edges[:-1], edges[1:], strict=True)],
        dtype=np.uint64,
    )


@dataclass(frozen=True)
class UnitSums:
    """A shard's units: `starts` (n + 1 token offsets) and `hashes` (n)."""

    unit_tokens: int
    starts: np.ndarray
    hashes: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.starts.nbytes + self.hashes.nbytes

    def encode(self) -> bytes:
        header = HEADER.pack(MAGIC, VERSION, self.unit_tokens, len(self.hashes))
        return (
            header
            + np.asarray(self.starts, dtype="<u8").tobytes()
            + np.asarray(self.hashes, dtype="<u8").tobytes()
        )

    @classmethod
    def decode(cls, data: bytes | memoryview | np.ndarray, where: str) -> UnitSums:
        """Parse a `.sums` file (bytes or a mapped uint8 array; the arrays are views)."""
        raw = np.frombuffer(data, dtype=np.uint8)
        if len(raw) < HEADER.size:
            raise MixplaneError(f"{where}: {len(raw)} bytes, shorter than a checksum header")
        magic, version, unit_tokens, count = HEADER.unpack_from(raw[: HEADER.size].tobytes())
        if magic != MAGIC or version != VERSION:
            raise MixplaneError(f"{where}: not a version {VERSION} checksum file")
        expected = HEADER.size + 8 * (2 * count + 1)
        if len(raw) != expected:
            raise MixplaneError(f"{where}: {len(raw)} bytes, its header says {expected}")
        words = raw[HEADER.size :].view("<u8")
        return cls(unit_tokens, words[: count + 1], words[count + 1 :])

    def covering(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The units `[first, end)` that cover each token range `[lo, hi)` (non-empty)."""
        first = np.searchsorted(self.starts, np.asarray(lo, np.uint64), side="right") - 1
        end = np.searchsorted(self.starts, np.asarray(hi, np.uint64), side="left")
        return first.astype(np.int64), end.astype(np.int64)


def shard_sums(tokens: np.ndarray, lengths: np.ndarray, unit_tokens: int = UNIT_TOKENS):
    """The `UnitSums` of a whole shard's tokens (little-endian) and document lengths."""
    starts = unit_starts(lengths, unit_tokens)
    data = np.ascontiguousarray(tokens, dtype=tokens.dtype.newbyteorder("<"))
    return UnitSums(unit_tokens, starts, hash_units(data.data, starts, data.itemsize))
