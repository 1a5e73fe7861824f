"""A node-local cache of remote shard files: bounded, verified, shared by every process.

All ranks and DataLoader workers of a machine share one cache folder and coordinate through
the file system alone, so a crash leaves nothing stale behind:

- a file is downloaded by one process (it holds the file's lock exclusively); the others
  wait on the lock and then read the finished file;
- a download goes to `NAME.partial`, sized to the whole file before the first byte arrives
  (so every process counts it against the limit), is checked against the manifest's size and
  hash, and only then renamed to `NAME`: a file under its final name is always complete;
- a reader holds a shared lock on each file it has mapped (a pin); eviction takes the lock
  exclusively without waiting, so a pinned file is never removed; a killed process's locks
  vanish with it, and a `.partial` nobody holds is a crash's leftover, removed on sight;
- when a download needs room, the unpinned file whose next use is farthest in the future
  goes first (the loader knows its future: the read order is a function of the mixture).

Example:
    >>> cache = ShardCache("/tmp/cache", limit=200 * 2**30, storage_options={})  # doctest: +SKIP
    >>> shard = RemoteFile("s3://b/web/shard-00000-000.bin", 123, "xxh3_128:...")
    >>> path = cache.acquire(shard)  # doctest: +SKIP
    >>> cache.release("s3://b/web/shard-00000-000.bin")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import xxhash

from mixplane.errors import ConfigError, MixplaneError
from mixplane.io.ahead import in_order
from mixplane.io.locks import close_lock, locked, open_lock, try_lock
from mixplane.io.plain_get import range_reader
from mixplane.io.retry import Retry
from mixplane.io.sizes import parse_size, size_text

CHUNK_BYTES = 16 * 2**20  # one ranged GET
CHUNKS_IN_FLIGHT = 4  # ranged GETs of one file at once
LIMIT_ENV = "MIXPLANE_CACHE_LIMIT"


def cache_limit(configured: int | str | None) -> int | None:
    """The limit in bytes: the mixture's `cache_limit`, else $MIXPLANE_CACHE_LIMIT, else none."""
    value = configured if configured is not None else os.environ.get(LIMIT_ENV)
    try:
        return parse_size(value)
    except ValueError as error:
        raise ConfigError(f"cache_limit: {error}") from None


@dataclass(frozen=True)
class RemoteFile:
    """A remote file and what its manifest says it holds."""

    url: str
    size: int
    digest: str  # "xxh3_128:HEX"


class ShardCache:
    """Remote files copied into `root` on demand, at most `limit` bytes at a time (None:
    no limit), verified against their manifest hashes, downloaded once per machine."""

    def __init__(
        self,
        root: str,
        limit: int | None,
        storage_options: dict[str, Any] | None = None,
        retry: Retry | None = None,
        wait_seconds: float = 120.0,
        chunk_bytes: int = CHUNK_BYTES,
    ):
        self.root = os.path.join(root, "shards")
        self.limit = limit
        self.storage_options = storage_options or {}
        self.retry = retry or Retry()
        self.wait_seconds = wait_seconds  # for room pinned by other processes to free up
        self.chunk_bytes = chunk_bytes
        self._setup()

    def _setup(self) -> None:
        os.makedirs(self.root, exist_ok=True)
        self._pins: dict[str, tuple[int, int]] = {}  # url -> (lock fd, count)
        self._next_use: dict[str, float] = {}
        self._lock = threading.RLock()
        self._prefetcher: ThreadPoolExecutor | None = None
        self._prefetching: set[str] = set()
        self._failed: dict[str, Exception] = {}  # prefetches that gave up, by URL
        names = ("hits", "misses", "downloads", "downloaded_bytes", "waited", "evictions",
                 "stale_partials_removed", "hash_mismatches")  # fmt: skip
        self.counters = dict.fromkeys(names, 0)
        self.peak_bytes = 0  # the most the folder held when this process added to it

    def __getstate__(self) -> dict[str, Any]:
        keep = ("root", "limit", "storage_options", "retry", "wait_seconds", "chunk_bytes")
        return {key: self.__dict__[key] for key in keep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()

    # -- names ---------------------------------------------------------------------------

    def path(self, url: str) -> str:
        """Where `url`'s copy lives: its name, prefixed by a hash of the whole URL."""
        digest = xxhash.xxh3_64_hexdigest(url.encode())
        return os.path.join(self.root, f"{digest}-{url.rsplit('/', 1)[-1]}")

    # -- pins ----------------------------------------------------------------------------

    def acquire(self, file: RemoteFile) -> str:
        """A local path of `file`, downloaded if needed, pinned until `release(file.url)`.
        A prefetch of it that gave up after every retry raises its error here, without
        downloading it again."""
        with self._lock:
            pinned = self._pins.get(file.url)
            if pinned is not None:
                self._pins[file.url] = (pinned[0], pinned[1] + 1)
                return self.path(file.url)
        lock = self._open_lock(file.url)
        try:
            self._fetch(file, lock, pin=True)
        except BaseException:
            close_lock(lock)
            raise
        with self._lock:
            pinned = self._pins.get(file.url)
            if pinned is not None:  # another thread pinned it meanwhile: one lock is enough
                close_lock(lock)
                self._pins[file.url] = (pinned[0], pinned[1] + 1)
            else:
                self._pins[file.url] = (lock, 1)
        return self.path(file.url)

    def present(self, file: RemoteFile) -> bool:
        """Whether `file` is in the cache now, whole (it may be evicted unless pinned)."""
        return _complete(self.path(file.url), file.size)

    def release(self, url: str) -> None:
        """Drop one pin of `url`; the last one lets the file be evicted."""
        with self._lock:
            lock, count = self._pins[url]
            if count > 1:
                self._pins[url] = (lock, count - 1)
                return
            del self._pins[url]
        close_lock(lock)  # closing the descriptor drops the shared lock

    def pinned_bytes(self) -> int:
        with self._lock:
            return sum(os.path.getsize(self.path(url)) for url in self._pins)

    def plan(self, next_use: dict[str, float]) -> None:
        """When this process reads each URL next (any increasing measure: a block number, a
        position); files it will not read are evicted first, then the farthest."""
        with self._lock:
            self._next_use = dict(next_use)

    def prefetch(self, files: Iterable[RemoteFile], threads: int = 4) -> None:
        """Download `files` (soonest first) in the background, as far as the cache has room
        without evicting anything needed sooner.

        Only the first files that fit in the limit together (with the others pinned here) are
        taken: a download in flight cannot be evicted, so one reaching further would leave a
        file needed sooner no room but the place of another one needed soon, fetched again."""
        files = list(files)
        if self.limit is not None:
            listed = {file.url for file in files}
            with self._lock:
                others = [url for url in self._pins if url not in listed]
            room = self.limit - sum(os.path.getsize(self.path(url)) for url in others)
            for count, file in enumerate(files):
                room -= file.size
                if room < 0:
                    files = files[:count]
                    break
        if self._prefetcher is None:
            self._prefetcher = ThreadPoolExecutor(threads, thread_name_prefix="mixplane-fetch")
        for file in files:
            with self._lock:
                if file.url in self._prefetching or file.url in self._pins:
                    continue
                self._prefetching.add(file.url)
            self._prefetcher.submit(self._prefetch_one, file)

    def _prefetch_one(self, file: RemoteFile) -> None:
        try:
            if os.path.exists(self.path(file.url)):
                return
            lock = self._open_lock(file.url)
            try:
                self._fetch(file, lock, pin=False, before=self._rank(file.url))
            except _NoRoom:
                pass  # nothing evictable is needed later than this file: it waits its turn
            finally:
                close_lock(lock)
        except Exception:  # noqa: BLE001 - the reader reports it (see `_fetch`)
            pass
        finally:
            with self._lock:
                self._prefetching.discard(file.url)

    def finish_prefetch(self) -> None:
        """Wait until every download `prefetch` started or queued is over."""
        if self._prefetcher is not None:
            self._prefetcher.shutdown(wait=True)
            self._prefetcher = None

    def close(self) -> None:
        """Stop prefetching and drop every pin of this process."""
        if self._prefetcher is not None:
            self._prefetcher.shutdown(wait=True, cancel_futures=True)
            self._prefetcher = None
        with self._lock:
            pins, self._pins = self._pins, {}
        for lock, _ in pins.values():
            close_lock(lock)

    def __del__(self) -> None:
        # Pins are file locks held by open descriptors: a cache dropped unclosed lets go.
        for lock, _ in getattr(self, "_pins", {}).values():
            with contextlib.suppress(OSError):
                close_lock(lock)

    # -- fetching ------------------------------------------------------------------------

    def _open_lock(self, url: str) -> int:
        return open_lock(self.path(url) + ".lock")

    def _rank(self, url: str) -> float:
        return self._next_use.get(url, math.inf)

    def _fetch(self, file: RemoteFile, lock: int, pin: bool, before: float = math.inf) -> None:
        """Make `file` present; with `pin`, return holding a shared lock on it. `before`: make
        room only by evicting files needed later than that rank (a prefetch's own rank).

        A download holds the file's lock exclusively, readers share it: whoever finds the
        file missing takes the lock exclusively and downloads; whoever cannot goes back to
        wait for a shared lock, which comes once a download is over (or at once, when only
        readers held it: the file is complete then)."""
        target = self.path(file.url)
        waited = missed = False
        while True:
            if not try_lock(lock, fcntl.LOCK_SH):  # a download of it is under way
                fcntl.flock(lock, fcntl.LOCK_SH)
                waited = True
            if _complete(target, file.size):
                if not pin:
                    fcntl.flock(lock, fcntl.LOCK_UN)
                    return
                # Waiting for a download in flight (a prefetch started too late) is a miss
                # too: the reader stalled, so the forecast must look further.
                self._count("misses" if waited or missed else "hits")
                return
            fcntl.flock(lock, fcntl.LOCK_UN)
            missed = True
            if not try_lock(lock, fcntl.LOCK_EX):  # another thread or process took it first
                self._count("waited")
                waited = True
                time.sleep(0.001)  # a reader checking, or a download starting: look again
                continue
            try:
                if not _complete(target, file.size):
                    with self._lock:
                        failed = self._failed.pop(file.url, None)
                    if failed is not None and pin and waited:
                        raise failed  # the prefetch this reader waited for gave up
                    self._download(file, target, before)
            except Exception as error:
                if not pin and not isinstance(error, _NoRoom):
                    with self._lock:  # before the lock is let go: a reader waiting sees it
                        self._failed[file.url] = error
                raise
            finally:
                # Not atomic (flock converts by unlocking first): an evictor may slip in,
                # in which case the loop sees the file gone and fetches it again.
                fcntl.flock(lock, fcntl.LOCK_SH if pin else fcntl.LOCK_UN)
            if not pin:
                return
            if _complete(target, file.size):
                self._count("misses")
                return
            fcntl.flock(lock, fcntl.LOCK_UN)

    def _download(self, file: RemoteFile, target: str, before: float) -> None:
        partial = target + ".partial"
        if os.path.exists(partial):  # we hold its lock, so a killed download left it
            os.remove(partial)
            self._count("stale_partials_removed")
        self._reserve(file, partial, before)
        try:
            for attempt in range(self.retry.attempts):
                digest = self._copy(file, partial)
                if digest == file.digest:
                    # Under the cache's lock: a scan that lists the `.partial` and then
                    # finds it renamed would count the file nowhere and overfill the cache.
                    with locked(os.path.join(self.root, ".lock")):
                        os.replace(partial, target)
                    self._count("downloads")
                    return
                self._count("hash_mismatches")
                if attempt + 1 < self.retry.attempts:
                    time.sleep(self.retry.wait_seconds(attempt))
            raise MixplaneError(
                f"{file.url}: the downloaded bytes hash to {digest}, but the manifest says "
                f"{file.digest} ({self.retry.attempts} downloads); the remote shard is not "
                "the one that was registered: restore it, or tokenize and register again"
            )
        finally:
            if os.path.exists(partial):
                os.remove(partial)

    def _copy(self, file: RemoteFile, partial: str) -> str:
        """Download into the reserved `partial` in ranged chunks, several in flight (one
        request at a time leaves a fast link idle during each round trip), each retried on
        its own, written and hashed in order; returns the content hash."""
        read = range_reader(file.url, self.storage_options)

        def fetch(start: int) -> bytes | bytearray:
            end = min(file.size, start + self.chunk_bytes)
            return self.retry.call(lambda: read(start, end), what=file.url)

        digest = xxhash.xxh3_128()
        with open(partial, "r+b") as out:
            starts = range(0, file.size, self.chunk_bytes)
            for _, data in in_order(fetch, starts, CHUNKS_IN_FLIGHT):
                out.write(data)
                digest.update(data)
                self._count("downloaded_bytes", len(data))
        return f"xxh3_128:{digest.hexdigest()}"

    # -- room ----------------------------------------------------------------------------

    def _reserve(self, file: RemoteFile, partial: str, before: float) -> None:
        """Create `partial` at its full size once the cache has room for it."""
        if self.limit is not None and file.size > self.limit:
            raise ConfigError(
                f"cache_limit {size_text(self.limit)} is smaller than one shard "
                f"({file.url}: {size_text(file.size)}); raise cache_limit"
            )
        deadline = time.monotonic() + self.wait_seconds
        while True:
            with locked(os.path.join(self.root, ".lock")):
                if self._make_room(file.size, before):
                    with open(partial, "wb") as handle:
                        _allocate(handle.fileno(), file.size)
                    self._note_held()
                    return
            if before != math.inf:
                raise _NoRoom()
            mine = self.pinned_bytes()
            if mine + file.size > self.limit or time.monotonic() > deadline:  # type: ignore[operator]
                raise ConfigError(
                    f"cache_limit {size_text(self.limit)} is too small: the shards being "
                    f"read hold {size_text(self._used())} ({size_text(mine)} of them by "
                    f"this process) and {file.url} needs {size_text(file.size)} more; raise "
                    "cache_limit, or read fewer sequences ahead (read_ahead, prefetch)"
                )
            time.sleep(0.05)  # room pinned by other processes frees as they move on

    def _note_held(self) -> None:
        """Raise the high-water mark to what the folder holds now. Called under the cache's
        folder lock right after a reservation: the folder only grows there (a download is
        sized in full before its first byte, renames change no size), so the largest of
        these counts over every process sharing the folder is its true peak, however short
        the moment. Counted afresh, not from the eviction's own arithmetic, so that a wrong
        sum there shows."""
        held = 0
        for entry in os.scandir(self.root):
            if not (entry.name.endswith(".lock") or entry.name.startswith(".")):
                with contextlib.suppress(FileNotFoundError):  # a failed download's partial, gone
                    held += entry.stat().st_size
        with self._lock:
            self.peak_bytes = max(self.peak_bytes, held)

    def _used(self) -> int:
        return sum(size for _, size, _ in self._entries())

    def _entries(self) -> list[tuple[str, int, bool]]:
        """(path, bytes, complete) of every file in the cache; crash leftovers removed."""
        entries = []
        for entry in os.scandir(self.root):
            name = entry.name
            if name.endswith(".lock") or name.startswith("."):
                continue
            try:
                size = entry.stat().st_size
            except FileNotFoundError:
                continue
            if name.endswith(".partial"):
                stem = entry.path[: -len(".partial")]
                if self._stale(stem, entry.path):
                    self._count("stale_partials_removed")
                    continue
                entries.append((entry.path, size, False))
            else:
                entries.append((entry.path, size, True))
        return entries

    def _stale(self, stem: str, partial: str) -> bool:
        """A `.partial` whose lock nobody holds was left by a killed download: remove it."""
        with locked(stem + ".lock", wait=False) as ours:
            if ours:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(partial)
            return ours

    def _make_room(self, size: int, before: float) -> bool:
        if self.limit is None:
            return True
        entries = self._entries()
        used = sum(bytes_ for _, bytes_, _ in entries)
        if used + size <= self.limit:
            return True
        ranks = {self.path(url): rank for url, rank in self._next_use.items()}
        candidates = sorted(
            ((ranks.get(path, math.inf), path, bytes_) for path, bytes_, done in entries if done),
            reverse=True,
        )
        for rank, path, bytes_ in candidates:
            if rank <= before and before != math.inf:
                return False  # what is left is needed no later than the file asking
            if self._evict(path):
                used -= bytes_
                if used + size <= self.limit:
                    return True
        return False

    def _evict(self, path: str) -> bool:
        """Remove a cached file unless some process has it pinned or is writing it."""
        with locked(path + ".lock", wait=False) as ours:
            if not ours:
                return False
            try:
                os.remove(path)
            except FileNotFoundError:
                return False
            self._count("evictions")
            return True

    def _count(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self.counters[key] += amount

    def stats(self) -> dict[str, Any]:
        """Counters of this process: hits, downloads, bytes, evictions, retries..., and
        `peak_bytes`, the most the cache folder held at any moment this process added to it
        (the folder's own peak is the largest over the processes sharing it)."""
        with self._lock:
            peak = self.peak_bytes
        return dict(self.counters) | {"retry": dict(self.retry.counters), "peak_bytes": peak}


class _NoRoom(Exception):
    """A prefetch found no room without evicting something needed sooner."""


def _complete(path: str, size: int) -> bool:
    try:
        return os.path.getsize(path) == size
    except FileNotFoundError:
        return False


def _allocate(fd: int, size: int) -> None:
    """Give the file its full size now, so its room is taken before its bytes arrive."""
    if size == 0:
        return
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError:  # file systems without fallocate: a sparse file of the right length
        os.ftruncate(fd, size)
