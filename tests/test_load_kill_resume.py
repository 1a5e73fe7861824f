"""A training loop with DataLoader workers, written with the README's loading snippet,
killed with SIGKILL and resumed from its last checkpoint, continues with exactly the batches
of the uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from mixplane.load.tools.synthetic import write_catalog

SCRIPT = Path(__file__).parent / "scripts" / "train_loop.py"
README = Path(__file__).parent.parent / "README.md"
STEPS = 40


@pytest.fixture(scope="module")
def mixture(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("kill")
    catalog = write_catalog(
        str(folder),
        {
            "wiki": {"documents": 400, "seed": 1, "source": "wiki", "mean_tokens": 60},
            "code": {"documents": 300, "seed": 2, "source": "code", "mean_tokens": 80},
        },
    )
    spec = {
        "catalog": catalog,
        "cache_dir": str(folder / "cache"),
        "seq_len": 64,
        "seed": 3,
        "eos_id": 0,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.6},
            "code": {"where": "source = 'code'", "weight": 0.4},
        },
    }
    (folder / "mixture.yaml").write_text(yaml.safe_dump(spec))
    return str(folder)


def train(mixture: str, workdir: Path) -> subprocess.Popen:
    """The README's snippet in a training loop, run in the folder of `mixture.yaml`."""
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(README), str(workdir), str(STEPS)],
        cwd=mixture,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def logged(workdir: Path) -> list[tuple[int, str]]:
    path = workdir / "batches.log"
    if not path.exists():
        return []
    lines = [line.split() for line in path.read_text().splitlines()]
    return [(int(step), digest) for step, digest in lines]


def running(processes: list[psutil.Process]) -> list[psutil.Process]:
    """The processes that have not ended (an ended one may wait as a zombie to be reaped)."""
    alive = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


def finish(process: subprocess.Popen) -> None:
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output.decode()


def test_sigkill_mid_run_then_resume_gives_the_uninterrupted_batches(mixture, tmp_path):
    whole = tmp_path / "whole"
    whole.mkdir()
    finish(train(mixture, whole))
    expected = dict(logged(whole))
    assert sorted(expected) == list(range(1, STEPS + 1))
    assert len(set(expected.values())) == STEPS  # the stream does not repeat itself

    killed = tmp_path / "killed"
    killed.mkdir()
    process = train(mixture, killed)
    deadline = time.monotonic() + 120
    while len(logged(killed)) < 24 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    workers = psutil.Process(process.pid).children(recursive=True)
    assert len(workers) >= 2
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    # The DataLoader workers notice that their trainer died and end promptly.
    alive = running(workers)
    deadline = time.monotonic() + 2
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = running(workers)
    assert not alive, f"workers still alive 2 s after their trainer was killed: {alive}"

    before_kill = logged(killed)
    assert 24 <= len(before_kill) < STEPS
    finish(train(mixture, killed))  # the same command resumes from the last checkpoint
    after = logged(killed)[len(before_kill) :]
    checkpoint_step = (len(before_kill) // 10) * 10
    assert [step for step, _ in after] == list(range(checkpoint_step + 1, STEPS + 1))
    for step, digest in before_kill + after:
        assert digest == expected[step], f"step {step} differs from the uninterrupted run"
