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

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mixplane.errors import ConfigError, InputError
from mixplane.io.atomic import join_url
from mixplane.io.retry import CorruptRead, Retry, describe, is_transient
from mixplane.io.sizes import parse_size
from mixplane.io.urls import S3_CONNECTIONS, url_filesystem
from mixplane.load.plan.ranges import SHARD_SPAN, ShardKey
from mixplane.load.remote.shard_cache import RemoteFile, ShardCache
from mixplane.store.checksums import UnitSums, hash_units
from mixplane.store.format import SUMS


class Shards(Protocol):
    """What a `RangeReader` reads for: the shards and their remote copies (a `TokenSource`;
    named here so this module needs nothing from the one that uses it)."""

    shards: tuple[ShardKey, ...]
    remote: np.ndarray  # per shard: True when it is remote
    cache_mode: str
    retry: Retry
    storage_options: dict[str, Any]

    @property
    def arrays(self) -> Sequence[np.ndarray | None]: ...  # per shard: tokens, once opened
    @property
    def cache(self) -> ShardCache: ...
    def stored_dtype(self, number: int) -> np.dtype: ...
    def remote_url(self, number: int) -> str: ...
    def manifest_entry(self, uri: str, name: str) -> dict[str, Any] | None: ...
    def fetch_whole(self, uri: str, name: str) -> bytes: ...


# Join only ranges that touch: bytes in a gap are often read by another block, and fetched
# twice. A server that answers few requests per second reads faster with a gap (at the
# price of more bytes); MIXPLANE_RANGE_GAP sets one in bytes.
GAP_BYTES = 0
GAP_ENV = "MIXPLANE_RANGE_GAP"
CHUNK_BYTES = 4 * 2**20  # at most this much per GET, so a long range is fetched in parallel
CONCURRENT = S3_CONNECTIONS  # requests in flight: small ranges are latency-bound
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


@dataclass(frozen=True)
class _Chunk:
    """Units `[lo, hi)` of a shard, fetched in one request into `buffer` (which holds the
    interval starting at byte `begin`)."""

    shard: int
    units: UnitSums
    lo: int
    hi: int
    itemsize: int
    buffer: np.ndarray
    begin: int

    @property
    def start(self) -> int:
        return int(self.units.starts[self.lo]) * self.itemsize

    @property
    def end(self) -> int:
        return int(self.units.starts[self.hi]) * self.itemsize


class RangeReader:
    """Fetches and verifies the token ranges of remote pieces of its source's shards."""

    def __init__(self, source: Shards, threads: int = 16):
        self.source = source
        self.threads = threads
        self.gap_bytes = parse_size(os.environ.get(GAP_ENV)) or GAP_BYTES
        self._paths: dict[int, tuple[Any, str]] = {}
        self._sums: OrderedDict[int, UnitSums] = OrderedDict()
        self._sums_bytes = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        names = ("requests", "bytes", "consumed_bytes", "unit_mismatches", "checksum_files")
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
        itemsize = self.source.files.stored_dtype(int(r_shard[0])).itemsize
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
        if self.source.cache_mode == "ranges":
            cache = self.source.cache
            path = cache.acquire(file)
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            finally:
                cache.release(file.url)
        else:  # a cold start's few reads: the cache's room is the whole shards'
            uri, stem = self.source.shards[number]
            data = self.source.files.fetch_whole(uri, stem + SUMS)
        units = UnitSums.decode(data, file.url)
        with self._lock:
            self.counters["checksum_files"] += 1
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
        entry = self.source.files.manifest_entry(uri, stem + SUMS)
        if entry is None:
            raise ConfigError(
                f"{uri}: shard {stem} has no range checksums ({stem + SUMS}): the dataset was "
                "tokenized before mixplane wrote them; tokenize it again to read it with "
                "cache: ranges, or read whole shards (cache: shards, the default)"
            )
        return RemoteFile(join_url(uri, stem + SUMS), int(entry["size"]), entry["hash"])

    # -- fetching ------------------------------------------------------------------------

    def _fetch(self, plan: RangePlan) -> tuple[list[np.ndarray], np.ndarray]:
        """Each interval's tokens, fetched in chunks of whole units, and the token each one
        starts at in its shard."""
        buffers, chunks = [], []
        base = np.empty(len(plan.lo), dtype=np.int64)
        intervals = zip(plan.shard.tolist(), plan.lo.tolist(), plan.hi.tolist(), strict=True)
        for i, (number, lo, hi) in enumerate(intervals):
            units = self.sums(number)
            dtype = self.source.files.stored_dtype(number)
            base[i] = int(units.starts[lo])
            begin = int(base[i]) * dtype.itemsize
            buffer = np.empty(int(units.starts[hi]) * dtype.itemsize - begin, dtype=np.uint8)
            buffers.append(buffer.view(dtype))
            step = max(1, CHUNK_BYTES // (units.unit_tokens * dtype.itemsize))
            for u in range(lo, hi, step):
                chunks.append(_Chunk(number, units, u, min(hi, u + step), dtype.itemsize,
                                     buffer, begin))  # fmt: skip
        self._get(chunks)
        return buffers, base

    def _get(self, chunks: list[_Chunk]) -> None:
        """Fetch `chunks` in concurrent requests; fetch the failed or corrupt ones again
        after a backoff, as the retry policy says."""
        retry = self.source.retry
        pending = chunks
        for attempt in range(retry.attempts):
            failed = []
            for fs, group in self._by_filesystem(pending):
                paths = [self._located(c.shard)[1] for c in group]
                starts, ends = [c.start for c in group], [c.end for c in group]
                bodies = fs.cat_ranges(
                    paths, starts, ends, on_error="return", batch_size=CONCURRENT
                )
                for chunk, body in zip(group, bodies, strict=True):
                    retry.count("attempts")
                    problem = body if isinstance(body, BaseException) else self._take(chunk, body)
                    if problem is None:
                        continue
                    if not is_transient(problem):
                        raise InputError(f"{self._where(chunk)}: {problem}") from problem
                    failed.append((chunk, problem))
            if not failed:
                return
            chunk, problem = failed[0]
            if attempt + 1 == retry.attempts:
                raise InputError(
                    f"{self._where(chunk)}: {problem or describe(problem)} "
                    f"(gave up after {retry.attempts} attempts)"
                ) from problem
            for _, problem in failed:
                retry.count("retries", describe(problem))
            time.sleep(retry.wait_seconds(attempt))
            pending = [chunk for chunk, _ in failed]

    def _located(self, number: int) -> tuple[Any, str]:
        """(filesystem, path) of a shard's token file, looked up once."""
        found = self._paths.get(number)
        if found is None:
            url = self.source.files.remote_url(number)
            found = self._paths[number] = url_filesystem(url, self.source.storage_options)
        return found

    def _by_filesystem(self, chunks: list[_Chunk]) -> list[tuple[Any, list[_Chunk]]]:
        groups: dict[int, tuple[Any, list[_Chunk]]] = {}
        for chunk in chunks:
            fs = self._located(chunk.shard)[0]
            groups.setdefault(id(fs), (fs, []))[1].append(chunk)
        return list(groups.values())

    def _take(self, chunk: _Chunk, body: bytes) -> Exception | None:
        """Check a chunk's units and copy it into place; the problem if it is short or bad."""
        if len(body) != chunk.end - chunk.start:
            return CorruptRead(f"{len(body)} bytes arrived instead of {chunk.end - chunk.start}")
        units, itemsize = chunk.units, chunk.itemsize
        got = hash_units(body, units.starts[chunk.lo : chunk.hi + 1], itemsize)
        bad = np.flatnonzero(got != units.hashes[chunk.lo : chunk.hi])
        if len(bad):
            self._count("unit_mismatches")
            unit = chunk.lo + int(bad[0])
            return CorruptRead(
                f"checksum unit {unit} (bytes {int(units.starts[unit]) * itemsize}-"
                f"{int(units.starts[unit + 1]) * itemsize}) does not match the shard's "
                ".sums: the remote shard is not the one that was registered"
            )
        offset = chunk.start - chunk.begin
        chunk.buffer[offset : offset + len(body)] = np.frombuffer(body, dtype=np.uint8)
        self._count("requests")
        self._count("bytes", len(body))
        return None

    def _where(self, chunk: _Chunk) -> str:
        return f"{self.source.files.remote_url(chunk.shard)} bytes {chunk.start}-{chunk.end}"

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
