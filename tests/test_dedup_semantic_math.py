"""The pure parts of `dedup_semantic`: the paper's rule, k-means, merge units, run files."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.document import Document
from mixplane.stages.dedup.semantic import rule
from mixplane.stages.dedup.semantic.files import read_run_slice, write_run
from mixplane.stages.dedup.semantic.keep import KeepRule
from mixplane.stages.dedup.semantic.kmeans import (
    nearest_centroids,
    sample_rows,
    single_threaded,
    spherical_kmeans,
)
from mixplane.stages.dedup.semantic.merge import plan_units
from mixplane.stages.dedup.semantic.rule import earlier_neighbours


def unit_rows(rng: np.random.Generator, count: int, dim: int, copies: int) -> np.ndarray:
    """`count` random unit vectors, `copies` of them jittered copies of earlier ones."""
    vectors = rng.normal(size=(count, dim)).astype(np.float32)
    for row in rng.choice(np.arange(1, count), size=min(copies, count - 1), replace=False):
        source = rng.integers(0, row)
        vectors[row] = vectors[source] + rng.normal(scale=0.05, size=dim)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def reference(vectors: np.ndarray, threshold: float) -> tuple[list[int], list[int]]:
    """The paper's rule written plainly: parent = most similar earlier row above the cut."""
    sims = vectors @ vectors.T
    parents, roots = [], []
    for j in range(len(vectors)):
        earlier = sims[:j, j]
        best = int(np.argmax(earlier)) if j else -1
        parent = best if j and earlier[best] > np.float32(threshold) else -1
        parents.append(parent)
        roots.append(j if parent < 0 else roots[parent])
    return parents, roots


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 20), st.floats(0.5, 0.99), st.integers(0, 2**31))
def test_the_rule_is_the_papers_upper_triangle_maximum(count, copies, threshold, seed):
    vectors = unit_rows(np.random.default_rng(seed), count, 8, copies)
    verdict = earlier_neighbours(vectors, threshold)
    parents, roots = reference(vectors, threshold)
    assert verdict.parent.tolist() == parents
    assert verdict.root.tolist() == roots
    assert verdict.size.tolist() == [roots.count(r) for r in roots]
    removed = np.array(parents) >= 0
    assert (verdict.similarity[removed] > np.float32(threshold)).all()
    upper = np.triu(vectors @ vectors.T, 1)
    assert verdict.similar_pairs == int((upper > np.float32(threshold)).sum())


def test_blocks_change_no_decision(monkeypatch):
    """The similarity matrix comes in column blocks; BLAS may round a product differently
    for another block shape (so a cluster's blocks depend on its size alone), never by more
    than float32's last bits."""
    vectors = unit_rows(np.random.default_rng(3), 300, 16, 120)
    with single_threaded():
        whole = earlier_neighbours(vectors, 0.9)
        monkeypatch.setattr(rule, "BLOCK_BYTES", 300 * 4 * 7)  # seven columns a block
        assert rule.block_width(300) == 7
        blocked = earlier_neighbours(vectors, 0.9)
    assert blocked.parent.tobytes() == whole.parent.tobytes()
    assert np.allclose(blocked.similarity[1:], whole.similarity[1:], rtol=0, atol=1e-6)
    assert blocked.similar_pairs == whole.similar_pairs


def test_a_chain_loses_every_member_after_the_first_as_in_the_paper():
    """A ~ B and B ~ C but A and C apart: the paper removes B for A and C for B, so C is
    removed though no kept document is close to it; its group's survivor is A."""
    angles = np.radians([0.0, 20.0, 40.0])
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    verdict = earlier_neighbours(vectors, math.cos(math.radians(25)))
    assert verdict.parent.tolist() == [-1, 0, 1]
    assert verdict.root.tolist() == [0, 0, 0] and verdict.size.tolist() == [3, 3, 3]
    # In the other order the middle one goes first: A and C are both kept.
    reordered = earlier_neighbours(vectors[[1, 0, 2]], math.cos(math.radians(25)))
    assert reordered.parent.tolist() == [-1, 0, 0]


def test_degenerate_clusters():
    empty = earlier_neighbours(np.zeros((0, 4), np.float32), 0.9)
    assert len(empty.parent) == 0 and empty.similar_pairs == 0
    alone = earlier_neighbours(np.eye(1, 4, dtype=np.float32), 0.9)
    assert alone.parent.tolist() == [-1] and alone.size.tolist() == [1]


def blobs(seed: int, per: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.eye(3, 6, dtype=np.float32)
    points = np.concatenate([c + rng.normal(scale=0.15, size=(per, 6)) for c in centres])
    points = (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)
    return points, np.repeat(np.arange(3), per)


def test_kmeans_finds_separated_groups_and_is_the_same_bytes_for_a_seed():
    points, truth = blobs(0)
    with single_threaded():
        first = spherical_kmeans(points, 3, seed=5, max_iter=50)
        again = spherical_kmeans(points, 3, seed=5, max_iter=50)
        labels, similarity = nearest_centroids(points, first.centroids)
    assert first.centroids.tobytes() == again.centroids.tobytes()
    assert first.iterations < 50 and first.empty == 0
    # One label per true group, whatever the numbering.
    assert len(set(zip(truth.tolist(), labels.tolist(), strict=True))) == 3
    assert np.allclose(np.linalg.norm(first.centroids, axis=1), 1.0, atol=1e-6)
    best = (points @ first.centroids.T).max(axis=1)
    assert similarity.tobytes() == best.astype(np.float32).tobytes()


def test_kmeans_with_fewer_points_than_clusters_uses_every_point():
    points, _ = blobs(1, per=2)
    with single_threaded():
        result = spherical_kmeans(points, 50, seed=0, max_iter=10)
    assert len(result.centroids) == len(points)
    none = spherical_kmeans(np.zeros((0, 6), np.float32), 4, seed=0, max_iter=10)
    assert none.centroids.shape == (0, 6)


@given(st.integers(0, 5000), st.integers(1, 30), st.integers(0, 100))
def test_the_training_sample(total, clusters, seed):
    rows = sample_rows(total, clusters, seed)
    assert len(rows) == min(total, 256 * clusters)
    assert (np.diff(rows) > 0).all() and (rows < total).all()
    assert rows.tobytes() == sample_rows(total, clusters, seed).tobytes()


@given(st.lists(st.integers(0, 50), max_size=60), st.integers(1, 80))
def test_units_cover_every_cluster_in_order_within_the_limit(sizes, limit):
    units = plan_units(np.array(sizes, dtype=np.int64), limit)
    covered = [c for low, high in units for c in range(low, high)]
    assert covered == list(range(len(sizes)))
    for low, high in units:
        held = sum(sizes[low:high])
        assert held <= limit or sum(size > 0 for size in sizes[low:high]) == 1


def test_a_run_file_gives_back_any_range_of_clusters(tmp_path):
    rng = np.random.default_rng(2)
    count, clusters = 50, 7
    labels = rng.integers(0, clusters, size=count)
    rows = np.arange(count) * 3
    keys = rng.normal(size=count)
    ranks = rng.integers(0, 3, size=count).astype(np.int32)
    vectors = rng.normal(size=(count, 5)).astype(np.float32)
    ids = [f"doc-{i}-é✓" for i in range(count)]
    url = str(tmp_path / "task.run")
    sizes = write_run(url, labels, clusters, rows, keys, ranks, vectors, ids, {})
    assert sizes.tolist() == np.bincount(labels, minlength=clusters).tolist()
    for low, high in [(0, 7), (2, 3), (3, 6), (6, 7), (4, 4)]:
        part = read_run_slice(url, low, high, {})
        chosen = [i for i in np.argsort(labels, kind="stable") if low <= labels[i] < high]
        assert part.counts.tolist() == sizes[low:high].tolist()
        assert part.rows.tolist() == rows[chosen].tolist()
        assert part.keys.tobytes() == keys[chosen].tobytes()
        assert part.ranks.tolist() == ranks[chosen].tolist()
        assert part.vectors.tobytes() == vectors[chosen].tobytes()
        assert part.ids == [ids[i] for i in chosen]


def test_keep_rules():
    assert KeepRule.parse("highest:quality") == KeepRule("highest", "quality")
    for bad in ("biggest", "highest", "highest:", "longest:x", ""):
        with pytest.raises(ValueError, match="keep must be"):
            KeepRule.parse(bad)
    highest = KeepRule.parse("highest:score")
    values = [
        highest.value(Document("a", "x", "s", {"score": score}))
        for score in (0.5, 3, True, "high", float("nan"), None)
    ]
    assert values[:2] == [-0.5, -3.0] and all(math.isnan(v) for v in values[2:])
    assert KeepRule.parse("longest").value(Document("a", "four", "s")) == -4.0
    assert math.isnan(KeepRule.parse("farthest").value(Document("a", "four", "s")))
    similarity = np.array([0.25, 0.75], np.float32)
    assert KeepRule("nearest").centroid_key(similarity).tolist() == [-0.25, -0.75]
