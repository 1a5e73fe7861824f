"""Reading only the bytes of the document pieces a block needs (`cache: ranges`).

For shards too big or too many to cache whole, a block's pieces are widened to the checksum
units that hold them (`store.checksums`), joined when they touch or nearly do, and fetched as
ranged GETs in parallel; every unit is checked against its xxh3_64 before its tokens are
used. A bad or short body is fetched again (with the retry policy's backoff) and, if it stays
bad, the read fails naming the shard and the bytes. The `.sums` files come through the
machine's `ShardCache` (downloaded once per machine, verified whole against the manifest),
and a bounded number of them stay parsed in memory.

`plan_ranges` is pure: which byte intervals to fetch for which pieces.

Example:
    >>> reader = RangeReader(source)  # doctest: +SKIP
    >>> arrays, shard, first = reader.read(shard, first, take)  # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.io.atomic import join_url
from mixplane.io.retry import CorruptRead
from mixplane.io.urls import url_filesystem
from mixplane.load.ranges import SHARD_SPAN
from mixplane.load.shard_cache import RemoteFile, read_range
from mixplane.store.checksums import UnitSums, hash_units
from mixplane.store.format import SUMS

if TYPE_CHECKING:
    from mixplane.load.source import TokenSource

GAP_BYTES = 8 * 1024  # join two ranges this close: one request costs more than the gap
CHUNK_BYTES = 4 * 2**20  # at most this much per GET, so a long range is fetched in parallel
SUMS_MEMORY = 64 * 2**20  # parsed `.sums` kept in memory, most recently used first


@dataclass(frozen=True)
class RangePlan:
    """Intervals to fetch, `[lo, hi)` in units of shard `shard`, sorted by shard then unit,
    and, for each piece, the interval that holds it."""

    shard: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    interval: np.ndarray


def plan_ranges(
    shard: np.ndarray,
    first: np.ndarray,
    take: np.ndarray,
    sums: Callable[[int], UnitSums],
    itemsize: int,
    gap_bytes: int = GAP_BYTES,
) -> RangePlan:
    """The unit intervals covering pieces `tokens[first, first + take)` of shards `shard`
    (every `take` > 0), intervals of one shard at most `gap_bytes` apart joined."""
    out_shard, out_lo, out_hi = [], [], []
    first_unit = np.empty(len(shard), dtype=np.int64)
    for number in np.unique(shard).tolist():
        mine = shard == number
        units = sums(number)
        lo, hi = units.covering(first[mine], first[mine] + take[mine])
        first_unit[mine] = lo
        order = np.argsort(lo, kind="stable")
        lo, hi = lo[order], np.maximum.accumulate(hi[order])
        starts = units.starts.astype(np.int64)
        # A new interval begins where the bytes skipped since the previous reach exceed the gap.
        skipped = (starts[lo[1:]] - starts[hi[:-1]]) * itemsize
        begins = np.concatenate(([True], skipped > gap_bytes))
        firsts = np.flatnonzero(begins)
        lasts = np.append(firsts[1:], len(lo)) - 1
        out_shard.append(np.full(len(firsts), number, dtype=np.int64))
        out_lo.append(lo[firsts])
        out_hi.append(hi[lasts])
    empty = np.zeros(0, dtype=np.int64)
    plan_shard = np.concatenate([empty, *out_shard])
    plan_lo = np.concatenate([empty, *out_lo])
    plan_hi = np.concatenate([empty, *out_hi])
    # Each piece's interval: the last one of its shard starting at or before its first unit.
    keys = plan_shard * SHARD_SPAN + plan_lo
    interval = np.searchsorted(keys, shard * SHARD_SPAN + first_unit, side="right") - 1
    return RangePlan(plan_shard, plan_lo, plan_hi, interval)


class RangeReader:
    """Fetches and verifies the token ranges of remote pieces for a `TokenSource`."""

    def __init__(self, source: TokenSource, threads: int = 16):
        self.source = source
        self.threads = threads
        self.gap_bytes = GAP_BYTES
        self._sums: OrderedDict[int, UnitSums] = OrderedDict()
        self._sums_bytes = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        names = ("requests", "bytes", "consumed_bytes", "unit_mismatches")
        self.counters = dict.fromkeys(names, 0)

    def read(
        self, shard: np.ndarray, first: np.ndarray, take: np.ndarray
    ) -> tuple[list[Any], np.ndarray, np.ndarray]:
        """Sources and indices for `copy_pieces`: the remote pieces (`take` > 0) of `shard`
        now point into fetched intervals, appended after the source's own arrays."""
        on_remote = self.source.remote[shard]
        remote = on_remote & (take > 0)
        arrays: list[Any] = list(self.source.arrays)
        if not on_remote.any():
            return arrays, shard, first
        shard, first = shard.copy(), first.copy()
        # Pieces that are only an appended EOS read nothing: point them at an empty array.
        shard[on_remote & ~remote], first[on_remote & ~remote] = len(arrays), 0
        arrays.append(_EMPTY)
        if not remote.any():
            return arrays, shard, first
        r_shard, r_first, r_take = shard[remote], first[remote], take[remote]
        self._load_sums(np.unique(r_shard).tolist())
        itemsize = self.source.stored_dtype(int(r_shard[0])).itemsize
        plan = plan_ranges(r_shard, r_first, r_take, self.sums, itemsize, self.gap_bytes)
        fetched, base = self._fetch(plan)
        shard[remote] = len(arrays) + plan.interval
        first[remote] = r_first - base[plan.interval]
        self._count("consumed_bytes", int(r_take.sum()) * itemsize)
        return arrays + fetched, shard, first

    # -- checksums -----------------------------------------------------------------------

    def sums(self, number: int) -> UnitSums:
        with self._lock:
            found = self._sums.get(number)
            if found is not None:
                self._sums.move_to_end(number)
                return found
        return self._load_one(number)

    def _load_sums(self, numbers: list[int]) -> None:
        missing = [n for n in numbers if n not in self._sums]
        if len(missing) > 1:
            list(self._executor().map(self._load_one, missing))
        elif missing:
            self._load_one(missing[0])

    def _load_one(self, number: int) -> UnitSums:
        file = self.sums_file(number)
        cache = self.source.cache
        path = cache.acquire(file)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        finally:
            cache.release(file.url)
        units = UnitSums.decode(data, file.url)
        with self._lock:
            if number not in self._sums:
                self._sums[number] = units
                self._sums_bytes += units.nbytes
            while self._sums_bytes > SUMS_MEMORY and len(self._sums) > 1:
                _, dropped = self._sums.popitem(last=False)
                self._sums_bytes -= dropped.nbytes
        return units

    def sums_file(self, number: int) -> RemoteFile:
        """A shard's `.sums` with the size and hash its manifest gives."""
        uri, stem = self.source.shards[number]
        entry = self.source.manifest_entry(uri, stem + SUMS)
        if entry is None:
            raise ConfigError(
                f"{uri}: shard {stem} has no range checksums ({stem + SUMS}): the dataset was "
                "tokenized before mixplane wrote them; tokenize it again to read it with "
                "cache: ranges, or read whole shards (cache: shards, the default)"
            )
        return RemoteFile(join_url(uri, stem + SUMS), int(entry["size"]), entry["hash"])

    # -- fetching ------------------------------------------------------------------------

    def _fetch(self, plan: RangePlan) -> tuple[list[np.ndarray], np.ndarray]:
        """Each interval's tokens, fetched in chunks of whole units, in parallel, and the
        token each one starts at in its shard."""
        buffers, jobs = [], []
        base = np.empty(len(plan.lo), dtype=np.int64)
        intervals = zip(plan.shard.tolist(), plan.lo.tolist(), plan.hi.tolist(), strict=True)
        for i, (number, lo, hi) in enumerate(intervals):
            units = self.sums(number)
            dtype = self.source.stored_dtype(number)
            itemsize = dtype.itemsize
            base[i] = int(units.starts[lo])
            begin = int(base[i]) * itemsize
            buffer = np.empty(int(units.starts[hi]) * itemsize - begin, dtype=np.uint8)
            buffers.append(buffer.view(dtype))
            chunk_units = max(1, CHUNK_BYTES // (units.unit_tokens * itemsize))
            for u in range(lo, hi, chunk_units):
                jobs.append((number, units, u, min(hi, u + chunk_units), buffer, begin, itemsize))
        list(self._executor().map(lambda job: self._fetch_chunk(*job), jobs))
        return buffers, base

    def _fetch_chunk(self, number, units, lo, hi, buffer, begin, itemsize) -> None:
        url = self.source.remote_url(number)
        start, end = int(units.starts[lo]) * itemsize, int(units.starts[hi]) * itemsize
        fs, path = url_filesystem(url, self.source.storage_options)

        def read() -> None:
            data = read_range(fs, path, start, end)
            got = hash_units(data, units.starts[lo : hi + 1], itemsize)
            bad = np.flatnonzero(got != units.hashes[lo:hi])
            if len(bad):
                self._count("unit_mismatches")
                unit = lo + int(bad[0])
                raise CorruptRead(
                    f"checksum unit {unit} (bytes {int(units.starts[unit]) * itemsize}-"
                    f"{int(units.starts[unit + 1]) * itemsize}) does not match the shard's "
                    ".sums: the remote shard is not the one that was registered"
                )
            buffer[start - begin : end - begin] = np.frombuffer(data, dtype=np.uint8)
            self._count("requests")
            self._count("bytes", len(data))

        self.source.retry.call(read, what=f"{url} bytes {start}-{end}")

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="mixplane-range")
            return self._pool

    def _count(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self.counters[key] += amount

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


_EMPTY = np.zeros(0, dtype=np.uint8)
