"""Processes of one machine started side by side for the tests, and what they wait on.

A test holds one process's download at a `Gate` of the fault proxy, then lets it go once
the other process has either asked for the same file (it would fetch it twice) or waits on a
file lock for the first one's copy (`/proc/locks` lists such a waiter with `->`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SCRIPTS = Path(__file__).parent / "scripts"


def start(script: str, *args: object) -> subprocess.Popen:
    """`python tests/scripts/SCRIPT ARGS...`, its output captured."""
    command = [sys.executable, str(SCRIPTS / script), *map(str, args)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(run: subprocess.Popen) -> str:
    """The standard output of a process that must succeed."""
    out, err = run.communicate(timeout=240)
    assert run.returncode == 0, err
    return out


def waiting_on_a_lock(pids: set[int]) -> bool:
    """Whether one of `pids` is blocked waiting for a file lock (flock) another one holds."""
    with open("/proc/locks") as handle:
        for line in handle:
            fields = line.split()
            if "->" in fields:
                at = fields.index("->")
                if fields[at + 1] == "FLOCK" and int(fields[at + 4]) in pids:
                    return True
    return False


def wait_until(condition: Callable[[], bool], runs: list[subprocess.Popen]) -> None:
    """Poll `condition` while `runs` go on (a process that fails ends the wait with its
    error; one that never gets there, after two minutes)."""
    deadline = time.monotonic() + 120
    while not condition():
        for run in runs:
            if run.poll() not in (None, 0):
                raise AssertionError(run.communicate()[1])
        if time.monotonic() > deadline:
            raise TimeoutError("the processes never got there")
        time.sleep(0.005)


def hold_until_one_waits(gate, runs: list[subprocess.Popen]) -> None:
    """Hold the first download through `gate` until another of `runs` asks for the same file
    or waits on a lock for it, then let every download through."""
    wait_until(lambda: gate.held >= 1, runs)
    pids = {run.pid for run in runs}
    wait_until(lambda: gate.held >= 2 or waiting_on_a_lock(pids), runs)
    gate.open()
