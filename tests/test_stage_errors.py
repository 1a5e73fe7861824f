"""An exception raised by a stage's own code is a stage error, not a bad record: the record
goes to `_errors/` with the traceback, the statistics and the manifest count it, and the
run fails unless `max_stage_errors` allows that many; a rerun redoes the tasks that had
errors (after the stage is fixed)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import make_records, write_jsonl
from test_cli import mixplane
from test_pipeline import part_hashes

from mixplane import run_pipeline
from mixplane.errors import StageErrorsError
from mixplane.manifest import read_json


def corpus(root: Path) -> Path:
    """Four files of ten records; ids ending in 3 are `d0-3`, `d1-3`... one per file, a
    tenth of the records: under the 90% that fails a run as a setup mistake."""
    raw = root / "raw" / "web"
    for i in range(4):
        write_jsonl(raw / f"f{i}.jsonl", make_records(10, f"d{i}"))
    return raw


def buggy(root: Path, **options) -> dict:
    bug = root / "bug"
    bug.touch()
    return {"custom_stages:BuggyUntilFixed": {"bug": str(bug), **options}}


def test_a_stage_error_fails_the_run_and_every_record_is_accounted_for(tmp_path: Path):
    raw, out = corpus(tmp_path), tmp_path / "out"
    config = {"input": str(raw), "output": str(out), "stages": [buggy(tmp_path)]}
    with pytest.raises(StageErrorsError) as caught:
        run_pipeline(config)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("4 records hit errors in stage code: buggy raised KeyError on 4")
    assert "(KeyError: 'missing')" in message and f"{out}/_errors/" in message
    assert "max_stage_errors: N (CLI: --max-stage-errors N)" in message
    stats = caught.value.result.stats
    assert (stats["documents_in"], stats["kept"], stats["errored"]) == (40, 36, 4)
    assert stats["quarantined"] == 0 and stats["quarantined_by"] == {}
    assert stats["errored_by"] == {"buggy": {"KeyError": 4}}
    assert json.loads((out / "_stats.json").read_text())["errored"] == 4
    manifest = read_json(str(out / "_manifest.json"))
    assert manifest["stats"] == {
        "documents_in": 40,
        "kept": 36,
        "excluded": 0,
        "quarantined": 0,
        "errored": 4,
    }
    rows = pq.read_table(out / "_errors").to_pylist()
    assert sorted(row["id"] for row in rows) == ["d0-3", "d1-3", "d2-3", "d3-3"]
    first = rows[0]
    assert first["stage"] == "buggy" and first["error"] == "KeyError: 'missing'"
    assert first["traceback"].startswith("Traceback (most recent call last):")
    assert (
        "custom_stages.py" in first["traceback"]
        and 'doc.metadata["missing"]' in (first["traceback"])
    )
    assert json.loads(first["raw"])["text"] == make_records(10, "d0")[3]["text"]
    assert "_errors/part-00000.parquet" in {o["path"] for o in manifest["outputs"]}
    assert not (out / "_quarantine").exists()

    allowed = run_pipeline(config | {"output": str(tmp_path / "o2"), "max_stage_errors": 4})
    assert allowed.stats["errored"] == 4


def test_fixing_the_stage_and_running_again_redoes_only_the_tasks_with_errors(tmp_path: Path):
    raw, out = corpus(tmp_path), tmp_path / "out"
    stage = buggy(tmp_path, suffix="d1-3")
    # A task per file: each file (1.2 kB) is within 0.002 MB, and no two together.
    config = {"input": str(raw), "output": str(out), "stages": [stage], "task_size_mb": 0.002}
    with pytest.raises(StageErrorsError, match="^1 records hit errors"):
        run_pipeline(config)
    markers = {p.name: p.stat().st_mtime_ns for p in (out / "_tasks").iterdir()}
    (tmp_path / "bug").unlink()  # the fix
    fixed = run_pipeline(config)
    assert (fixed.stats["kept"], fixed.stats["errored"], fixed.skipped_tasks) == (40, 0, 3)
    redone = [name for name, mtime in markers.items()
              if (out / "_tasks" / name).stat().st_mtime_ns != mtime]  # fmt: skip
    assert redone == ["task-00001.json"]
    assert not (out / "_errors").exists() or not list((out / "_errors").iterdir())
    run_pipeline(config | {"output": str(tmp_path / "clean")})
    assert part_hashes(out) == part_hashes(tmp_path / "clean")


def test_with_a_global_stage_a_rerun_after_errors_starts_over(tmp_path: Path):
    """The record a fixed stage now keeps is a duplicate of one in another task: the global
    stage must see it, so the rerun redoes every task (and gives a clean run's bytes)."""
    raw, out = corpus(tmp_path), tmp_path / "out"
    write_jsonl(raw / "f4.jsonl", [{"id": "e-3", "text": make_records(10, "d0")[5]["text"]}])
    stages = [buggy(tmp_path, suffix="e-3"), "dedup_exact"]
    config = {"input": str(raw), "output": str(out), "stages": stages, "max_stage_errors": 1}
    first = run_pipeline(config)
    assert (first.stats["errored"], first.stats["excluded"]) == (1, 0)
    (tmp_path / "bug").unlink()
    fixed = run_pipeline(config)
    assert (fixed.stats["errored"], fixed.stats["excluded"], fixed.skipped_tasks) == (0, 1, 0)
    assert fixed.stats["excluded_by"] == {"dedup_exact": {"duplicate": 1}}
    clean = run_pipeline(config | {"output": str(tmp_path / "clean")})
    assert part_hashes(out) == part_hashes(tmp_path / "clean")
    assert clean.stats["excluded"] == 1


def test_cli_exits_1_with_one_line_and_allows_errors_when_told(tmp_path: Path):
    raw = corpus(tmp_path)
    config = tmp_path / "p.yaml"
    stage = json.dumps(buggy(tmp_path))
    config.write_text(f"input: {raw}\noutput: {tmp_path / 'o'}\nstages: [{stage}]\n")
    done = mixplane("process", str(config), "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    error = done.stderr.rstrip("\n").splitlines()[-1]
    assert error.startswith("error: 4 records hit errors in stage code: buggy raised KeyError")
    assert json.loads(done.stdout)["stats"]["errored"] == 4
    summary = mixplane("process", str(config), "--max-stage-errors", "4")
    assert summary.returncode == 0, summary.stderr
    assert any(
        line.split()[:4] == ["│", "errored", "│", "buggy"] and "KeyError" in line
        for line in summary.stdout.splitlines()
    ), summary.stdout
