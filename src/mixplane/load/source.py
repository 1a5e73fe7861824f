"""Reading document pieces out of memory-mapped token shards into packed sequences.

Shards open on first use (remote ones are copied once into the cache directory by
`TokenizedDataset`), so starting a loader touches no token file. A reader handed to another
process reopens its shards there.

Example:
    >>> source = TokenSource([("/data/web", "shard-00000-000")], eos_id=0)  # doctest: +SKIP
    >>> tokens = source.fill(shards, documents, spans, rows=8, seq_len=2048)  # doctest: +SKIP
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

# Below this many tokens per piece, one vectorized gather beats a slice copy per piece.
GATHER_BELOW = 64


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
        self._tokens: dict[int, np.ndarray] = {}
        self._sizes = np.zeros(len(self.shards), dtype=np.int64)  # tokens per opened shard
        self._datasets: dict[str, TokenizedDataset] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_readers"], state["_tokens"], state["_datasets"] = {}, {}, {}
        state["_sizes"] = np.zeros(len(self.shards), dtype=np.int64)
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
        found = self._tokens.get(number)
        if found is None:
            found = self._tokens[number] = self.reader(number).tokens.view(np.ndarray)
            self._sizes[number] = len(found)
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

    def fill(
        self,
        shard: np.ndarray,
        first: np.ndarray,
        take: np.ndarray,
        target: np.ndarray,
        eos: np.ndarray,
        size: int,
    ) -> np.ndarray:
        """A flat array of `size` tokens: `take[i]` tokens of shard `shard[i]` from token
        `first[i]` go to `target[i]`, followed by an EOS where `eos[i]` is set.

        The pieces, sorted by target, cover the output exactly.
        """
        out = np.empty(size, dtype=self.dtype)
        eos_at = (target + take)[eos]
        if len(take) and take.mean() < GATHER_BELOW:
            for number in np.unique(shard):
                mine = shard == number
                self._gather(self.tokens(int(number)), first[mine], take[mine], target[mine], out)
        else:
            self._concatenate(shard, first, take, target, eos, out)
        if len(eos_at):
            if self.eos_id is None:
                raise ValueError("an appended EOS is needed but no eos_id is known")
            out[eos_at] = self.eos_id
        return out

    def _concatenate(self, shard, first, take, target, eos, out) -> None:
        """One C-level copy of all pieces; a piece ending in an EOS takes one stored token
        too many, which the EOS then overwrites (unless that would read past the shard)."""
        tokens = {int(n): self.tokens(int(n)) for n in np.unique(shard)}
        ends = first + take + eos
        if np.any(ends > self._sizes[shard]):
            for number, begin, count, at in zip(
                shard.tolist(), first.tolist(), take.tolist(), target.tolist(), strict=True
            ):
                out[at : at + count] = tokens[number][begin : begin + count]
            return
        pieces = [
            tokens[number][begin:end]
            for number, begin, end in zip(
                shard.tolist(), first.tolist(), ends.tolist(), strict=True
            )
        ]
        np.concatenate(pieces, out=out)

    @staticmethod
    def _gather(tokens: np.ndarray, start: np.ndarray, take: np.ndarray, target, out) -> None:
        """Many short pieces at once: one fancy-indexed copy instead of a loop."""
        run_start = np.repeat(np.cumsum(take) - take, take)
        step = np.arange(int(take.sum())) - run_start
        out[np.repeat(target, take) + step] = tokens[np.repeat(start, take) + step]
