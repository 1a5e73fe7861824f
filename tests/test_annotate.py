"""`mixplane annotate`: a classifier's scores added to a registered version as a new column,
with the version's token files shared, not copied."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import write_jsonl
from test_classify import SMALL, good_text, spam_text, write_corpus

from mixplane.annotate import annotate_dataset
from mixplane.catalog import Catalog
from mixplane.classify import load_classifier, train_fasttext
from mixplane.errors import ConfigError, MixplaneError
from mixplane.lineage import trace
from mixplane.load.dataset import MixtureDataset
from mixplane.process.pipeline import run_pipeline
from mixplane.tokenize.run import tokenize_dataset
from mixplane.tokenize.train import train_tokenizer


def web_text(number: int) -> str:
    """Prose or spam, so scores spread over both ends; some with newlines and odd spaces."""
    if number % 3 == 0:
        return good_text(7000 + number).replace(". ", ".\n", 1)
    return spam_text(number) + ("  \u00a0end" if number % 5 == 0 else "")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A processed, tokenized (EOS added, several shards per input file) and registered
    dataset `web@1`, and a quality model trained on another corpus."""
    root = tmp_path_factory.mktemp("annotate")
    write_jsonl(root / "raw" / "web" / "a.jsonl", [{"id": f"a{i}", "text": web_text(i)} for i in range(60)])
    write_jsonl(
        root / "raw" / "web" / "b.jsonl",
        [{"id": f"b{i}", "text": web_text(100 + i)} for i in range(45)],
    )
    run_pipeline({"input": str(root / "raw" / "web" / "*.jsonl"), "output": str(root / "clean")})
    train_tokenizer(str(root / "clean"), 400, str(root / "tok.json"))
    tokenize_dataset(
        {
            "input": str(root / "clean"),
            "output": str(root / "tokens"),
            "tokenizer": str(root / "tok.json"),
            "eos": True,
            "shard_size_mb": 0.004,  # a few shards per input file
        }
    )
    Catalog(root / "catalog.duckdb").register(str(root / "tokens"), "web")
    training = write_corpus(root / "training", 120)
    train_fasttext(
        {
            "output": str(root / "models" / "quality"),
            "positive": str(training / "wiki"),
            "negative": str(training / "web"),
        },
        **SMALL,
        lr=0.5,
    )
    return root


@pytest.fixture
def work(built: Path, tmp_path: Path, monkeypatch) -> Path:
    """A copy of the built folder of one's own (the catalog records absolute paths: it is
    registered again here), as the current directory."""
    for name in ("raw", "clean", "tokens", "models", "tok.json"):
        source = built / name
        copy = shutil.copytree if source.is_dir() else shutil.copy
        copy(source, tmp_path / name)
    Catalog(tmp_path / "catalog.duckdb").register(str(tmp_path / "tokens"), "web")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def annotate(work: Path, **options):
    config = {"dataset": "web@1", "classifier": "models/quality", "as": "quality"}
    return annotate_dataset(config | {"catalog": str(work / "catalog.duckdb")} | options)


def column_values(folder: str) -> dict[str, list[float]]:
    return {
        path.name: pq.read_table(path).column(0).to_pylist()
        for path in sorted(Path(folder).glob("*.parquet"))
    }


def expected_scores(work: Path) -> dict[str, float]:
    """Each document's score, by id, straight from the model on the processed text."""
    rows = pa.concat_tables(
        [pq.read_table(p) for p in sorted((work / "clean").glob("part-*.parquet"))]
    ).to_pylist()
    model = load_classifier(work / "models" / "quality")
    scores = model.scores([row["text"] for row in rows], "hq")
    return {row["id"]: float(score) for row, score in zip(rows, scores, strict=True)}


def test_annotate_adds_the_column_as_a_new_version_sharing_the_token_files(work: Path):
    result = annotate(work)
    catalog = Catalog(work / "catalog.duckdb")
    old, new = catalog.get("web@1"), catalog.get("web@2")
    assert result.version.ref == "web@2" and result.created
    assert result.text["kind"] == "parts"
    # The same shards in the same folder: the loader reads the very same files.
    assert new.uri == old.uri and new.shards == old.shards
    assert len(old.shards) > 2
    token_files = sorted((work / "tokens").glob("shard-*"))
    inodes = {path.name: path.stat().st_ino for path in token_files}
    assert sorted((work / "tokens").glob("shard-*")) == token_files
    # What was written: one small file per shard holding only the new column, and a manifest.
    folder = Path(result.column.folder)
    assert folder.parent == work / "tokens" / "_columns"
    written = sorted(p.name for p in folder.iterdir())
    assert written == sorted([f"{s.stem}.parquet" for s in new.shards] + ["_manifest.json"])
    for shard in new.shards:
        table = pq.read_table(folder / f"{shard.stem}.parquet")
        assert table.column_names == ["quality"] and table.num_rows == shard.documents
    assert result.written_bytes == sum(p.stat().st_size for p in folder.iterdir())
    assert result.shared_bytes == sum(p.stat().st_size for p in token_files)
    assert {p.name: p.stat().st_ino for p in token_files} == inodes
    # The version's schema has the column; the scores are the model's on each document.
    assert new.schema["quality"] == "DOUBLE" and "quality" not in old.schema
    expected = expected_scores(work)
    ids = [
        i
        for shard in new.shards
        for i in pq.read_table(work / "tokens" / f"{shard.stem}.meta.parquet")["id"].to_pylist()
    ]
    scores = [v for values in column_values(folder).values() for v in values]
    by_id = dict(zip(ids, scores, strict=True))
    assert by_id == pytest.approx(expected, abs=0, rel=0)
    assert min(scores) < 0.2 and max(scores) > 0.8  # the test sees both ends


def test_where_selects_by_the_new_column(work: Path):
    annotate(work)
    catalog = Catalog(work / "catalog.duckdb")
    expected = expected_scores(work)
    selection = catalog.select("quality >= 0.8 AND n_tokens > 0", ["web@2"])
    part = selection["web@2"]
    shards, indices = part.document_indices()
    new = catalog.get("web@2")
    metas = {
        i: pq.read_table(work / "tokens" / f"{s.stem}.meta.parquet")["id"].to_pylist()
        for i, s in enumerate(new.shards)
    }
    chosen = {metas[s][i] for s, i in zip(shards.tolist(), indices.tolist(), strict=True)}
    assert chosen == {i for i, score in expected.items() if score >= 0.8}
    assert 0 < len(chosen) < len(expected)
    # The old version has no such column.
    with pytest.raises(MixplaneError, match="quality"):
        catalog.select("quality >= 0.8", ["web@1"])
