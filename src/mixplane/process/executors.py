"""Executors run tasks: in this process, in a local process pool, or on Ray.

Every executor runs the same `run_task`, so outputs are the same whichever is used; only
the order in which tasks finish differs, and nothing depends on that.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from mixplane.errors import ConfigError
from mixplane.process.config import PipelineConfig
from mixplane.process.runner import run_task
from mixplane.process.tasks import Task

OnDone = Callable[[dict[str, Any]], None]


def execute(tasks: list[Task], config: PipelineConfig, on_done: OnDone) -> list[dict[str, Any]]:
    """Run all tasks with the configured executor; results come back in task order."""
    if config.executor == "ray":
        results = _run_ray(tasks, config, on_done)
    elif config.workers == 1 or len(tasks) <= 1:
        results = []
        for task in tasks:
            results.append(run_task(task, config))
            on_done(results[-1])
    else:
        results = _run_pool(tasks, config, on_done)
    return sorted(results, key=lambda result: result["task"])


def _run_pool(tasks: list[Task], config: PipelineConfig, on_done: OnDone) -> list[dict]:
    # forkserver: workers start clean, whatever threads the parent runs (progress bars, Ray).
    context = multiprocessing.get_context("forkserver")
    workers = min(config.workers, len(tasks))
    results = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pending = {pool.submit(run_task, task, config) for task in tasks}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    results.append(future.result())
                    on_done(results[-1])
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return results


def _run_ray(tasks: list[Task], config: PipelineConfig, on_done: OnDone) -> list[dict]:
    try:
        import ray
    except ImportError:
        raise ConfigError("executor 'ray' needs Ray: pip install 'mixplane[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        if config.ray_address:
            ray.init(address=config.ray_address, log_to_driver=False)
        else:
            # A local cluster: its workers need the driver's import path for custom stages.
            path = os.pathsep.join(p for p in sys.path if p)
            ray.init(
                num_cpus=config.workers,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": path}},
            )
    remote = ray.remote(num_cpus=1, max_retries=2)(run_task)
    try:
        pending = [remote.remote(task, config) for task in tasks]
        results = []
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            results.append(ray.get(done[0]))
            on_done(results[-1])
        return results
    finally:
        if started_here:
            ray.shutdown()
