"""Reading one token shard through memory maps: any document's tokens in O(1).

Opening a shard reads only the `.idx` (24 bytes + 8 per document); the `.bin` is mapped,
so `document(i)` is a view of `offsets[i+1] - offsets[i]` tokens and touches nothing else.
"""

from __future__ import annotations

import os
import posixpath
from typing import Any

import numpy as np

from mixplane.errors import MixplaneError
from mixplane.manifest import MANIFEST, file_digest, read_json
from mixplane.store.format import (
    BIN,
    FILE_SUFFIXES,
    HEADER_SIZE,
    IDX,
    MASK,
    MASK_DTYPE,
    MASKED_FORMAT_VERSION,
    META,
    OFFSET_DTYPE,
    OPTIONAL_FILES,
    decode_header,
    header_version,
    strip_suffix,
)


class ShardReader:
    """A memory-mapped token shard.

    `path` is the shard's stem or any of its files (`.bin`, `.idx`, `.meta.parquet`); a
    local path (remote shards are read through `TokenizedDataset`, which caches them).
    A version 2 shard also maps its `.mask` (`mask`: one 0/1 byte per token, 1 where the
    loss is taken); a version 1 shard has `mask` None (every token is trained on).

    Example:
        >>> shard = ShardReader("tokens/shard-00000-000")  # doctest: +SKIP
        >>> len(shard), shard.n_tokens, shard.dtype  # doctest: +SKIP
        (1200, 845113, dtype('uint16'))
        >>> shard.document(7)[:5]  # doctest: +SKIP
        memmap([ 464, 2068,  318,  257, 1332], dtype=uint16)
    """

    def __init__(self, path: str | os.PathLike):
        self.stem = strip_suffix(os.fspath(path))
        self.name = posixpath.basename(self.stem)
        self.bin_path = self.stem + BIN
        self.idx_path = self.stem + IDX
        self.meta_path = self.stem + META
        for file in (self.bin_path, self.idx_path):
            if not os.path.exists(file):
                raise MixplaneError(f"shard {self.name}: {file} is missing")
        self.dtype, self.offsets, self.version = _read_index(self.idx_path)
        self.n_tokens = int(self.offsets[-1])
        expected = self.n_tokens * self.dtype.itemsize
        actual = os.path.getsize(self.bin_path)
        if actual != expected:
            raise MixplaneError(
                f"shard {self.name}: {BIN} holds {actual} bytes but its index says "
                f"{self.n_tokens} tokens ({expected} bytes); the shard is truncated or corrupt"
            )
        self.tokens = _map_tokens(self.bin_path, self.dtype, self.n_tokens)
        self.mask_path = self.stem + MASK
        self.mask: np.ndarray | None = None
        if self.version == MASKED_FORMAT_VERSION:
            self.mask = _map_mask(self.mask_path, self.name, self.n_tokens)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __repr__(self) -> str:
        return f"ShardReader({self.stem!r}, documents={len(self)}, tokens={self.n_tokens})"

    def document(self, index: int) -> np.ndarray:
        """The tokens of document `index` (negative counts from the end), as a view."""
        start, stop = self._span(index)
        return self.tokens[start:stop]

    def document_mask(self, index: int) -> np.ndarray:
        """The loss mask of document `index` (ones for a shard without a `.mask`)."""
        start, stop = self._span(index)
        if self.mask is None:
            return np.ones(stop - start, dtype=MASK_DTYPE)
        return self.mask[start:stop]

    def _span(self, index: int) -> tuple[int, int]:
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError(f"document {index} out of range for shard {self.name} ({count})")
        return int(self.offsets[index]), int(self.offsets[index + 1])

    def lengths(self) -> np.ndarray:
        """Token count of every document."""
        return np.diff(self.offsets).astype(np.int64)

    def metadata(self, columns: list[str] | None = None):
        """The shard's per-document metadata as an Arrow table."""
        import pyarrow.parquet as pq

        return pq.read_table(self.meta_path, columns=columns)

    def verify(self, manifest: dict[str, Any] | None = None) -> None:
        """Recompute the files' hashes and compare them with the manifest's.

        `manifest` defaults to the `_manifest.json` beside the shard. Raises
        `MixplaneError` naming the shard and the file whose content changed.
        """
        if manifest is None:
            manifest_path = os.path.join(os.path.dirname(self.stem) or ".", MANIFEST)
            if not os.path.exists(manifest_path):
                raise MixplaneError(f"shard {self.name}: no {MANIFEST} beside it to verify against")
            manifest = read_json(manifest_path)
        verify_files(self.stem, manifest)
        self.check_offsets()

    def check_offsets(self) -> None:
        """Raise unless document offsets never decrease (reads the whole index)."""
        if np.any(np.diff(self.offsets.astype(np.int64)) < 0):
            raise MixplaneError(f"shard {self.name}: document offsets are not increasing")


def verify_files(stem: str, manifest: dict[str, Any]) -> None:
    """Compare the hashes of a shard's files with the manifest's, before parsing them.

    Raises `MixplaneError` naming the shard and the first file whose content changed.
    """
    name = posixpath.basename(stem)
    record = next((s for s in manifest.get("shards", []) if s["name"] == name), None)
    if record is None:
        raise MixplaneError(f"shard {name}: not listed in the dataset's manifest")
    for key, suffix in FILE_SUFFIXES.items():
        expected = record["files"].get(key)
        if expected is None and key in OPTIONAL_FILES:
            continue  # `.sums`: written before shards had them; `.mask`: version 2 only
        if not os.path.exists(stem + suffix):
            raise MixplaneError(f"shard {name}: {name}{suffix} is missing")
        size, digest = file_digest(stem + suffix)
        if size != expected["size"] or digest != expected["hash"]:
            raise MixplaneError(
                f"shard {name}: {name}{suffix} does not match the manifest "
                f"(size {size} vs {expected['size']}, {digest} vs {expected['hash']}); "
                "the file was changed or corrupted after it was written"
            )


def _read_index(path: str) -> tuple[np.dtype, np.ndarray, int]:
    name = posixpath.basename(path)
    with open(path, "rb") as handle:
        header = handle.read(HEADER_SIZE)
    dtype, n_docs = decode_header(header, name)
    expected = HEADER_SIZE + (n_docs + 1) * OFFSET_DTYPE.itemsize
    actual = os.path.getsize(path)
    if actual != expected:
        raise MixplaneError(
            f"{name}: index has {actual} bytes, expected {expected} for {n_docs} documents"
        )
    offsets = np.memmap(path, dtype=OFFSET_DTYPE, mode="r", offset=HEADER_SIZE, shape=n_docs + 1)
    if offsets[0] != 0:
        raise MixplaneError(f"{name}: first document offset is {offsets[0]}, expected 0")
    return dtype, offsets, header_version(header)


def _map_mask(path: str, name: str, count: int) -> np.ndarray:
    """A version 2 shard's `.mask`: exactly one byte per token."""
    if not os.path.exists(path):
        raise MixplaneError(f"shard {name}: its index is version 2 but {name}{MASK} is missing")
    actual = os.path.getsize(path)
    if actual != count:
        raise MixplaneError(
            f"shard {name}: {MASK} holds {actual} bytes but the shard has {count} tokens; "
            "the mask is truncated or corrupt"
        )
    return _map_tokens(path, MASK_DTYPE, count)


def _map_tokens(path: str, dtype: np.dtype, count: int) -> np.ndarray:
    # numpy cannot map an empty file; an empty shard has no token to map.
    if count == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=count)
