"""docs/quality.md's toxicity recipe, run as a user would: labelled comments made here, the
docs' training YAML and command, then the docs' pipeline dropping toxic comments."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from conftest import child_env, write_jsonl
from readme_blocks import readme_block

from mixplane import run_pipeline

QUALITY_MD = Path(__file__).parent.parent / "docs" / "quality.md"

SUBJECTS = "The new library|This recipe|The bus schedule|Your garden photo|The museum tour"
OPINIONS = "was really helpful|looks lovely|changed on Monday|needs more detail|made my day"
ENDINGS = "thanks for sharing.|see you there.|I will try it.|great work.|any updates soon?"
# Hostile remarks, mild enough for a test file: what the classifier has to learn.
INSULTS = ("you are a worthless idiot", "shut up, you pathetic moron",
           "nobody wants you here, stupid loser", "what a brainless clown you are",
           "get lost, you useless fool", "you disgusting imbecile")  # fmt: skip


def comment(rng: random.Random, toxic: bool) -> str:
    """A short comment; a toxic one says the same kind of thing with an insult in it."""
    subject, opinion = rng.choice(SUBJECTS.split("|")), rng.choice(OPINIONS.split("|"))
    parts = [f"{subject} {opinion},", rng.choice(ENDINGS.split("|"))]
    if toxic:
        parts.insert(rng.randint(0, 2), rng.choice(INSULTS).capitalize() + ".")
    return " ".join(parts)


def comments(seed: int, n: int, toxic: bool) -> list[dict]:
    rng = random.Random(seed)
    kind = "toxic" if toxic else "clean"
    return [{"id": f"{kind}-{seed}-{i}", "text": comment(rng, toxic)} for i in range(n)]


def run_in(folder: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=folder, env=child_env(), capture_output=True, text=True, timeout=300
    )


def mixplane_command(block: str) -> list[str]:
    line = block.strip()
    assert line.startswith("mixplane "), line
    return [sys.executable, "-m", "mixplane", *line.split()[1:]]


def test_the_docs_toxicity_recipe_trains_a_classifier_that_drops_toxic_comments(
    tmp_path, monkeypatch
):
    write_jsonl(tmp_path / "labels" / "toxic" / "a.jsonl", comments(1, 1000, toxic=True))
    write_jsonl(tmp_path / "labels" / "clean" / "a.jsonl", comments(2, 1000, toxic=False))
    (tmp_path / "toxicity.yaml").write_text(
        readme_block("yaml", "positive_label: toxic", QUALITY_MD)
    )
    train = readme_block("bash", "mixplane classifier train toxicity.yaml", QUALITY_MD)
    done = run_in(tmp_path, *mixplane_command(train), "--json")
    assert done.returncode == 0, done.stderr
    description = json.loads((tmp_path / "models" / "toxicity" / "classifier.json").read_text())
    assert description["labels"] == ["toxic", "clean"]
    assert description["metrics"]["auc"] > 0.95

    # New comments, never seen in training, through the docs' pipeline.
    fresh = comments(3, 20, toxic=True) + comments(4, 20, toxic=False)
    write_jsonl(tmp_path / "raw" / "comments.jsonl", fresh)
    (tmp_path / "pipeline.yaml").write_text(readme_block("yaml", "as: clean_score", QUALITY_MD))
    done = run_in(tmp_path, sys.executable, "-m", "mixplane", "process", "pipeline.yaml", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stats"]["kept"] == 20

    kept = pq.read_table(tmp_path / "clean").to_pylist()
    assert sorted(row["id"] for row in kept) == sorted(d["id"] for d in fresh[20:])
    assert all(row["clean_score"] > 0.5 for row in kept)
    excluded = pq.read_table(tmp_path / "clean" / "_excluded").to_pylist()
    assert sorted(row["id"] for row in excluded) == sorted(d["id"] for d in fresh[:20])
    for row in excluded:
        detail = json.loads(row["detail"])
        assert row["reason"] == "below_threshold" and detail["clean_score"] < 0.5
        assert detail["threshold"] == 0.5

    # The annotating form gives every comment its toxicity, high for the toxic ones.
    annotate = readme_block("yaml", "as: toxicity", QUALITY_MD).strip()
    config = yaml.safe_load((tmp_path / "pipeline.yaml").read_text())
    config.update(output="scored", stages=yaml.safe_load(annotate))
    monkeypatch.chdir(tmp_path)
    run_pipeline(config)
    scored = {row["id"]: row["toxicity"] for row in pq.read_table(tmp_path / "scored").to_pylist()}
    assert len(scored) == 40
    assert min(scored[d["id"]] for d in fresh[:20]) > max(scored[d["id"]] for d in fresh[20:])
