"""Quality of near-duplicate removal against exact ground truth: our own families of copies
with exactly computed Jaccard similarity, and the synthetic corpus's duplicate sidecar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_jsonl

from mixplane.process.pipeline import run_pipeline
from mixplane.stages.dedup.evaluate import BANDS, make_families, read_clusters, score
from mixplane.stages.dedup.minhash import collision_probability
from mixplane.synth import generate_corpus


@pytest.fixture(scope="module")
def families(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("families")
    docs, truth = make_families(700, seed=11)
    for part in range(3):
        write_jsonl(root / "raw" / "s" / f"{part}.jsonl", docs[part::3])
    return root, truth


def quality(root: Path, truth: dict, options: dict, name: str) -> dict:
    out = root / name
    config = {"input": str(root / "raw/s/*.jsonl"), "output": str(out), "task_size_mb": 0.5}
    run_pipeline(config | {"stages": [{"dedup_minhash": options}]})
    clusters, removed, texts = read_clusters(str(out))
    return score(truth, clusters, removed, texts.get)


def test_default_settings_meet_the_quality_targets(families):
    root, truth = families
    result = quality(root, truth, {}, "default")
    assert result["f1_above_0.85"] >= 0.95
    assert result["false_removals_below_0.6"] < 0.01
    assert result["recall_at_0.8"] >= 0.95
    assert result["recall_0.9"] >= 0.99 and result["recall_0.3"] <= 0.02
    # Recall never beats the LSH curve at a band's top, and follows it above the verify cut.
    edges = [*BANDS[1:], 1.0]
    for start, stop in zip(BANDS, edges, strict=True):
        observed = result[f"recall_{start:.1f}"]
        assert observed <= collision_probability(stop, 14, 8) + 0.05, start
        if start >= 0.8:
            assert observed >= collision_probability(start, 14, 8) - 0.05, start


def test_a_threshold_trades_recall_below_it_for_precision(families):
    root, truth = families
    default = quality(root, truth, {}, "default-2")
    strict = quality(root, truth, {"threshold": 0.8}, "strict")
    assert strict["precision_at_0.8"] > default["precision_at_0.8"]
    assert strict["recall_0.7"] < default["recall_0.7"]
    assert strict["recall_at_0.8"] >= 0.9 and strict["f1_above_0.85"] >= 0.95


def test_verification_removes_the_false_positives_of_lsh_alone(families):
    root, truth = families
    verified = quality(root, truth, {}, "verified")
    unverified = quality(root, truth, {"verify_threshold": 0}, "unverified")
    assert unverified["false_removals_below_0.6"] > 3 * verified["false_removals_below_0.6"]
    assert verified["f1_above_0.85"] > unverified["f1_above_0.85"]


def test_the_synthetic_corpus_duplicates_are_found(tmp_path: Path):
    generate_corpus(str(tmp_path), docs=1500, seed=2)
    sources = ("wiki", "forum", "code")
    config = {
        "input": [str(tmp_path / "raw" / source / "*") for source in sources],
        "output": str(tmp_path / "out"),
        "stages": ["dedup_exact", "dedup_minhash"],
    }
    run_pipeline(config)
    clusters, removed, texts = read_clusters(str(tmp_path / "out"))
    found: dict[tuple[str, float], list[bool]] = {}
    for line in (tmp_path / "truth" / "duplicates.jsonl").read_text().splitlines():
        pair = json.loads(line)
        if pair["a"] not in texts or pair["b"] not in texts:
            continue  # a web page: not among the inputs here
        same = pair["a"] in clusters and clusters[pair["a"]] == clusters.get(pair["b"])
        key = (pair["kind"], pair["target_similarity"])
        found.setdefault(key, []).append(same)
    assert all(found[("exact", 1.0)]) and len(found[("exact", 1.0)]) >= 10
    near_high = [f for (kind, target), v in found.items() if kind == "near" and target >= 0.85
                 for f in v]  # fmt: skip
    assert near_high and all(near_high)
    assert not any(found.get(("near", 0.5), []))
