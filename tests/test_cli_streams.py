"""Where the command line writes: results on stdout, progress, notes and errors on stderr.

Every command runs as the installed `mixplane` script in a child process whose stdout and
stderr are pipes, as in `mixplane query ... > file` or `mixplane catalog list | grep web`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from mixplane.catalog.synthetic import random_properties, write_metadata_shards
from mixplane.load.tools.synthetic import write_catalog

SCRIPT = Path(sys.executable).with_name("mixplane")
# Deep enough that an 80-column table would have cut it short.
DEEP = "a-folder-with-a-rather-long-name/and-another-one-below-it"


def mixplane(*args: str) -> subprocess.CompletedProcess:
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "mixplane"]
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=300)


def ok(*args: str) -> subprocess.CompletedProcess:
    done = mixplane(*args)
    assert done.returncode == 0, done.stderr
    return done


def failed(*args: str) -> subprocess.CompletedProcess:
    """A user mistake: exit code 2, nothing on stdout, one error on stderr."""
    done = mixplane(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.startswith("error:") and "Traceback" not in done.stderr
    return done


@pytest.fixture(scope="module")
def sparse(tmp_path_factory) -> tuple[Path, pa.Table]:
    """A metadata-only dataset with a column no document has a value for (Parquet's null
    type) and a typed one that is null everywhere, in a folder not yet registered."""
    root = tmp_path_factory.mktemp("streams")
    table = random_properties(60, seed=3)
    table = table.append_column("nothing", pa.array([None] * 60))
    table = table.append_column("unscored", pa.array([None] * 60, pa.float64()))
    folder = root / DEEP / "sparse"
    write_metadata_shards(str(folder), [table.slice(0, 25), table.slice(25)])
    return folder, table


@pytest.fixture(scope="module")
def mixture(tmp_path_factory) -> Path:
    """Two tokenized datasets in a catalog and a mixture over them with a schedule."""
    folder = tmp_path_factory.mktemp("streams-mix")
    write_catalog(
        str(folder),
        {
            "wiki": {"documents": 200, "seed": 1, "source": "wiki", "mean_tokens": 30},
            "code": {"documents": 100, "seed": 2, "source": "code", "mean_tokens": 30},
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
        "  code: {where: \"source = 'code'\", weight: 0.25}\n"
        "schedule:\n"
        "  - {step: 50, weights: {wiki: 0.5, code: 0.5}}\n"
    )
    return path


def test_catalog_results_are_on_stdout_only(sparse, tmp_path: Path):
    folder, table = sparse
    catalog = str(tmp_path / "c.duckdb")

    done = ok("catalog", "register", str(folder), "--name", "sparse", "-c", catalog)
    assert done.stdout.startswith("registered sparse@1: 60 documents") and done.stderr == ""

    done = ok("catalog", "list", "-c", catalog)
    # The row of the dataset, whole (a file or a pipe has no width to cut the path to).
    row = next(line for line in done.stdout.splitlines() if "sparse@1" in line)
    assert str(folder) in row and "60" in row.split()
    assert done.stderr == ""
    listed = json.loads(ok("catalog", "list", "-c", catalog, "--json").stdout)
    assert [entry["dataset"] for entry in listed] == ["sparse@1"]

    done = ok("catalog", "show", "sparse", "-c", catalog)
    assert str(folder) in done.stdout.splitlines()[0] and done.stderr == ""
    types = {
        cells[0]: cells[1]
        for line in done.stdout.splitlines()
        if len(cells := [cell.strip() for cell in line.strip("│ ").split("│")]) == 2
    }
    assert types["nothing"] == "null (no values)" and types["unscored"] == "DOUBLE"
    assert types["language"] == "VARCHAR" and "NULL" not in done.stdout

    german = pc.equal(table["language"], "de")
    documents = pc.sum(german.cast(pa.int64())).as_py()
    tokens = pc.sum(pc.if_else(german, table["n_tokens"], 0)).as_py()
    done = ok("query", "language = 'de'", "-c", catalog, "--count")
    assert done.stdout == f"sparse@1: {documents} documents, {tokens:,} tokens\n"
    assert done.stderr == ""

    everything = f"sparse@1: 60 documents, {pc.sum(table['n_tokens']).as_py():,} tokens\n"
    for predicate in ("nothing IS NULL", "unscored IS NULL AND nothing IS NULL"):
        assert ok("query", predicate, "-c", catalog, "--count").stdout == everything
    assert "sparse@1: 0 documents" in ok("query", "nothing = 'x'", "-c", catalog, "--count").stdout

    done = ok("query", "language = 'de'", "-c", catalog)
    assert "sparse@1" in done.stdout and f" {documents} " in done.stdout
    assert "sparse@1" not in done.stderr
    done = ok("query", "language = 'de'", "-c", catalog, "--json")
    assert json.loads(done.stdout)["documents"] == documents and done.stderr == ""


def test_errors_are_on_stderr_with_exit_code_2_and_nothing_on_stdout(sparse, tmp_path: Path):
    folder, _ = sparse
    catalog = str(tmp_path / "c.duckdb")
    ok("catalog", "register", str(folder), "--name", "sparse", "-c", catalog)

    assert "unknown column 'nope'" in failed("query", "nope = 1", "-c", catalog).stderr
    failed("query", "nope = 1", "-c", catalog, "--json")
    failed("query", "true", "-c", str(tmp_path / "none.duckdb"), "--count")
    failed("catalog", "show", "sparse@9", "-c", catalog)
    failed("catalog", "register", str(tmp_path / "empty"), "--name", "x", "-c", catalog)

    # A long error into a pipe is one line, not cut at 80 columns (no COLUMNS is set).
    missing = str(tmp_path / DEEP / "none.duckdb")
    long = failed("query", "true", "-c", missing, "--count").stderr
    assert len(long) > 120 and long.count("\n") == 1 and missing in long, long

    usage = mixplane("query")  # click's own usage errors go to stderr as well
    assert usage.returncode == 2 and usage.stdout == "" and "Missing argument" in usage.stderr


def test_process_and_tokenize_summaries_on_stdout_progress_on_stderr(
    small_corpus: Path, tmp_path: Path
):
    wiki = str(small_corpus / "wiki")
    done = ok("process", "-i", wiki, "-o", str(tmp_path / "clean"))
    assert "kept" in done.stdout and "manifest:" in done.stdout
    assert "kept" not in done.stderr and "processing" in done.stderr
    done = ok("process", "-i", wiki, "-o", str(tmp_path / "clean2"), "--json")
    assert json.loads(done.stdout)["stats"]["kept"] == 200 and "processing" not in done.stderr

    tokenizer = str(tmp_path / "tokenizer.json")
    done = ok("train-tokenizer", str(tmp_path / "clean"), "--vocab-size", "300", "-o", tokenizer)
    assert "byte-level BPE" in done.stdout and done.stderr == ""

    tokens = str(tmp_path / "tokens")
    done = ok("tokenize", str(tmp_path / "clean"), tokens, "-t", tokenizer)
    assert "tokenized in" in done.stdout and "manifest:" in done.stdout
    assert "tokenized in" not in done.stderr and "tokenizing" in done.stderr
    done = ok("tokenize", str(tmp_path / "clean"), str(tmp_path / "t2"), "-t", tokenizer, "--json")
    assert json.loads(done.stdout)["stats"]["documents"] == 200 and "tokenizing" not in done.stderr

    done = ok("export", tokens, str(tmp_path / "mega" / "web"))
    assert "exported 200 documents" in done.stdout and done.stderr == ""


def test_mixture_preview_and_export_results_on_stdout_notes_on_stderr(
    mixture: Path, tmp_path: Path
):
    done = ok("mix", "preview", str(mixture), "--steps", "100", "--show", "1")
    assert "requested" in done.stdout and "sequence 0" in done.stdout and done.stderr == ""
    done = ok("mix", "preview", str(mixture), "--steps", "100", "--json")
    assert json.loads(done.stdout)["sequences"] == 100 and done.stderr == ""

    done = ok("export", str(mixture), str(tmp_path / "mega"))
    assert "Megatron blend: --data-path" in done.stdout and "schedule" not in done.stdout
    assert "the mixture's schedule is not part of the blend" in done.stderr
    done = ok("export", str(mixture), str(tmp_path / "mega2"), "--json")
    assert json.loads(done.stdout)["scheduled"] and done.stderr == ""
