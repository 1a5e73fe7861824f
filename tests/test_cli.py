"""The command line: JSON output, readable summaries, one-line errors for user mistakes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import child_env


def mixplane(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = child_env(COLUMNS="120")
    return subprocess.run(
        [sys.executable, "-m", "mixplane", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def test_process_json_reports_balanced_stats(small_corpus: Path, tmp_path: Path):
    done = mixplane(
        "process", "-i", str(small_corpus / "wiki"), "-o", str(tmp_path / "o"), "--json"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["stats"]["documents_in"] == report["stats"]["kept"] == 200
    assert report["manifest"].endswith("_manifest.json")


def test_process_summary_lists_reasons(small_corpus: Path, tmp_path: Path):
    config = tmp_path / "p.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "input": str(small_corpus / "wiki" / "a.jsonl"),
                "output": str(tmp_path / "o"),
                "stages": [{"custom_stages:Shout": {"banned": "number 1"}}],
            }
        )
    )
    done = mixplane("process", str(config))
    assert done.returncode == 0, done.stderr
    # The summary is the command's result: on stdout, so `> file` keeps it; the progress bar
    # stays on stderr.
    assert "banned_word" in done.stdout and "kept" in done.stdout
    assert "banned_word" not in done.stderr and "processing" in done.stderr


def test_user_mistakes_are_one_line_errors(tmp_path: Path):
    missing = mixplane("process", "-i", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o"))
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr
    assert "nope.jsonl" in missing.stderr and "matches no file" in missing.stderr
    assert missing.stdout == ""

    bad = tmp_path / "bad.yaml"
    bad.write_text("input: x.jsonl\noutput: o\nstages:\n  - gopher_qualty: {}\n")
    unknown = mixplane("process", str(bad))
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "unknown stage 'gopher_qualty'" in unknown.stderr

    broken = tmp_path / "broken.yaml"
    broken.write_text("input: [unclosed\n")
    assert "invalid YAML" in mixplane("process", str(broken)).stderr


@pytest.mark.parametrize("name", ["[ab].jsonl", "[/]x.jsonl"])
def test_brackets_in_an_error_are_text_not_markup(cli, tmp_path: Path, name: str):
    """Rich took `[ab]` for a style and dropped it, and `[/]` raised a MarkupError."""
    code, out, err = cli("process", "-i", str(tmp_path / name), "-o", str(tmp_path / "o"))
    assert code == 2 and out == ""
    last = err.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"error: input {str(tmp_path / name)!r} matches no file;")


def test_help_explains_options():
    done = mixplane("process", "--help")
    assert done.returncode == 0
    assert "--workers" in done.stdout and "Parallel tasks" in done.stdout


def test_rerun_summary_counts_reused_tasks(small_corpus: Path, tmp_path: Path):
    wiki = small_corpus / "wiki"  # two inputs, so two tasks (one input's small files share one)
    inputs = ("-i", str(wiki / "a.jsonl"), "-i", str(wiki / "b.jsonl.gz"))
    args = ("process", *inputs, "-o", str(tmp_path / "o"))
    assert mixplane(*args).returncode == 0
    (tmp_path / "o" / "_tasks" / "task-00001.json").unlink()
    again = mixplane(*args)
    assert again.returncode == 0, again.stderr
    assert "1 of 2 tasks reused completed work" in again.stdout
    rerun = json.loads(mixplane(*args, "--json").stdout)
    assert rerun["stats"]["skipped_tasks"] == 2
