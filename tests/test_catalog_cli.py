"""The catalog commands end to end on really tokenized data: register, list, show, query.

The dataset is made by the real steps (process, train a BPE, tokenize), so `--sample` decodes
tokens read from the shards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mixplane import run_pipeline
from mixplane.catalog import Catalog
from mixplane.catalog.sample import sample_documents
from mixplane.tokenize import load_tokenizer, tokenize_dataset, train_tokenizer

TEXTS = {
    "en": "A plain English sentence about data, number {i}.",
    "de": "Ein deutscher Satz über Daten, Nummer {i}, mit ä ö ü.",
    "zh": "关于数据的中文句子，编号 {i} 🚀✨",
}


@pytest.fixture(scope="module")
def tokens(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    rows = [
        {
            "id": f"doc-{i}",
            "text": TEXTS[lang].format(i=i),
            "language": lang,
            "quality": round((i * 37 % 100) / 100, 2),
            "topics": ["a", "b", "c"][: i % 4],
        }
        for i, lang in enumerate(["en", "de", "zh"] * 40)
    ]
    (root / "raw").mkdir()
    (root / "raw" / "docs.jsonl").write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    )
    run_pipeline({"input": str(root / "raw"), "output": str(root / "clean")})
    train_tokenizer(str(root / "clean"), vocab_size=400, out=str(root / "tokenizer.json"))
    tokenize_dataset(
        {
            "input": str(root / "clean"),
            "output": str(root / "tokens"),
            "tokenizer": str(root / "tokenizer.json"),
            "shard_size_mb": 0.001,
        }
    )
    return root


def mixplane(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = os.environ | {"COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mixplane", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def metadata(root: Path) -> list[dict]:
    shards = sorted((root / "tokens").glob("*.meta.parquet"))
    return [row for path in shards for row in pq.read_table(path).to_pylist()]


def test_register_list_show_and_query_from_the_command_line(tokens: Path, tmp_path: Path):
    catalog = str(tmp_path / "c.duckdb")
    folder = str(tokens / "tokens")
    first = mixplane("catalog", "register", folder, "--name", "docs", "-c", catalog, "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    registered = json.loads(first.stdout)
    assert registered["dataset"] == "docs@1" and registered["created"] is True
    assert registered["documents"] == 120 and registered["shards"] > 1
    again = mixplane("catalog", "register", folder, "--name", "docs", "-c", catalog, cwd=tmp_path)
    assert again.returncode == 0 and "unchanged, already registered as docs@1" in again.stderr

    listed = json.loads(mixplane("catalog", "list", "-c", catalog, "--json", cwd=tmp_path).stdout)
    assert [entry["dataset"] for entry in listed] == ["docs@1"]
    shown = mixplane("catalog", "show", "docs@1", "-c", catalog, cwd=tmp_path)
    assert "language" in shown.stderr and "VARCHAR[]" in shown.stderr

    rows = metadata(tokens)
    expected = [r for r in rows if r["language"] == "de" and r["quality"] > 0.5]
    counted = mixplane("query", "language = 'de' AND quality > 0.5", "-c", catalog, "--count", cwd=tmp_path)
    tokens_expected = sum(r["n_tokens"] for r in expected)
    assert counted.stderr.strip() == f"docs@1: {len(expected)} documents, {tokens_expected:,} tokens"

    table = mixplane("query", "list_contains(topics, 'b')", "-c", catalog, cwd=tmp_path)
    assert table.returncode == 0 and "docs@1" in table.stderr
    matching = sum(1 for r in rows if "b" in (r["topics"] or []))
    assert f" {matching} " in table.stderr

    sampled = mixplane("query", "language = 'zh'", "-c", catalog, "--sample", "2", "--json", cwd=tmp_path)
    report = json.loads(sampled.stdout)
    assert report["documents"] == 40
    assert [s["language"] for s in report["samples"]] == ["zh", "zh"]
    assert all("🚀✨" in s["text"] for s in report["samples"])


def test_user_mistakes_are_one_line_errors(tokens: Path, tmp_path: Path):
    catalog = Catalog(tmp_path / "c.duckdb")
    catalog.register(str(tokens / "tokens"), "docs")
    for predicate, message in (
        ("1=1; DROP TABLE versions", "';'"),
        ("read_csv('/etc/passwd') IS NOT NULL", "function 'read_csv' is not allowed"),
        ("langauge = 'de'", "did you mean 'language'"),
    ):
        done = mixplane("query", predicate, "-c", str(tmp_path / "c.duckdb"), cwd=tmp_path)
        assert done.returncode == 2
        assert done.stderr.startswith("error:") and message in done.stderr
        assert "Traceback" not in done.stderr
    done = mixplane("query", "true", "-c", str(tmp_path / "none.duckdb"), cwd=tmp_path)
    assert done.returncode == 2 and "no catalog at" in done.stderr


def test_samples_decode_the_stored_tokens(tokens: Path, tmp_path: Path):
    catalog = Catalog(tmp_path / "c.duckdb")
    catalog.register(str(tokens / "tokens"), "docs")
    part = catalog.select("language IN ('zh', 'de')")["docs"]
    samples = sample_documents(part, 6)
    assert len(samples) == 6
    originals = {
        row["id"]: row["text"]
        for path in sorted((tokens / "clean").glob("part-*.parquet"))
        for row in pq.read_table(path, columns=["id", "text"]).to_pylist()
    }
    tokenizer = load_tokenizer(str(tokens / "tokenizer.json"))
    for sample in samples:
        assert sample["language"] in ("zh", "de")
        original = originals[sample["id"]]
        assert sample["text"] == tokenizer.decode(tokenizer.encode_batch([original])[0])
        assert sample["text"] == original
    assert len({sample["id"] for sample in samples}) == 6
