"""Spherical k-means on unit vectors, seeded: the clustering SemDeDup runs before comparing.

It trains as faiss does (the SemDeDup authors cluster with `faiss.Kmeans(spherical=True)`):
on a seeded sample of at most `SAMPLE_PER_CLUSTER` points per centroid, from `k` distinct
sample points chosen by the seed. Each iteration assigns every point to the centroid of
highest cosine similarity (ties: the lowest centroid number), then moves each centroid to the
normalised sum of its points; it stops when no assignment changes, or after `max_iter`
iterations. One difference: faiss splits a large cluster to refill a centroid left without
points; here such a centroid stays where it was (it may take points later, or stay empty).

Products run in float32 through BLAS on fixed blocks of rows, inside `single_threaded()`,
and sums accumulate in float64 in a fixed order: the same points and seed give the same
centroids whatever the number of workers (a multi-threaded BLAS may split sums by thread).

Example:
    >>> points = np.array([[1, 0], [0.99, 0.14], [0, 1], [0.14, 0.99]], dtype=np.float32)
    >>> points /= np.linalg.norm(points, axis=1, keepdims=True)
    >>> result = spherical_kmeans(points, 2, seed=0, max_iter=10)
    >>> labels, _ = nearest_centroids(points, result.centroids)
    >>> labels.tolist() in ([0, 0, 1, 1], [1, 1, 0, 0])
    True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from mixplane.errors import ConfigError

SAMPLE_PER_CLUSTER = 256  # faiss's `max_points_per_centroid`
BLOCK = 4096  # rows multiplied at once


@contextmanager
def single_threaded() -> Iterator[None]:
    """BLAS limited to one thread while inside: its sums then run in one fixed order."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError as error:
        raise ConfigError(f"semantic dedup needs threadpoolctl ({error}): "
                          "pip install 'mixplane[embed]'") from None  # fmt: skip

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def sample_rows(total: int, clusters: int, seed: int) -> np.ndarray:
    """Which of `total` points (by position, sorted) train `clusters` centroids: all of them
    when there are at most `SAMPLE_PER_CLUSTER` per centroid, else a seeded sample that size.

    Example:
        >>> sample_rows(5, 2, seed=0).tolist()
        [0, 1, 2, 3, 4]
        >>> len(sample_rows(10_000, 2, seed=0))
        512
    """
    size = min(total, SAMPLE_PER_CLUSTER * clusters)
    if size == total:
        return np.arange(total, dtype=np.int64)
    rng = np.random.default_rng([seed, 1])
    return np.sort(rng.choice(total, size=size, replace=False)).astype(np.int64)


def nearest_centroids(points: np.ndarray, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each point's centroid of highest cosine similarity (lowest number on ties) and that
    similarity, computed block by block."""
    labels = np.empty(len(points), dtype=np.int64)
    similarity = np.empty(len(points), dtype=np.float32)
    transposed = np.ascontiguousarray(centroids.T, dtype=np.float32)
    for start in range(0, len(points), BLOCK):
        block = np.ascontiguousarray(points[start : start + BLOCK], dtype=np.float32)
        products = block @ transposed
        best = products.argmax(axis=1)
        labels[start : start + len(block)] = best
        similarity[start : start + len(block)] = products[np.arange(len(block)), best]
    return labels, similarity


def centroid_sums(points: np.ndarray, labels: np.ndarray, clusters: int) -> np.ndarray:
    """Per centroid, the float64 sum of its points, added block by block in point order."""
    sums = np.zeros((clusters, points.shape[1]), dtype=np.float64)
    for start in range(0, len(points), BLOCK):
        block = np.asarray(points[start : start + BLOCK], dtype=np.float64)
        owners = labels[start : start + BLOCK]
        order = np.argsort(owners, kind="stable")
        sorted_owners = owners[order]
        firsts = np.flatnonzero(np.r_[True, sorted_owners[1:] != sorted_owners[:-1]])
        sums[sorted_owners[firsts]] += np.add.reduceat(block[order], firsts, axis=0)
    return sums


@dataclass(frozen=True)
class KMeans:
    """Trained centroids (float32, unit length) and how training went."""

    centroids: np.ndarray
    iterations: int
    empty: int  # centroids without a point of the sample at the end


def spherical_kmeans(points: np.ndarray, clusters: int, seed: int, max_iter: int) -> KMeans:
    """Train `min(clusters, len(points))` centroids on unit-length `points` (see the module
    docstring); call inside `single_threaded()` for the same bytes everywhere."""
    count = min(clusters, len(points))
    if count == 0:
        return KMeans(np.zeros((0, points.shape[1]), dtype=np.float32), 0, 0)
    rng = np.random.default_rng([seed, 2])
    first = np.sort(rng.choice(len(points), size=count, replace=False))
    centroids = np.ascontiguousarray(points[first], dtype=np.float32)
    labels = np.full(len(points), -1, dtype=np.int64)
    iterations = 0
    for iterations in range(1, max_iter + 1):
        fresh, _ = nearest_centroids(points, centroids)
        if np.array_equal(fresh, labels):
            iterations -= 1  # this pass changed nothing: the last one converged
            break
        labels = fresh
        sums = centroid_sums(points, labels, count)
        lengths = np.sqrt((sums * sums).sum(axis=1))
        moved = lengths > 0
        centroids[moved] = (sums[moved] / lengths[moved, None]).astype(np.float32)
    empty = count - int(np.count_nonzero(np.bincount(labels[labels >= 0], minlength=count)))
    return KMeans(centroids, iterations, empty)
