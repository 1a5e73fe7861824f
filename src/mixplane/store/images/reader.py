"""Reading one image shard by sample: any sample is one range read of the tar, located by
the `.idx` (see `store.images.format`).

Opening a shard reads the index (24 bytes + 16 per sample) and the tar's size; local tars
are read with `pread`, remote ones with ranged reads through fsspec (retried, see
`io.retry`), or from local copies of the tar and its index (`copies`, e.g. the loader's node
cache; a copy of the index alone reads the tar by ranges). Reading many samples in index
order merges neighbouring ranges into one read. Every sample read is checked against the
digest its index keeps (version 2): a remote read that does not match is fetched again, a
local one is reported at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from mixplane.errors import MixplaneError
from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.io.retry import CorruptRead, Retry, read_exact
from mixplane.io.urls import url_filesystem
from mixplane.store.images.format import (
    IDX,
    META,
    TAR,
    decode_index,
    parse_members,
    sample_digest,
    tar_size,
)

# Samples closer than this in the tar are fetched in one read (the gap is read and dropped:
# cheaper than another request on object storage, and than another syscall locally).
MERGE_GAP = 256 << 10


class ImageShardReader:
    """One image shard `folder_url/STEM.{tar,idx,meta.parquet}`, sample by sample.

    Example:
        >>> shard = ImageShardReader("out", "part-00000")  # doctest: +SKIP
        >>> len(shard), shard.byte_range(0)  # doctest: +SKIP
        (120, (0, 5632))
        >>> sorted(shard.sample(0))  # doctest: +SKIP
        ['__key__', 'jpg', 'json', 'txt']

    `copies`: local files holding the shard's tar and index (a cache's verified copies of
    remote ones), read instead of `folder_url`; the shard keeps its URLs' names in messages.
    A copy of the index alone (`(None, idx_copy)`) reads the remote tar by ranges.
    `on_read(bytes)` hears of every remote read.
    """

    def __init__(
        self,
        folder_url: str,
        stem: str,
        storage_options: dict[str, Any] | None = None,
        copies: tuple[str | None, str] | None = None,
        retry: Retry | None = None,
        on_read: Callable[[int], None] | None = None,
    ):
        self.folder = folder_url.rstrip("/")
        self.stem = stem
        self.storage_options = storage_options or {}
        self.tar_url = join_url(self.folder, stem + TAR)
        self.idx_url = join_url(self.folder, stem + IDX)
        self.meta_url = join_url(self.folder, stem + META)
        self._copies = copies
        tar_copy = copies[0] if copies else None
        self._local = tar_copy is not None or is_local(self.tar_url)
        self._tar_file = tar_copy or (local_path(self.tar_url) if self._local else None)
        self._fd: int | None = None
        self._fs, self._tar_path = url_filesystem(self.tar_url, self.storage_options)
        self.retry = retry or Retry()
        self.on_read = on_read
        self.offsets, self.digests = decode_index(self._read_index(), self.idx_url)
        size = self._size()
        if size != tar_size(self.offsets):
            raise MixplaneError(
                f"{self.tar_url}: {size} bytes but its index says {tar_size(self.offsets)} "
                f"({len(self)} samples); the shard is truncated or does not match its index"
            )

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __repr__(self) -> str:
        return f"ImageShardReader({self.tar_url!r}, samples={len(self)})"

    def __getstate__(self) -> dict[str, Any]:
        # A file descriptor does not travel to another process; it is reopened there.
        return self.__dict__ | {"_fd": None}

    def __del__(self) -> None:
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)

    def byte_range(self, index: int) -> tuple[int, int]:
        """`(start, end)` of sample `index` in the tar: its headers, data and padding."""
        index = self._check(index)
        return int(self.offsets[index]), int(self.offsets[index + 1])

    def sample(self, index: int) -> dict[str, Any]:
        """Sample `index`: its members' bytes by extension, and `"__key__"`."""
        return self.samples([index])[0]

    def samples(self, indices: Iterable[int]) -> list[dict[str, Any]]:
        """Samples `indices`, in the order given; samples near each other in the tar are
        read together, so indices in increasing order cost few reads."""
        wanted = [self._check(i) for i in indices]
        order = sorted(range(len(wanted)), key=wanted.__getitem__)
        found: list[dict[str, Any] | None] = [None] * len(wanted)
        # The runs cut the sorted sequence in order, so `order` names each sample's slot.
        slots = iter(order)
        for run in _runs([wanted[i] for i in order], self.offsets):
            base = int(self.offsets[run[0]])
            data = memoryview(self._read_run(run))
            for sample in run:
                lo, hi = int(self.offsets[sample]) - base, int(self.offsets[sample + 1]) - base
                found[next(slots)] = parse_members(data[lo:hi], self._where(sample))
        return found  # type: ignore[return-value]

    def metadata(self, columns: Sequence[str] | None = None):
        """The shard's per-sample metadata as an Arrow table, in sample order."""
        import pyarrow.parquet as pq

        fs, path = url_filesystem(self.meta_url, self.storage_options)
        with fs.open(path, "rb") as handle:
            return pq.read_table(handle, columns=list(columns) if columns else None)

    def _check(self, index: int) -> int:
        count = len(self)
        index = int(index)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError(f"sample {index} out of range for {self.tar_url} ({count})")
        return index

    def _where(self, index: int) -> str:
        return f"{self.tar_url} sample {index}"

    def _read_index(self) -> bytes:
        if self._copies is not None:
            with open(self._copies[1], "rb") as handle:
                return handle.read()
        fs, path = url_filesystem(self.idx_url, self.storage_options)
        try:
            with fs.open(path, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise MixplaneError(f"{self.idx_url} is missing; not an image shard") from None

    def _size(self) -> int:
        try:
            if self._local:
                return os.path.getsize(self._tar_file)  # type: ignore[arg-type]
            return int(self._fs.size(self._tar_path))
        except FileNotFoundError:
            raise MixplaneError(f"{self.tar_url} is missing beside its index") from None

    def _read_run(self, run: list[int]) -> bytes:
        """The bytes of samples `run` (increasing, read in one piece), checked."""
        start, end = int(self.offsets[run[0]]), int(self.offsets[run[-1] + 1])
        if self._local:
            return self._checked(run, self._read(start, end))
        where = f"{self.tar_url}: samples {run[0]}-{run[-1]} (bytes {start}-{end})"
        return self.retry.call(lambda: self._checked(run, self._read(start, end)), where)

    def _checked(self, run: list[int], data: bytes) -> bytes:
        """`data` if each sample of `run` in it has the digest the index keeps."""
        if self.digests is None:
            return data
        base, view = int(self.offsets[run[0]]), memoryview(data)
        for sample in run:
            lo, hi = int(self.offsets[sample]) - base, int(self.offsets[sample + 1]) - base
            found, kept = sample_digest(view[lo:hi]), int(self.digests[sample])
            if found != kept:
                message = (
                    f"{self._where(sample)}: its bytes hash to {found:016x}, the index says "
                    f"{kept:016x}"
                )
                if self._local:
                    raise MixplaneError(f"{message}; the shard is corrupt")
                raise CorruptRead(message)
        return data

    def _read(self, start: int, end: int) -> bytes:
        if not self._local:
            data = read_exact(self._fs, self._tar_path, start, end)
            if self.on_read is not None:
                self.on_read(len(data))
            return data
        if self._fd is None:
            self._fd = os.open(self._tar_file, os.O_RDONLY)  # type: ignore[arg-type]
        data = os.pread(self._fd, end - start, start)
        if len(data) != end - start:
            raise MixplaneError(f"{self.tar_url}: ends at byte {start + len(data)}, before {end}")
        return data


def _runs(sorted_indices: list[int], offsets: np.ndarray) -> list[list[int]]:
    """Cut increasing sample indices into runs read in one piece (gaps under MERGE_GAP)."""
    runs: list[list[int]] = []
    for index in sorted_indices:
        if runs and int(offsets[index]) - int(offsets[runs[-1][-1] + 1]) <= MERGE_GAP:
            runs[-1].append(index)
        else:
            runs.append([index])
    return runs
