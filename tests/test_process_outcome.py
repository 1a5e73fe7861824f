"""A run whose records are nearly all quarantined for one reason fails, outputs written."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import make_records, write_jsonl
from test_cli import mixplane

from mixplane import run_pipeline
from mixplane.errors import InputError, MostlyQuarantinedError


def bodies(n: int, prefix: str = "r") -> list[dict]:
    """Records whose text sits under `body`, not the default `text`."""
    return [{"id": f"{prefix}-{i}", "body": f"text number {i}"} for i in range(n)]


def test_wrong_text_key_fails_the_run_after_writing_every_output(tmp_path: Path):
    raw = write_jsonl(tmp_path / "raw" / "web" / "a.jsonl", bodies(40))
    out = tmp_path / "out"
    with pytest.raises(MostlyQuarantinedError) as caught:
        run_pipeline({"input": str(raw), "output": str(out)})
    message = str(caught.value)
    assert "\n" not in message and isinstance(caught.value, InputError)
    assert message.startswith(f"{raw}: 40 of 40 records quarantined by read")
    assert "record has no text field 'text': its fields are id, body" in message
    assert "set text_key" in message and "allow_mostly_quarantined" in message
    assert caught.value.result.stats["quarantined"] == 40
    assert len(pq.read_table(out / "_quarantine")) == 40
    assert (out / "_manifest.json").exists()
    assert json.loads((out / "_stats.json").read_text())["quarantined"] == 40

    allowed = run_pipeline(
        {"input": str(raw), "output": str(tmp_path / "o2"), "allow_mostly_quarantined": True}
    )
    assert allowed.stats["quarantined"] == 40
    fixed = run_pipeline({"input": [{"path": str(raw), "text_key": "body"}], "output": str(out)})
    assert fixed.stats["kept"] == 40


def test_many_small_files_add_up_to_their_input(tmp_path: Path):
    for i in range(6):
        write_jsonl(tmp_path / "raw" / f"f{i}.jsonl", bodies(3, f"f{i}"))
    pattern = str(tmp_path / "raw" / "*.jsonl")
    with pytest.raises(MostlyQuarantinedError, match=r"^input .*\*\.jsonl: 18 of 18 records"):
        run_pipeline({"input": pattern, "output": str(tmp_path / "out"), "workers": 2})


def test_a_few_bad_records_or_a_tiny_file_do_not_fail_the_run(tmp_path: Path):
    raw = tmp_path / "raw"
    write_jsonl(raw / "mostly_good.jsonl", make_records(30) + bodies(12))
    write_jsonl(raw / "tiny" / "t.jsonl", bodies(3))
    first = run_pipeline({"input": str(raw / "mostly_good.jsonl"), "output": str(tmp_path / "a")})
    second = run_pipeline({"input": str(raw / "tiny"), "output": str(tmp_path / "b")})
    assert (first.stats["quarantined"], second.stats["quarantined"]) == (12, 3)


def test_cli_exits_non_zero_with_one_line_and_still_reports(tmp_path: Path):
    raw = write_jsonl(tmp_path / "raw" / "a.jsonl", bodies(25))
    done = mixplane("process", "-i", str(raw), "-o", str(tmp_path / "o"), "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["stats"]["quarantined"] == 25
    # One line, however long, when stderr is a pipe (Rich would wrap it at 80 columns).
    error = done.stderr.rstrip("\n").splitlines()[-1]
    assert error.startswith("error: ") and len(error) > 200
    assert "a.jsonl: 25 of 25 records quarantined" in error and "set text_key" in error
    assert error.endswith("(CLI: --allow-mostly-quarantined)")
    allowed = mixplane(
        "process", "-i", str(raw), "-o", str(tmp_path / "o"), "--allow-mostly-quarantined"
    )
    assert allowed.returncode == 0, allowed.stderr
    assert "record has no text field 'text'" in allowed.stdout
