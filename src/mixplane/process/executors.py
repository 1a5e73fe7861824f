"""Executors run tasks: in this process, in a local process pool, or on Ray.

Every executor calls the same task function, so outputs are the same whichever is used; only
the order in which tasks finish differs, and nothing depends on that. Any step that splits
its work into tasks (processing, tokenizing, dedup) runs through `execute`.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from mixplane.errors import ConfigError

OnDone = Callable[[Any], None]


@dataclass(frozen=True)
class ExecutorSettings:
    """How to parallelise: `workers` tasks at once, locally or on Ray."""

    workers: int = 1
    executor: str = "local"
    ray_address: str | None = None


def execute(
    function: Callable[..., Any],
    tasks: list[Any],
    context: Any,
    settings: ExecutorSettings,
    on_done: OnDone | None = None,
) -> list[Any]:
    """Call `function(task, context)` for every task; results come back in task order.

    `function` must be importable (a module-level function) and `context` picklable.

    Example:
        >>> execute(pow, [2, 3], 2, ExecutorSettings())
        [4, 9]
    """
    on_done = on_done or (lambda _: None)
    if settings.executor == "ray":
        return _run_ray(function, tasks, context, settings, on_done)
    if settings.workers == 1 or len(tasks) <= 1:
        results = []
        for task in tasks:
            results.append(function(task, context))
            on_done(results[-1])
        return results
    return _run_pool(function, tasks, context, settings, on_done)


def _run_pool(function, tasks, context, settings: ExecutorSettings, on_done: OnDone) -> list:
    # forkserver: workers start clean, whatever threads the parent runs (progress bars, Ray).
    mp_context = multiprocessing.get_context("forkserver")
    workers = min(settings.workers, len(tasks))
    results: list[Any] = [None] * len(tasks)
    # Only this process holds `alive`: when it ends, however it ends, the workers read EOF.
    watched, alive = mp_context.Pipe(duplex=False)
    try:
        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=mp_context,
            initializer=exit_with_parent,
            initargs=(watched,),
        ) as pool:
            futures = {pool.submit(function, task, context): i for i, task in enumerate(tasks)}
            pending = set(futures)
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        results[futures[future]] = future.result()
                        on_done(results[futures[future]])
            except BaseException:
                for future in pending:
                    future.cancel()
                raise
    finally:
        alive.close()
        watched.close()
    return results


PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def exit_with_parent(watched: Connection) -> None:
    """In a pool worker: end at once when the process that started the pool ends, even by
    SIGKILL, which gives it no chance to stop its workers. Without this they outlive it,
    with the forkserver and the resource tracker that wait for them.

    The pool's parent holds the only write end of the pipe `watched` reads: a thread here
    sees EOF when it is gone. The worker's own parent is the forkserver; should that one
    die, the kernel kills the worker (Linux's parent-death signal)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    def watch() -> None:
        with contextlib.suppress(EOFError, OSError):
            watched.recv_bytes()  # nothing is ever sent: this returns at EOF
        os._exit(1)

    threading.Thread(target=watch, name="mixplane-parent-watch", daemon=True).start()


@contextmanager
def ray_session(settings: ExecutorSettings) -> Iterator[None]:
    """Start Ray for the block unless it runs already (so several phases share one runtime)."""
    if settings.executor != "ray":
        yield
        return
    try:
        import ray
    except ImportError:
        raise ConfigError("executor 'ray' needs Ray: pip install 'mixplane[ray]'") from None
    if ray.is_initialized():
        yield
        return
    if settings.ray_address:
        ray.init(address=settings.ray_address, log_to_driver=False)
    else:
        # A local cluster: its workers need the driver's import path for custom stages.
        path = os.pathsep.join(p for p in sys.path if p)
        ray.init(
            num_cpus=settings.workers,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    try:
        yield
    finally:
        ray.shutdown()


def _run_ray(function, tasks, context, settings: ExecutorSettings, on_done: OnDone) -> list:
    with ray_session(settings):
        import ray

        remote = ray.remote(num_cpus=1, max_retries=2)(function)
        shared = ray.put(context)
        refs = [remote.remote(task, shared) for task in tasks]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(tasks)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            results[index[done[0]]] = ray.get(done[0])
            on_done(results[index[done[0]]])
        return results
