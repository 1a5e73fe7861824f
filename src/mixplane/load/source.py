"""The token shards a loader reads from, memory-mapped (the copying is in `assemble`).

Shards open on first use (remote ones are copied once into the cache directory by
`TokenizedDataset`), so starting a loader touches no token file. A reader handed to another
process reopens its shards there.

Example:
    >>> source = TokenSource([("/data/web", "shard-00000-000")], eos_id=0)  # doctest: +SKIP
    >>> source.tokens(0)[:4]  # doctest: +SKIP
    array([ 464, 2068,  318,  257])
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.load.ranges import ShardKey
from mixplane.store.dataset import TokenizedDataset
from mixplane.store.reader import ShardReader


class TokenSource:
    """Token reads for a fixed list of shards (`(dataset folder, shard stem)` pairs)."""

    def __init__(
        self,
        shards: Sequence[ShardKey],
        eos_id: int | None,
        dtype: np.dtype = np.dtype(np.int64),
        storage_options: dict[str, Any] | None = None,
        cache_dir: str | None = None,
    ):
        self.shards = tuple(shards)
        self.eos_id = eos_id
        self.dtype = np.dtype(dtype)
        self.storage_options = storage_options or {}
        self.cache_dir = cache_dir
        self._readers: dict[int, ShardReader] = {}
        self._arrays: list[np.ndarray | None] = [None] * len(self.shards)  # opened shards
        self._opened = np.zeros(len(self.shards), dtype=bool)
        self._datasets: dict[str, TokenizedDataset] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_readers"], state["_datasets"] = {}, {}
        state["_arrays"] = [None] * len(self.shards)
        state["_opened"] = np.zeros(len(self.shards), dtype=bool)
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def reader(self, number: int) -> ShardReader:
        found = self._readers.get(number)
        if found is not None:
            return found
        with self._lock:
            if number not in self._readers:
                uri, stem = self.shards[number]
                if is_local(uri):
                    reader = ShardReader(local_path(join_url(uri, stem)))
                else:
                    reader = self._dataset(uri).shard(stem)
                self._readers[number] = reader
            return self._readers[number]

    def tokens(self, number: int) -> np.ndarray:
        """A shard's tokens as a plain array over the mapped file.

        Slicing a `np.memmap` builds a memmap object per slice (tens of microseconds);
        a plain view of the same mapping slices in well under one.
        """
        found = self._arrays[number]
        if found is None:
            found = self._arrays[number] = self.reader(number).tokens.view(np.ndarray)
            self._opened[number] = True
        return found

    def _dataset(self, uri: str) -> TokenizedDataset:
        if uri not in self._datasets:
            self._datasets[uri] = TokenizedDataset(uri, self.storage_options, self.cache_dir)
        return self._datasets[uri]

    def metadata_column(self, number: int, column: str) -> np.ndarray:
        """One column of a shard's `.meta.parquet` (read from where the dataset lives)."""
        import pyarrow.parquet as pq

        from mixplane.io.urls import url_filesystem

        uri, stem = self.shards[number]
        fs, path = url_filesystem(join_url(uri, stem + ".meta.parquet"), self.storage_options)
        with fs.open(path, "rb") as handle:
            return pq.read_table(handle, columns=[column]).column(column).to_numpy()

    def stored_lengths(self, number: int) -> np.ndarray:
        """Token count of every document of a shard, as stored (without an appended EOS)."""
        uri, stem = self.shards[number]
        if is_local(uri):
            return self.reader(number).lengths()
        # Remote: the metadata's token counts, so no token file is fetched before it is read.
        return self.metadata_column(number, "n_tokens").astype(np.int64)

    @property
    def arrays(self) -> list[np.ndarray | None]:
        """Token arrays by shard number (None for shards not opened yet)."""
        return self._arrays

    def open(self, shard: np.ndarray) -> None:
        """Open the shards numbered in `shard` that are not open yet."""
        missing = ~self._opened[shard]
        if missing.any():
            for number in np.unique(shard[missing]).tolist():
                self.tokens(number)
