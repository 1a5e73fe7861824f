"""Run a command and measure it: wall time and peak resident memory of its whole process tree.

Memory is sampled every 50 ms as the sum of RSS over the process and all its descendants, so
process pools are counted in full.
"""

from __future__ import annotations

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
