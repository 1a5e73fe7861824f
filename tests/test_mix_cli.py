"""`mixplane mix preview`: requested vs realized shares, epochs, first sequences."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mixplane.load.tools.synthetic import write_catalog


@pytest.fixture(scope="module")
def mixture_file(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("preview")
    write_catalog(
        str(folder),
        {
            "wiki": {"documents": 300, "seed": 1, "source": "wiki", "mean_tokens": 40},
            "code": {"documents": 200, "seed": 2, "source": "code", "mean_tokens": 40},
        },
    )
    path = folder / "mixture.yaml"
    path.write_text(
        "catalog: catalog.duckdb\n"
        "seq_len: 32\n"
        "eos_id: 0\n"
        "global_batch_size: 1\n"
        f"cache_dir: {folder / 'cache'}\n"
        "components:\n"
        "  wiki: {where: \"source = 'wiki'\", weight: 0.75}\n"
        "  code: {where: \"source = 'code'\", weight: 0.25, max_epochs: 1, on_exhausted: drop}\n"
        "schedule:\n"
        "  - {step: 100, weights: {wiki: 0.5, code: 0.5}}\n"
    )
    return path


def mixplane(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mixplane", *args],
        capture_output=True,
        text=True,
        env=os.environ | {"COLUMNS": "120"},
        timeout=300,
    )


def test_preview_json_reports_shares_epochs_and_samples(mixture_file: Path):
    done = mixplane("mix", "preview", str(mixture_file), "--steps", "200", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["sequences"] == 200 and report["tokens"] == 200 * 32
    wiki, code = report["components"]
    # 100 steps at 3:1, then 100 at 1:1.
    assert wiki["requested"] == pytest.approx((75 + 50) / 200)
    assert abs(wiki["realized"] * 200 - 125) < 2 and abs(code["realized"] * 200 - 75) < 2
    assert wiki["sequences"] + code["sequences"] == 200
    assert code["epochs"] == pytest.approx(code["sequences"] / code["sequences_per_epoch"])
    assert [s["from_sequence"] for s in report["segments"]] == [0, 100]
    assert len(report["samples"]) == 3
    first = report["samples"][0]
    assert first["component"] in ("wiki", "code") and len(first["tokens"]) == 32
    assert "tokenizer not available" in first["text_unavailable"]


def test_preview_table_and_one_line_errors(mixture_file: Path, tmp_path: Path):
    done = mixplane("mix", "preview", str(mixture_file), "--steps", "50", "--show", "1")
    assert done.returncode == 0, done.stderr
    assert "requested" in done.stdout and "wiki" in done.stdout and "wiki" not in done.stderr
    assert "sequence 0" in done.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(mixture_file.read_text().replace("code:", "cod:", 1))
    done = mixplane("mix", "preview", str(bad), "--steps", "5")
    assert done.returncode == 2
    assert "unknown components ['code']" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_where_that_escapes_its_parentheses_is_refused(mixture_file: Path):
    original = mixture_file.read_text()
    escaped = original.replace("where: \"source = 'code'\"", "where: \"source = 'code') OR (true\"")
    assert escaped != original
    mixture_file.write_text(escaped)
    done = mixplane("mix", "preview", str(mixture_file), "--steps", "10")
    assert done.returncode == 2 and done.stdout == ""
    assert "closes a parenthesis the predicate did not open" in " ".join(done.stderr.split())
