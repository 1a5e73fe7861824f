"""docs/quality.md's quality buckets, run as a user would: score with `classify`, tokenize,
register, and a mixture whose buckets are `where` predicates on the score."""

from __future__ import annotations

import random
import shlex
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import write_jsonl
from readme_blocks import readme_block
from test_classify import SMALL, good_text, spam_text, write_corpus

from mixplane.classify import train_fasttext
from mixplane.load.dataset import MixtureDataset
from mixplane.load.tools.preview import preview_mixture

QUALITY_MD = Path(__file__).parent.parent / "docs" / "quality.md"
# The buckets of the docs' mixture, as score ranges [low, high).
BUCKETS = {"web/high": (0.7, np.inf), "web/medium": (0.3, 0.7), "web/low": (-np.inf, 0.3)}
# The leaves' shares of tokens: web 0.8 split 0.5 / 0.3 / 0.2, wiki 0.2.
SHARES = {"web/high": 0.4, "web/medium": 0.24, "web/low": 0.16, "wiki": 0.2}


def docs_block(language: str, marker: str) -> str:
    return readme_block(language, marker, QUALITY_MD)


def mixed_text(number: int) -> str:
    """Prose with a growing share of spam words: scores spread over the whole range."""
    share = number / 90
    good = good_text(9000 + number).split()
    spam = spam_text(9000 + number).split()
    words = good[: int(len(good) * (1 - share))] + spam[: int(len(spam) * share) + 1]
    random.Random(number).shuffle(words)
    return " ".join(words)


@pytest.fixture
def work(tmp_path: Path, monkeypatch) -> Path:
    """A folder as a user has it: raw web and wiki text, and a quality model trained on
    another corpus (prose against spam)."""
    training = write_corpus(tmp_path / "training", 120)
    config = {"positive": str(training / "wiki"), "negative": str(training / "web")}
    # A higher learning rate than the small settings' default: scores away from 0.5.
    train_fasttext({**config, "output": str(tmp_path / "models" / "quality")}, **SMALL, lr=0.5)
    write_jsonl(
        tmp_path / "raw" / "web" / "a.jsonl",
        [{"id": f"m{i}", "text": mixed_text(i)} for i in range(90)],
    )
    write_jsonl(
        tmp_path / "raw" / "wiki" / "a.jsonl",
        [{"id": f"w{i}", "text": good_text(i)} for i in range(40)],
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_documented_bucket_mixture_selects_by_score_and_follows_the_weights(work, cli):
    (work / "pipeline.yaml").write_text(docs_block("yaml", "output: clean"))
    mixture = yaml.safe_load(docs_block("yaml", "quality_score >= 0.7"))
    # As written, but with a context length that suits a corpus of 130 short documents.
    assert mixture["seq_len"] == 2048
    mixture["seq_len"] = 32
    (work / "buckets.yaml").write_text(yaml.safe_dump(mixture, sort_keys=False))
    for line in docs_block("bash", "mix preview buckets.yaml").strip().splitlines():
        args = shlex.split(line)
        assert args[0] == "mixplane"
        code, out, err = cli(*args[1:])
        assert code == 0, f"{line}: {err}"

    # The scores the classify stage wrote, per document.
    parts = sorted((work / "clean").glob("part-*.parquet"))
    rows = pa.concat_tables([pq.read_table(p) for p in parts]).to_pylist()
    assert len(rows) == 130
    web = {r["id"]: r["quality_score"] for r in rows if r["source"] == "web"}
    expected = {
        name: {i for i, score in web.items() if low <= score < high}
        for name, (low, high) in BUCKETS.items()
    }
    expected["wiki"] = {r["id"] for r in rows if r["source"] == "wiki"}
    # Every bucket holds documents: the test says something about each edge.
    sizes = {name: len(ids) for name, ids in expected.items()}
    assert min(sizes.values()) >= 5, sizes

    dataset = MixtureDataset("buckets.yaml")
    assert dataset.names == list(SHARES)
    for c, packed in enumerate(dataset.plan.components):
        shards, documents = dataset.resolved.ranges[c].locate(np.arange(len(packed)))
        selected = {
            str(dataset.source.files.metadata_column(int(shard), "id")[int(document)])
            for shard, document in zip(shards.tolist(), documents.tolist(), strict=True)
        }
        assert selected == expected[dataset.names[c]], dataset.names[c]

    # The first 100 sequences, read for real: the buckets' shares are the weights exactly
    # (the period of these weights is 25 sequences), before any bucket is exhausted.
    sequences = 100
    components = dataset.read_positions(np.arange(sequences))["component"]
    counts = np.bincount(components, minlength=len(SHARES))
    assert counts.tolist() == [round(share * sequences) for share in SHARES.values()]
    report = preview_mixture("buckets.yaml", steps=sequences, show=0)
    for entry, count in zip(report["components"], counts.tolist(), strict=True):
        assert entry["sequences"] == count
        assert entry["requested"] == pytest.approx(SHARES[entry["name"]])
        assert entry["epochs"] < (entry["max_epochs"] or np.inf)
    dataset.close()
