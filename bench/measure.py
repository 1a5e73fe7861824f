"""Run a command and measure it: wall time and peak resident memory of its whole process tree.

Memory is sampled every 50 ms as the sum of RSS over the process and all its descendants, so
process pools are counted in full.
"""

from __future__ import annotations

import math
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


def measure(
    command: list[str], env: dict[str, str] | None = None, cwd: str | None = None
) -> Measurement:
    """Run `command` to completion, sampling the memory of its process tree."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    root = psutil.Process(process.pid)
    peak = 0
    while process.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(_rss(p) for p in tree))
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.05)
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - started
    return Measurement(seconds, peak / 2**20, process.returncode, stdout, stderr)


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
