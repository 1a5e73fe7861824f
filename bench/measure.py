"""Run a command and measure it: wall time, CPU time and peak resident memory of its whole
process tree.

Memory is sampled every 50 ms as the sum of RSS over the process and all its descendants, so
process pools are counted in full. With `tree_cpu=True`, CPU time (user + system, from the
kernel's accounting) covers the process and all its descendants: this process becomes their
subreaper, so descendants left behind by their parent (a fork server's workers, say) are
waited for here and counted too.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import resource
import statistics
import subprocess
import time
from dataclasses import dataclass

import psutil


@dataclass
class Measurement:
    seconds: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float = float("nan")


def measure(
    command: list[str],
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    tree_cpu: bool = False,
) -> Measurement:
    """Run `command` to completion, sampling the memory of its process tree. With `tree_cpu`,
    also its CPU seconds, descendants included (Linux); the wall time still ends when the
    command itself exits."""
    if tree_cpu:
        _become_subreaper()
    ours = {child.pid for child in psutil.Process().children()}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    root = psutil.Process(process.pid)
    peak = 0
    while True:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(_rss(p) for p in tree))
        except psutil.NoSuchProcess:
            pass
        # Waiting in communicate() drains both pipes meanwhile: a command writing more
        # than a pipe's 64 KiB would otherwise block on write, never to exit.
        try:
            stdout, stderr = process.communicate(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
    seconds = time.perf_counter() - started
    cpu = float("nan")
    if tree_cpu:
        _reap_adopted(ours)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measurement(seconds, peak / 2**20, process.returncode, stdout, stderr, cpu)


def _become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process, not to init (Linux prctl
    PR_SET_CHILD_SUBREAPER)."""
    if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _reap_adopted(ours: set[int], timeout: float = 30.0) -> None:
    """Wait for the descendants this process adopted (not children it had before), so the
    kernel adds their CPU time to RUSAGE_CHILDREN."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        adopted = [c.pid for c in psutil.Process().children() if c.pid not in ours]
        if not adopted:
            return
        for pid in adopted:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.01)
    raise RuntimeError(f"descendants still running {timeout:.0f} s after the command exited")


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.NoSuchProcess:
        return 0


# Two-sided 95% quantiles of Student's t by degrees of freedom (1.96 beyond 30).
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]  # fmt: skip


def paired_ratios(rounds: list[dict[str, float]], numerator: str, denominator: str) -> dict:
    """`numerator / denominator` of a figure measured in the same round, round by round:
    the median, the range and a 95% confidence interval (a t-interval on the logs of the
    per-round ratios, so it is symmetric in ratio terms)."""
    ratios = [r[numerator] / r[denominator] for r in rounds if numerator in r and denominator in r]
    if not ratios:
        return {}
    logs = [math.log(x) for x in ratios]
    mean = statistics.fmean(logs)
    interval = [None, None]
    if len(logs) > 1:
        t = _T95[len(logs) - 2] if len(logs) - 1 <= len(_T95) else 1.96
        half = t * statistics.stdev(logs) / math.sqrt(len(logs))
        interval = [round(math.exp(mean - half), 3), round(math.exp(mean + half), 3)]
    return {
        "median": round(statistics.median(ratios), 3),
        "min": round(min(ratios), 3),
        "max": round(max(ratios), 3),
        "ci95": interval,
        "rounds": [round(x, 3) for x in ratios],
    }


def rotated(tools: list[str], round_number: int) -> list[str]:
    """The tools in the order of one round: each round starts one tool later."""
    turn = round_number % len(tools)
    return tools[turn:] + tools[:turn]


def spread(values: list[float], digits: int = 3) -> dict:
    """The median, the smallest and the largest of a figure measured once per round."""
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
    }
