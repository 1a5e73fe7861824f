"""Scan processes: the few child processes that run the service's scans
(`mixplane.serve.scans`), each killed and replaced when the request it works for runs out
of time.

DuckDB can be asked to stop a query, but it looks only between vectors of rows, and one
vector can take minutes (a regular expression over long strings); a thread cannot be
killed. A process can, at once and whatever it is doing, and its memory goes with it. The
processes are forked by a fork server that imported the scans' modules once: a replacement
starts in milliseconds and holds none of the server's threads, sockets or locks.

A job and its answer cross a pipe as JSON; the thread that waits for the answer is the only
user of the pipe while the job runs, and the event loop only waits on a future.

Example:
    >>> pool = ScanPool(ScopeSpec("catalog.duckdb", cache_dir=None))  # doctest: +SKIP
    >>> await pool.start()  # doctest: +SKIP
    >>> answer, size = await pool.run(job(scans.count, ("TRUE", ())), deadline)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import orjson

from mixplane.errors import MixplaneError
from mixplane.serve.scans import SCANS, NotFound, Scope, ScopeSpec

logger = logging.getLogger(__name__)
# Scans at once: each DuckDB scan uses every core already, so more at once only makes each
# slower (and the cached answers, which share the cores, wait longer).
SCANS_AT_ONCE = 2
JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


class ScanTimeout(MixplaneError):
    """A request's time ran out, waiting for a scan process (`waited`) or in its scan."""

    def __init__(self, waited: bool):
        super().__init__("waited for a scan process" if waited else "scanned")
        self.waited = waited


class ServiceStopping(MixplaneError):
    """The service is stopping: its scan processes are gone (503)."""


class ScanFailed(RuntimeError):
    """A scan failed in a way that is the service's fault, not the request's (500)."""


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    connection: Connection
    retired: bool = False  # killed, or to be: its pipe is closed once no thread reads it


def job(scan: Callable[..., Any], args: tuple[Any, ...]) -> bytes:
    """`scan(scope, *args)` as a job for a scan process: JSON, keys in the order given (a
    mixture's components are ordered). A value JSON cannot carry (an integer past 64 bits)
    is refused.

    Example:
        >>> from mixplane.serve import scans
        >>> job(scans.count, ("TRUE", ()))
        b'["count",["TRUE",[]]]'
    """
    if SCANS.get(scan.__name__) is not scan:
        raise ValueError(f"{scan.__name__} is not a scan")
    try:
        return orjson.dumps([scan.__name__, args])
    except orjson.JSONEncodeError as error:
        raise MixplaneError(f"the request holds a value out of range: {error}") from None


class ScanPool:
    """`size` scan processes; `run` hands a scan to a free one and waits for its answer until
    the request's deadline, and kills the process at the deadline."""

    def __init__(self, scope: ScopeSpec, size: int = SCANS_AT_ONCE):
        self.scope = scope
        self.size = size
        self._context = multiprocessing.get_context("forkserver")
        self._idle: asyncio.Queue[_Worker | None] | None = None  # None: the pool is closed
        self._workers: set[_Worker] = set()
        self._starting: set[asyncio.Task] = set()
        self.closed = False
        self.running = 0  # scans running now
        self.timeouts = {"waiting": 0, "scanning": 0}  # requests whose time ran out, by where
        self.replaced = 0  # processes killed at a deadline or found dead, and started again

    async def start(self) -> None:
        """Start the processes (the first start also starts the fork server, which imports
        the scans' modules: a second or two), so that the service is ready when it serves."""
        if self._idle is not None:
            return
        self._context.set_forkserver_preload(["mixplane.serve.scans"])
        self._idle = asyncio.Queue()
        loop = asyncio.get_running_loop()
        started = [loop.run_in_executor(None, self._spawn) for _ in range(self.size)]
        for worker in await asyncio.gather(*started):  # a failure here stops the service
            self._add(worker)

    async def run(self, job: bytes, deadline: float) -> tuple[Any, int]:
        """Run a `job` (from `job`) in a scan process: its answer and the answer's size in
        bytes (as JSON). `ScanTimeout` at `deadline` (a `time.monotonic()` time), whether the
        scan had a process by then or not; the errors the scan raised, as the same kinds."""
        worker = await self._take(deadline)
        self.running += 1
        try:
            reply = await self._exchange(worker, job, deadline)
        finally:
            self.running -= 1
        found = orjson.loads(reply)
        if "answer" in found:
            return found["answer"], len(reply)
        kind, detail = found["error"], found["detail"]
        if kind == "not_found":
            raise NotFound(detail)
        if kind == "refused":
            raise MixplaneError(detail)
        raise ScanFailed(f"a scan failed in its process:\n{detail}")

    def close(self) -> None:
        """Kill every process; scans running and requests waiting end with `ServiceStopping`."""
        self.closed = True
        workers = list(self._workers)
        for worker in workers:
            self._retire(worker)
        if self._idle is None:
            return
        while not self._idle.empty():
            idle = self._idle.get_nowait()
            if idle is not None:
                idle.connection.close()  # no thread reads an idle process's pipe
        self._idle.put_nowait(None)
        for worker in workers:
            worker.process.join(1)

    async def _take(self, deadline: float) -> _Worker:
        if self.closed:
            raise ServiceStopping("the service is stopping")
        if self._idle is None:
            await self.start()
        assert self._idle is not None
        try:
            worker = await asyncio.wait_for(self._idle.get(), deadline - time.monotonic())
        except asyncio.TimeoutError:
            self.timeouts["waiting"] += 1
            raise ScanTimeout(waited=True) from None
        if worker is None:  # closed: pass the word on to the next waiter
            self._idle.put_nowait(None)
            raise ServiceStopping("the service is stopping")
        return worker

    async def _exchange(self, worker: _Worker, job: bytes, deadline: float) -> bytes:
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[bytes | None] = loop.create_future()

        def settle(reply: bytes | None) -> None:  # on the event loop
            if reply is None or worker.retired:
                worker.connection.close()  # the thread that read it has returned
            if not answered.done():
                answered.set_result(reply)

        def exchange() -> None:  # on a thread of its own: the pipe's only user meanwhile
            try:
                worker.connection.send_bytes(job)
                reply = worker.connection.recv_bytes()
            except (EOFError, OSError):
                reply = None  # the process is gone
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing waits
                loop.call_soon_threadsafe(settle, reply)

        threading.Thread(target=exchange, name="mixplane-scan-pipe", daemon=True).start()
        try:
            reply = await asyncio.wait_for(answered, deadline - time.monotonic())
        except asyncio.TimeoutError:
            self.timeouts["scanning"] += 1
            self._replace(worker)
            raise ScanTimeout(waited=False) from None
        except asyncio.CancelledError:  # the request was cancelled (the server stops)
            self._replace(worker)
            raise
        if reply is None:
            code = worker.process.exitcode
            self._replace(worker)
            if self.closed:
                raise ServiceStopping("the service is stopping")
            raise ScanFailed(f"the scan process ended (exit code {code}); another is started")
        assert self._idle is not None
        self._idle.put_nowait(worker)
        return reply

    def _replace(self, worker: _Worker) -> None:
        self._retire(worker)
        if self.closed:
            return
        self.replaced += 1
        task = asyncio.ensure_future(self._respawn())  # requests wait for it by their deadlines
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    def _retire(self, worker: _Worker) -> None:
        worker.retired = True
        self._workers.discard(worker)
        if worker.process.exitcode is None:  # asked first: a dead process's id may be reused
            with contextlib.suppress(OSError, ValueError):
                worker.process.kill()  # its pipe closes with it: the reading thread returns

    async def _respawn(self) -> None:
        try:
            worker = await asyncio.get_running_loop().run_in_executor(None, self._spawn)
        except Exception:  # requests wait for the processes left, by their deadlines
            logger.exception("a scan process could not be started")
            return
        if self.closed:
            worker.process.kill()
            worker.connection.close()
            return
        self._add(worker)

    def _add(self, worker: _Worker) -> None:
        assert self._idle is not None
        self._workers.add(worker)
        self._idle.put_nowait(worker)

    def _spawn(self) -> _Worker:
        """A new scan process (touches nothing shared: it may run on another thread)."""
        ours, theirs = self._context.Pipe()
        process = self._context.Process(
            target=_serve, args=(theirs, self.scope), name="mixplane-scan", daemon=True
        )
        process.start()
        theirs.close()
        return _Worker(process, ours)


def _serve(connection: Connection, spec: ScopeSpec) -> None:
    """A scan process's life: answer jobs from `connection` until it closes."""
    _end_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops this
    scope = Scope(spec)
    while True:
        try:
            job = connection.recv_bytes()
        except (EOFError, OSError):
            return
        name, args = orjson.loads(job)
        connection.send_bytes(_answer(scope, name, args))


def _answer(scope: Scope, name: str, args: list[Any]) -> bytes:
    try:
        return orjson.dumps({"answer": SCANS[name](scope, *args)}, option=JSON_OPTIONS)
    except NotFound as error:
        reply = {"error": "not_found", "detail": str(error)}
    except MixplaneError as error:
        reply = {"error": "refused", "detail": str(error)}
    except Exception:
        reply = {"error": "internal", "detail": traceback.format_exc()}
    return orjson.dumps(reply)


def _end_with_parent() -> None:
    """Be killed when the fork server goes, which it does when the service goes (Linux);
    elsewhere a process mid-scan outlives a killed service until its scan ends."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
