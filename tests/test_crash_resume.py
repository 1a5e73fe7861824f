"""A run killed with SIGKILL resumes to byte-identical outputs without redoing finished tasks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import yaml
from conftest import child_env, make_records, write_jsonl
from test_pipeline import part_hashes


def pipeline_yaml(raw: Path, out: Path, path: Path) -> Path:
    config = {
        "input": str(raw / "*.jsonl"),
        "output": str(out),
        "workers": 2,
        "task_size_mb": 0.01,  # a task per file (8 kB): no two fit together
        "stages": [{"custom_stages:Slow": {"seconds": 0.004}}, "custom_stages:Shout"],
    }
    path.write_text(yaml.safe_dump(config))
    return path


def run_cli(config: Path) -> subprocess.Popen:
    env = child_env()
    command = [sys.executable, "-m", "mixplane", "process", str(config), "--json"]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


def test_sigkill_then_rerun_matches_an_uninterrupted_run(tmp_path: Path):
    raw = tmp_path / "raw"
    for i in range(12):
        write_jsonl(raw / f"f{i:02d}.jsonl", make_records(60, f"f{i}"))
    reference = run_cli(pipeline_yaml(raw, tmp_path / "ref", tmp_path / "ref.yaml"))
    assert reference.wait(timeout=300) == 0, reference.stderr.read().decode()

    config = pipeline_yaml(raw, tmp_path / "out", tmp_path / "run.yaml")
    victim = run_cli(config)
    markers = tmp_path / "out" / "_tasks"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if markers.exists() and len(list(markers.glob("*.json"))) >= 3:
            break
        time.sleep(0.02)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    finished = {p.name: p.stat().st_mtime_ns for p in markers.glob("*.json")}
    assert 3 <= len(finished) < 12, "the run must be killed in the middle"
    assert not (tmp_path / "out" / "_manifest.json").exists()

    rerun = run_cli(config)
    assert rerun.wait(timeout=300) == 0, rerun.stderr.read().decode()
    assert part_hashes(tmp_path / "out") == part_hashes(tmp_path / "ref")
    for name, mtime in finished.items():
        assert (markers / name).stat().st_mtime_ns == mtime, f"{name} was redone"
    assert not list((tmp_path / "out").rglob("*.tmp")), "temporary files were left behind"


def test_a_rerun_removes_what_a_killed_writer_left(tmp_path: Path):
    """SIGKILL in the middle of a write leaves the writer's hidden temporary (a completion
    marker, a part): the next run in the folder removes it, whichever file it was."""
    from mixplane.process.pipeline import run_pipeline

    raw = tmp_path / "raw"
    write_jsonl(raw / "a.jsonl", make_records(20, "a"))
    out = tmp_path / "out"
    (out / "_tasks").mkdir(parents=True)
    left = [out / "_tasks" / ".task-00000.json.1a2b3c4d.tmp", out / ".part-00000.parquet.99.tmp"]
    for path in left:
        path.write_bytes(b"half written")
    run_pipeline({"input": str(raw / "*.jsonl"), "output": str(out)})
    assert not [path for path in left if path.exists()]
    assert (out / "part-00000.parquet").exists()


def test_the_workers_end_with_a_killed_run(tmp_path: Path):
    """`mixplane process` with two workers, killed by SIGKILL while both are busy: every
    process it started (the workers, the forkserver, the resource tracker) ends with it.
    (SIGTERM ends the run the same way: Python sets no handler for it.)"""
    raw, busy = tmp_path / "raw", tmp_path / "busy"
    busy.mkdir()
    for name in ("a", "b"):  # two inputs: two tasks
        write_jsonl(raw / f"{name}.jsonl", make_records(1, name))
    config = tmp_path / "hold.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "input": [str(raw / "a.jsonl"), str(raw / "b.jsonl")],
                "output": str(tmp_path / "out"),
                "workers": 2,
                "stages": [{"custom_stages:Hold": {"folder": str(busy)}}],
            }
        )
    )
    run = run_cli(config)
    descendants: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 120
        while len(list(busy.iterdir())) < 2 and run.poll() is None:
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.02)
        assert run.poll() is None, run.stderr.read().decode()
        descendants = psutil.Process(run.pid).children(recursive=True)
        workers = {int(p.name) for p in busy.iterdir()}
        assert workers <= {p.pid for p in descendants} and len(descendants) >= 4
        run.send_signal(signal.SIGKILL)
        assert run.wait() == -signal.SIGKILL
        gone, alive = psutil.wait_procs(descendants, timeout=60)
        alive = [p for p in alive if _running(p)]
        assert not alive, [(p.pid, p.cmdline()[-1][:60]) for p in alive]
    finally:  # whatever the outcome, leave no process of this test behind
        if run.poll() is None:
            run.kill()
        for process in descendants:
            if _running(process):
                process.kill()


def _running(process: psutil.Process) -> bool:
    """Alive and not a zombie (an ended process its new parent has not reaped yet)."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
