"""Catalog queries under the service's limits: a time limit per query, and answers cached.

Dataset versions are immutable, so an answer stays right as long as the catalog file is the
same; the cache key includes the file's size and modification time, which registering a
version changes.

Example:
    >>> runner = QueryRunner("catalog.duckdb", timeout=10)  # doctest: +SKIP
    >>> runner.run(("count", "language = 'de'"), lambda s: s.select("language = 'de'").summary())
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio.to_thread

from mixplane.catalog import Catalog
from mixplane.catalog.catalog import CatalogSession
from mixplane.errors import MixplaneError

T = TypeVar("T")
CACHED_ANSWERS = 512
# Catalog scans computed at once: each DuckDB scan uses every core already, so more at once
# only makes each slower (and the cached answers, which share the cores, wait longer).
SCANS_AT_ONCE = 2
_MISSING = object()


class QueryTimeout(MixplaneError):
    """A query ran past the service's time limit."""


class QueryRunner:
    """Runs functions of a catalog session with a deadline, remembering their answers.

    At most `SCANS_AT_ONCE` queries run on the catalog at a time, and a query asked again
    while it runs waits for that run's answer instead of scanning a second time.
    """

    def __init__(self, catalog: str, timeout: float, cached: int = CACHED_ANSWERS):
        self.catalog = Catalog(catalog)
        self.timeout = timeout
        self.cached = cached
        self._answers: OrderedDict[Hashable, Any] = OrderedDict()
        self._running: dict[Hashable, Future] = {}
        self._lock = threading.Lock()
        self._scans = threading.Semaphore(SCANS_AT_ONCE)
        self.hits = 0
        self.misses = 0

    async def answer(self, key: Hashable, query: Callable[[CatalogSession], T]) -> T:
        """`run` for an async route: a cached answer comes back on the event loop, anything
        else runs on a worker thread."""
        with self._lock:
            found = self._cached((self.stamp(), key))
        if found is not _MISSING:
            return found
        return await anyio.to_thread.run_sync(self.run, key, query)

    def stamp(self) -> tuple[int, int]:
        """The catalog file's size and modification time: what a cached answer depends on."""
        try:
            info = os.stat(self.catalog.path)
        except FileNotFoundError:
            raise MixplaneError(f"no catalog at {self.catalog.path}") from None
        return info.st_size, info.st_mtime_ns

    def run(self, key: Hashable, query: Callable[[CatalogSession], T]) -> T:
        """`query(session)`, or its answer from the cache; `QueryTimeout` past the limit."""
        full_key = (self.stamp(), key)
        with self._lock:
            found = self._cached(full_key)
            if found is not _MISSING:
                return found
            running = self._running.get(full_key)
            if running is None:
                self.misses += 1
                mine = self._running[full_key] = Future()
        if running is not None:
            self.hits += 1
            return running.result()  # the same answer, or the same error
        try:
            with self._scans:
                answer = self.run_uncached(query)
        except BaseException as error:
            with self._lock:
                del self._running[full_key]
            mine.set_exception(error)
            raise
        with self._lock:  # cached before it stops running: no moment when it is neither
            self._answers[full_key] = answer
            while len(self._answers) > self.cached:
                self._answers.popitem(last=False)
            del self._running[full_key]
        mine.set_result(answer)
        return answer

    def _cached(self, full_key: Hashable) -> Any:
        """The cached answer (counted as a hit), or `_MISSING`; the caller holds the lock."""
        if full_key not in self._answers:
            return _MISSING
        self._answers.move_to_end(full_key)
        self.hits += 1
        return self._answers[full_key]

    def run_uncached(self, query: Callable[[CatalogSession], T]) -> T:
        """`query(session)` on a fresh session, interrupted after the time limit."""
        expired, done = threading.Event(), threading.Event()
        with self.catalog.session() as session:

            def watch() -> None:
                if done.wait(self.timeout):
                    return
                expired.set()
                while not done.wait(0.05):  # again, for engines opened after the first stop
                    session.interrupt()

            threading.Thread(target=watch, daemon=True).start()
            try:
                return query(session)
            except Exception:  # interrupted: DuckDB's error, or a MixplaneError wrapping it
                if expired.is_set():
                    raise QueryTimeout(
                        f"the query ran longer than {self.timeout:g} s; narrow the predicate "
                        "or the datasets"
                    ) from None
                raise
            finally:
                done.set()
