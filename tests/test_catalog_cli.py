"""The catalog commands end to end on really tokenized data: register, list, show, query.

The dataset is made by the real steps (process, train a BPE, tokenize), so `--sample` decodes
tokens read from the shards.
"""

from __future__ import annotations

import json
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


def metadata(root: Path) -> list[dict]:
    shards = sorted((root / "tokens").glob("*.meta.parquet"))
    return [row for path in shards for row in pq.read_table(path).to_pylist()]


def test_register_list_show_and_query_from_the_command_line(tokens: Path, tmp_path: Path, cli):
    catalog = str(tmp_path / "c.duckdb")
    folder = str(tokens / "tokens")
    code, out, err = cli("catalog", "register", folder, "--name", "docs", "-c", catalog, "--json")
    assert code == 0, err
    registered = json.loads(out)
    assert registered["dataset"] == "docs@1" and registered["created"] is True
    assert registered["documents"] == 120 and registered["shards"] > 1
    code, out, err = cli("catalog", "register", folder, "--name", "docs", "-c", catalog)
    assert code == 0 and "unchanged, already registered as docs@1" in out and err == ""

    # Results are on stdout (so `> file` and pipes take them), nothing of them on stderr.
    listed = json.loads(cli("catalog", "list", "-c", catalog, "--json")[1])
    assert [entry["dataset"] for entry in listed] == ["docs@1"]
    _, out, err = cli("catalog", "list", "-c", catalog)
    assert "docs@1" in out and err == ""
    _, shown, err = cli("catalog", "show", "docs@1", "-c", catalog)
    assert "language" in shown and "VARCHAR[]" in shown and err == ""

    rows = metadata(tokens)
    expected = [r for r in rows if r["language"] == "de" and r["quality"] > 0.5]
    _, counted, err = cli("query", "language = 'de' AND quality > 0.5", "-c", catalog, "--count")
    assert err == ""
    tokens_expected = sum(r["n_tokens"] for r in expected)
    assert counted.strip() == f"docs@1: {len(expected)} documents, {tokens_expected:,} tokens"

    code, table, _ = cli("query", "list_contains(topics, 'b')", "-c", catalog, "--sample", "1")
    assert code == 0 and "docs@1" in table
    matching = sum(1 for r in rows if "b" in (r["topics"] or []))
    assert f" {matching} " in table
    assert "topics=['a', 'b'" in table


def test_query_samples_from_a_separate_process(tokens: Path, tmp_path: Path):
    """The installed command end to end: a fresh process reads the catalog and decodes."""
    Catalog(tmp_path / "catalog.duckdb").register(str(tokens / "tokens"), "docs")
    done = subprocess.run(
        [sys.executable, "-m", "mixplane", "query", "language = 'zh'", "--sample", "2", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # the default catalog is ./catalog.duckdb
        timeout=120,
    )
    report = json.loads(done.stdout)
    assert report["documents"] == 40
    assert [s["language"] for s in report["samples"]] == ["zh", "zh"]
    assert all("🚀✨" in s["text"] for s in report["samples"])


def test_user_mistakes_are_one_line_errors(tokens: Path, tmp_path: Path, cli):
    catalog = str(tmp_path / "c.duckdb")
    Catalog(catalog).register(str(tokens / "tokens"), "docs")
    for predicate, message in (
        ("1=1; DROP TABLE versions", "';'"),
        ("read_csv('/etc/passwd') IS NOT NULL", "function 'read_csv' is not allowed"),
        ("langauge = 'de'", "did you mean 'language'"),
        ("language = 'de') OR (true", "closes a parenthesis the predicate did not open"),
        ("language = 'de' -- AND 1=0", "comment at position 16"),
        ("(language = 'de'", "is never closed"),
        ("source = '日本語' AND x", "unknown column 'x'"),
    ):
        code, out, err = cli("query", predicate, "-c", catalog)
        assert code == 2 and out == ""
        assert err.startswith("error:") and message in " ".join(err.split())
    code, _, err = cli("query", "true", "-c", str(tmp_path / "none.duckdb"))
    assert code == 2 and "no catalog at" in err
    code, _, err = cli("catalog", "register", str(tmp_path), "--name", "x", "-c", catalog)
    assert code == 2 and "_manifest.json: missing" in " ".join(err.split())


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
