"""The token shards a loader reads from, memory-mapped (the copying is in `assemble`).

Shards open on first use, so starting a loader touches no token file. Remote shards come
through the machine's `ShardCache`: downloaded once, verified, and pinned while a planned
block needs them; with a `cache_limit`, a shard no planned block needs is unmapped and
unpinned, so the cache may evict it. A reader handed to another process reopens its shards
there.

Example:
    >>> source = TokenSource([("/data/web", "shard-00000-000")], eos_id=0)  # doctest: +SKIP
    >>> source.tokens(0)[:4]  # doctest: +SKIP
    array([ 464, 2068,  318,  257])
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from mixplane.errors import ConfigError, InputError
from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.io.machine_cache import cache_root
from mixplane.io.retry import Retry
from mixplane.io.sizes import size_text
from mixplane.load.plan.ranges import ShardKey
from mixplane.load.plan.resolved import ResolvedMixture, registered_manifests
from mixplane.load.read.dataset_files import DatasetFiles
from mixplane.load.read.range_reads import RangeReader
from mixplane.load.remote.shard_cache import ShardCache, cache_limit
from mixplane.store.format import SUMS
from mixplane.store.reader import ShardReader

# Whole shards smaller than this arrive about as soon as a batch's pieces read by ranges
# (two round trips of tens of milliseconds: the `.sums`, then the pieces side by side) on a
# link of a gigabit (16 MiB: 0.13 s); larger ones make the first batch wait. Measured over a
# 200 MB/s link, three 32 MB shards: 1.66 s to the first batch by ranges, 2.63 s whole.
RANGED_OPENING_BYTES = 16 * 2**20


class TokenSource:
    """Token reads for a fixed list of shards (`(dataset folder, shard stem)` pairs)."""

    def __init__(
        self,
        shards: Sequence[ShardKey],
        eos_id: int | None,
        dtype: np.dtype = np.dtype(np.int64),
        storage_options: dict[str, Any] | None = None,
        cache_dir: str | None = None,
        cache_limit: int | None = None,
        retry: Retry | None = None,
        working_sets: Sequence[tuple[np.ndarray, int | None]] = (),
        cache_mode: str = "shards",
        manifests: dict[str, dict[str, Any]] | None = None,
        masked: Sequence[bool] | None = None,
    ):
        self.shards = tuple(shards)
        self.eos_id = eos_id
        self.dtype = np.dtype(dtype)
        self.storage_options = storage_options or {}
        self.cache_dir = cache_dir
        self.cache_limit = cache_limit
        self.retry = retry or Retry()
        # Per component: its shards, and how many it reads at once (None: all of them).
        self.working_sets = tuple(working_sets)
        # "shards": remote shards are cached whole; "ranges": only the pieces read are fetched.
        self.cache_mode = cache_mode
        # Remote datasets' manifests as the catalog registered them (see `DatasetFiles`).
        self.manifests = dict(manifests or {})
        self.remote = np.array([not is_local(uri) for uri, _ in self.shards], dtype=bool)
        # Per shard: whether it carries a loss mask (a fine-tuning dataset's `.mask`).
        self.masked = np.zeros(len(self.shards), dtype=bool)
        if masked is not None:
            self.masked[:] = masked
        if cache_mode == "ranges" and (self.masked & self.remote).any():
            uri = self.shards[int(np.flatnonzero(self.masked & self.remote)[0])][0]
            raise ConfigError(
                f"{uri}: a fine-tuning dataset (its shards carry loss masks), which cache: "
                "ranges does not read; use cache: shards for this mixture"
            )
        self._reset()

    def _reset(self) -> None:
        _LIVE.add(self)
        self._readers: dict[int, ShardReader] = {}
        self._arrays: list[np.ndarray | None] = [None] * len(self.shards)  # opened shards
        self._masks: list[np.ndarray | None] = [None] * len(self.shards)  # their loss masks
        self._opened = np.zeros(len(self.shards), dtype=bool)
        self._pins = np.zeros(len(self.shards), dtype=np.int64)  # planned blocks using each
        self._kept = np.zeros(len(self.shards), dtype=bool)  # mapped for good once opened
        self._lingering: set[int] = set()  # released, still pinned until `settle`
        # Manifests and file lookups (checks the registered manifests on first building).
        self.files = DatasetFiles(
            self.shards, self.manifests, self.storage_options, self.cache_dir, self.retry
        )
        self._urls: list[str] | None = None
        self._cache: ShardCache | None = None
        self._ranges: RangeReader | None = None
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        keep = ("shards", "eos_id", "dtype", "storage_options", "cache_dir", "cache_limit",
                "retry", "working_sets", "cache_mode", "manifests", "remote",
                "masked")  # fmt: skip
        return {key: self.__dict__[key] for key in keep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    @property
    def cache(self) -> ShardCache:
        """The machine's cache of remote shards (made on first use, after checking that the
        limit holds every shard the mixture reads)."""
        if self._cache is None:
            self.files.load_manifests(np.flatnonzero(self.remote).tolist())
            if self.cache_limit is not None and self.cache_mode == "shards":
                self._check_room()
            self._cache = ShardCache(
                cache_root(self.cache_dir), self.cache_limit, self.storage_options, self.retry
            )
            # Keep every shard of the mixture before the files of other mixtures that share
            # the machine's cache (a `Forecast` refines this as the reader goes).
            urls = self.remote_urls()
            if self.cache_mode == "ranges":  # each shard's `.sums` (refused now if one has none)
                numbers = np.flatnonzero(self.remote).tolist()
                urls = [self.ranges.sums_file(number).url for number in numbers]
            self._cache.plan(dict.fromkeys(urls, 0))
        return self._cache

    @property
    def ranges(self) -> RangeReader:
        """Fetches the pieces of remote shards read with `cache: ranges`."""
        with self._lock:
            if self._ranges is None:
                self._ranges = RangeReader(self)
            return self._ranges

    def piece_sources(
        self, shard: np.ndarray, first: np.ndarray, take: np.ndarray, by_ranges: bool = False
    ) -> tuple[list[Any], np.ndarray, np.ndarray]:
        """What `copy_pieces` reads pieces `[first, first + take)` of `shard` from: the
        opened shards, and with `cache: ranges` (or `by_ranges`) the fetched ranges of
        remote ones (with the pieces' indices moved to them)."""
        if (self.cache_mode == "ranges" or by_ranges) and self.remote.any():
            return self.ranges.read(shard, first, take)
        return self._arrays, shard, first

    def opening_by_ranges(self, shard: np.ndarray) -> bool:
        """Whether a reader's opening block reads its pieces by ranges rather than wait for
        remote shards to download whole: they are not cached yet, they hold more than
        `RANGED_OPENING_BYTES`, and they have range checksums. So the first batch waits for
        kilobytes, not for large shards."""
        if self.cache_mode != "shards" or not self.remote.any() or self.masked.any():
            return False  # masks are read from cached shards only
        numbers, waiting = self.waiting_for(shard)
        return waiting > RANGED_OPENING_BYTES and all(
            self.files.manifest_entry(self.shards[n][0], self.shards[n][1] + SUMS) is not None
            for n in numbers
        )

    def waiting_for(self, shard: np.ndarray) -> tuple[list[int], int]:
        """The remote shards among `shard` not opened yet, and the bytes of those of them
        not in the cache."""
        cache = self.cache  # the manifests are read side by side first
        numbers = np.unique(shard)
        numbers = numbers[self.remote[numbers] & ~self._opened[numbers]].tolist()
        files = [self.files.remote_file(n) for n in numbers]
        return numbers, sum(file.size for file in files if not cache.present(file))

    def stats(self) -> dict[str, Any]:
        """What this process fetched: the cache's counters (and the ranges' with
        `cache: ranges`), retries, and bytes downloaded per byte of tokens read."""
        out = self.cache.stats() if self.remote.any() else {}
        if self._ranges is not None:
            ranges = dict(self._ranges.counters)
            out["ranges"] = ranges
            if ranges["consumed_bytes"] and self.cache_mode == "ranges":
                downloaded = ranges["bytes"] + out["downloaded_bytes"]
                out["downloaded_per_consumed"] = downloaded / ranges["consumed_bytes"]
        return out

    def _check_room(self) -> None:
        """Refuse, before reading, a limit that cannot hold the shards a reader needs at
        once: all of a component's shards when its documents are shuffled together (each
        epoch reads every one again), else twice its `shuffle_window` (the window being read
        and the next), the largest ones counted."""
        remote = np.flatnonzero(self.remote)
        sizes = {number: self._cached_bytes(number) for number in remote.tolist()}
        sets = self.working_sets or [(remote, None)]
        needed, whole = 0, True
        for shards, at_once in sets:
            mine = sorted(sizes[n] for n in np.unique(shards).tolist() if n in sizes)
            whole &= at_once is None or at_once >= len(mine)
            needed += sum(mine if at_once is None else mine[-at_once:])
        needed = min(needed, sum(sizes.values()))
        if needed <= self.cache_limit:  # type: ignore[operator]
            return
        limit = size_text(self.cache_limit)  # type: ignore[arg-type]
        if whole:
            problem = (
                f"cache_limit {limit} is smaller than the {len(sizes)} remote shards this "
                f"mixture reads ({size_text(needed)}); each epoch reads every one of them, so "
                "a smaller cache would download them again and again: set shuffle_window "
                "(shards shuffled together) so fewer are needed at once, "
            )
        else:
            problem = (
                f"cache_limit {limit} is smaller than what this mixture reads at once: two "
                f"shuffle windows per component ({size_text(needed)}); lower shuffle_window, "
            )
        raise ConfigError(problem + f"or raise cache_limit to at least {needed:,} bytes")

    def _cached_bytes(self, number: int) -> int:
        """What a remote shard takes in the cache: its tokens, and its loss mask if any."""
        size = self.files.remote_file(number).size
        return size + self.files.mask_file(number).size if self.masked[number] else size

    def remote_urls(self) -> list[str]:
        """The token files of every remote shard."""
        if self._urls is None:
            numbers = np.flatnonzero(self.remote).tolist()
            self._urls = [self.files.remote_url(n) for n in numbers]
        return self._urls

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
                    reader = self.files.dataset(uri).shard(stem)
                self._readers[number] = reader
            return self._readers[number]

    def tokens(self, number: int) -> np.ndarray:
        """A shard's tokens as a plain array over the mapped file (a remote shard stays
        pinned in the cache from then on).

        Slicing a `np.memmap` builds a memmap object per slice (tens of microseconds);
        a plain view of the same mapping slices in well under one.
        """
        found = self._arrays[number]
        if found is None:
            if self.remote[number]:
                self._pin(number, for_good=True)
                return self._arrays[number]  # type: ignore[return-value]
            reader = self.reader(number)
            if self.masked[number] and reader.mask is None:
                raise InputError(f"shard {reader.name}: registered with a loss mask, has none")
            if reader.mask is not None:
                self._masks[number] = reader.mask.view(np.ndarray)
            found = self._arrays[number] = reader.tokens.view(np.ndarray)
            self._opened[number] = True
        return found

    def _pin(self, number: int, for_good: bool = False) -> None:
        with self._lock:
            if not self._opened[number]:
                file = self.files.remote_file(number)
                path = self.cache.acquire(file)
                dtype = self.files.stored_dtype(number)
                tokens = np.memmap(path, dtype, mode="r") if file.size else np.zeros(0, dtype)
                self._arrays[number] = tokens.view(np.ndarray)
                if self.masked[number]:
                    self._masks[number] = self._cached_mask(number)
                self._opened[number] = True
            self._pins[number] += 1
            # Without a limit nothing is evicted, so a shard stays mapped once opened.
            self._kept[number] |= for_good or self.cache_limit is None

    def release(self, pinned: np.ndarray, linger: bool = False) -> None:
        """A planned block no longer needs the remote shards `pinned` (from `open`). With
        `linger`, a shard no other block holds stays mapped and pinned until `settle`: a
        stream's next block mostly reads the same shards, and mapping and pinning them
        again would cost more than copying the block's tokens."""
        with self._lock:
            for number in pinned.tolist():
                self._pins[number] -= 1
                if self._pins[number] == 0 and not self._kept[number]:
                    if linger:
                        self._lingering.add(number)
                    else:
                        self._unpin(number)

    def settle(self, keep: np.ndarray | None = None) -> None:
        """Let go of the shards lingering after `release(..., linger=True)`, except those
        in `keep` (the remote shards of the block planned next), so that the shards pinned
        are never more than those of the blocks being read."""
        with self._lock:
            keep_set = set() if keep is None else set(keep.tolist())
            for number in list(self._lingering):
                if number in keep_set:
                    continue
                self._lingering.discard(number)
                if self._opened[number] and self._pins[number] == 0 and not self._kept[number]:
                    self._unpin(number)

    def _unpin(self, number: int) -> None:
        self._arrays[number] = None
        self._opened[number] = False
        self.cache.release(self.files.remote_url(number))
        if self._masks[number] is not None:
            self._masks[number] = None
            self.cache.release(self.files.mask_file(number).url)

    def _cached_mask(self, number: int) -> np.ndarray:
        """A remote shard's loss mask, copied into the cache and checked against the
        manifest's hash like its tokens."""
        file = self.files.mask_file(number)
        path = self.cache.acquire(file)
        if not file.size:
            return np.zeros(0, np.uint8)
        return np.memmap(path, np.uint8, mode="r").view(np.ndarray)

    @property
    def masks(self) -> list[np.ndarray | None]:
        """Loss masks by shard number (None for shards without one or not opened yet)."""
        return self._masks

    def stored_lengths(self, number: int) -> np.ndarray:
        """Token count of every document of a shard, as stored (without an appended EOS)."""
        uri, stem = self.shards[number]
        if is_local(uri):
            return self.reader(number).lengths()
        # Remote: the metadata's token counts, so no token file is fetched before it is read.
        return self.files.metadata_column(number, "n_tokens").astype(np.int64)

    @property
    def arrays(self) -> list[np.ndarray | None]:
        """Token arrays by shard number (None for shards not opened yet)."""
        return self._arrays

    def open(self, shard: np.ndarray, pin: bool = True) -> np.ndarray:
        """Open the shards numbered in `shard` that are not open yet, and pin the remote
        ones for a planned block: returns their numbers, for `release` once it is filled.
        Without `pin`, remote shards are left alone (the block reads them by ranges)."""
        if not self.remote.any():
            missing = ~self._opened[shard]
            if missing.any():
                for number in np.unique(shard[missing]).tolist():
                    self.tokens(number)
            return _NONE
        numbers = np.unique(shard)
        pinned = numbers[self.remote[numbers]]
        for number in numbers[~self.remote[numbers]].tolist():
            self.tokens(number)
        if self.cache_mode == "ranges" or not pin:
            return _NONE  # remote pieces are fetched when the block is filled
        for number in pinned.tolist():
            self._pin(number)
        return pinned

    def close(self) -> None:
        """Unmap every shard and drop this process's pins in the cache."""
        with self._lock:
            self._arrays = [None] * len(self.shards)
            self._masks = [None] * len(self.shards)
            self._opened[:] = False
            self._pins[:] = 0
            self._kept[:] = False
            self._lingering.clear()
            if self._ranges is not None:
                self._ranges.close()
            if self._cache is not None:
                self._cache.close()


_NONE = np.zeros(0, dtype=np.int64)
_LIVE: weakref.WeakSet[TokenSource] = weakref.WeakSet()


def token_source(resolved: ResolvedMixture, dtype: np.dtype = np.dtype(np.int64)) -> TokenSource:
    """The `TokenSource` that reads a resolved mixture's shards, as its spec says (cache
    folder, limit and mode; each leaf's shards as one working set).

    Example:
        >>> source = token_source(resolve_mixture("mixture.yaml"))  # doctest: +SKIP
    """
    spec = resolved.spec
    window = spec.shuffle_window
    at_once = None if window is None else 2 * window  # the window read and the next
    masked_uris = {info["uri"] for info in resolved.datasets if info.get("masked")}
    if masked_uris and not spec.labels:
        names = ", ".join(i["dataset"] for i in resolved.datasets if i["uri"] in masked_uris)
        raise ConfigError(
            f"{names}: fine-tuning data whose loss masks only batches with labels carry; set "
            "labels: huggingface (or true, Megatron's) in the mixture, or every token of the "
            "conversations would be trained on"
        )
    return TokenSource(
        resolved.shards,
        resolved.eos_id,
        dtype,
        spec.storage_options,
        spec.cache_dir,
        cache_limit(spec.cache_limit),
        working_sets=[(resolved.shards_of(c), at_once) for c in range(len(resolved.ranges))],
        cache_mode=spec.cache,
        manifests=registered_manifests(resolved.datasets),
        masked=[uri in masked_uris for uri, _ in resolved.shards],
    )


def _start_over_in_child() -> None:
    """A forked process (a DataLoader worker) shares no threads, locks or pins with its
    parent: every source there starts over, its shards reopened on first use (a prefetch
    pool copied from the parent would have no threads behind it)."""
    for source in list(_LIVE):
        source._reset()


os.register_at_fork(after_in_child=_start_over_in_child)
