"""The service's scans under its limits: a deadline per request, and answers cached.

A request's deadline is its arrival plus `--query-timeout`: waiting for a free scan process
counts, and a scan still running then is killed (`mixplane.serve.pool`). Dataset versions
are immutable, so an answer stays right as long as the catalog file is the same; the cache
key includes the file's size and modification time, which registering a version changes.
Everything here runs on the event loop: a cached answer costs no thread and no process.

Example:
    >>> runner = QueryRunner("catalog.duckdb", timeout=10, pool=pool)  # doctest: +SKIP
    >>> deadline = time.monotonic() + 10  # doctest: +SKIP
    >>> await runner.answer(deadline, scans.count, "language = 'de'", ())  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from mixplane.catalog import Catalog
from mixplane.errors import MixplaneError
from mixplane.serve.pool import ScanPool, ScanTimeout, job

CACHED_ANSWERS = 512
CACHED_BYTES = 64 << 20  # of answers, as JSON


class QueryTimeout(MixplaneError):
    """A request was not answered within the service's time limit (408)."""


class QueryRunner:
    """Runs scans for requests, each by its request's deadline, remembering their answers.

    A scan asked again while it runs waits for that run's answer instead of running twice;
    the first asker's deadline is the earliest, so the others are answered within theirs.
    """

    def __init__(
        self,
        catalog: str,
        timeout: float,
        pool: ScanPool,
        cached: int = CACHED_ANSWERS,
        cached_bytes: int = CACHED_BYTES,
    ):
        self.catalog = Catalog(catalog)
        self.timeout = timeout
        self.pool = pool
        self.cached = cached
        self.cached_bytes = cached_bytes
        self._answers: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._running: dict[Hashable, asyncio.Task] = {}
        self.hits = 0
        self.misses = 0

    async def answer(self, deadline: float, scan: Callable[..., Any], *args: Any) -> Any:
        """`scan(scope, *args)` in a scan process, or its answer from the cache;
        `QueryTimeout` once `deadline` (`time.monotonic()`) passes."""
        work = job(scan, args)
        key = (self.stamp(), hashlib.sha256(work).digest())  # a mixture may be a megabyte
        if key in self._answers:
            self._answers.move_to_end(key)
            self.hits += 1
            return self._answers[key][0]
        running = self._running.get(key)
        if running is None:
            self.misses += 1
            running = asyncio.ensure_future(self._run(key, work, deadline))
            running.add_done_callback(_retrieved)  # seen even if every asker went away
            self._running[key] = running
        else:
            self.hits += 1
        # Shielded: a request that goes away does not stop the scan others wait for.
        return await asyncio.shield(running)

    def stamp(self) -> tuple[int, int]:
        """The catalog file's size and modification time: what a cached answer depends on."""
        try:
            info = os.stat(self.catalog.path)
        except FileNotFoundError:
            raise MixplaneError(f"no catalog at {self.catalog.path}") from None
        return info.st_size, info.st_mtime_ns

    async def _run(self, key: Hashable, work: bytes, deadline: float) -> Any:
        try:
            answer, size = await self.pool.run(work, deadline)
        except ScanTimeout as timeout:
            raise QueryTimeout(self._late(timeout.waited)) from None
        finally:
            del self._running[key]
        self._answers[key] = (answer, size)
        self._bytes += size
        while len(self._answers) > self.cached or self._bytes > self.cached_bytes:
            self._bytes -= self._answers.popitem(last=False)[1][1]
        return answer

    def _late(self, waited: bool) -> str:
        limit = f"no answer within the service's time limit of {self.timeout:g} s"
        if waited:
            return f"{limit}: every scan process was busy with other requests; try again"
        return f"{limit} (--query-timeout): narrow the predicate, the datasets or the mixture"


def _retrieved(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()
