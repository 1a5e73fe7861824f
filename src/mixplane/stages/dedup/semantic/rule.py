"""SemDeDup's removal rule inside one k-means cluster, and the groups it forms.

The paper (Abbas et al. 2023, algorithm 1 and its released code): order the cluster's
points, take the upper triangle of their cosine similarity matrix, and remove every point
whose highest similarity to a point *before it* in the order exceeds the threshold (1 - eps).
The first point of the order is always kept, so the order decides which point of a set of
near-duplicates survives (the paper's default: farthest from the centroid first).

A removed point is removed for its most similar earlier point (its `parent`; ties: the
earliest). That parent may itself have been removed for an even earlier one, as in the
paper: with A ~ B and B ~ C but A and C apart, both B and C go. Following parents always
reaches a kept point (the first point of a chain has no earlier neighbour); that point is
the group's survivor, and the group is every point whose parents lead to it.

The similarity matrix is computed in column blocks (`block_width`), so memory stays near
`BLOCK_BYTES` however large the cluster.

Example (rows in keep order; 1 and 2 copy 0, 3 stands alone):
    >>> v = np.array([[1, 0], [1, 0], [0.999, 0.045], [0, 1]], dtype=np.float32)
    >>> verdict = earlier_neighbours(v, threshold=0.99)
    >>> verdict.parent.tolist(), verdict.root.tolist(), verdict.size.tolist()
    ([-1, 0, 0, -1], [0, 0, 0, 3], [3, 3, 3, 1])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK_BYTES = 1 << 26  # similarity block held at once (64 MB of float32)


def block_width(count: int) -> int:
    """Columns per block for a cluster of `count` points: the block holds `count` rows.

    Example:
        >>> block_width(10), block_width(1_000_000)
        (10, 16)
    """
    return int(max(1, min(count, BLOCK_BYTES // (4 * max(count, 1)))))


@dataclass(frozen=True)
class Verdict:
    """Per point (in keep order): its parent (-1: kept), its similarity to the parent (its
    highest similarity to an earlier point; -inf for the first), the survivor it leads to,
    and the size of that survivor's group; and how many pairs exceed the threshold."""

    parent: np.ndarray
    similarity: np.ndarray
    root: np.ndarray
    size: np.ndarray
    similar_pairs: int

    @property
    def removed(self) -> np.ndarray:
        return self.parent >= 0


def earlier_neighbours(vectors: np.ndarray, threshold: float) -> Verdict:
    """Apply the rule to unit `vectors` given in keep order: a point goes when its cosine
    similarity to some earlier point is above `threshold` (compared in float32)."""
    count = len(vectors)
    cut = np.float32(threshold)
    best = np.full(count, -np.inf, dtype=np.float32)
    parent = np.full(count, -1, dtype=np.int64)
    pairs = 0
    width = block_width(count)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    for start in range(1, count, width):
        stop = min(count, start + width)
        products = vectors[:stop] @ vectors[start:stop].T  # rows: candidates; columns: points
        later = np.arange(stop)[:, None] >= np.arange(start, stop)[None, :]
        products[later] = -np.inf  # only earlier points count
        pairs += int(np.count_nonzero(products > cut))
        nearest = products.argmax(axis=0)
        similarity = products[nearest, np.arange(stop - start)]
        best[start:stop] = similarity
        parent[start:stop] = np.where(similarity > cut, nearest, -1)
    root = np.where(parent >= 0, parent, np.arange(count))
    while True:  # parents point to earlier points, so this ends within log2(count) rounds
        jumped = root[root]
        if np.array_equal(jumped, root):
            break
        root = jumped
    size = np.bincount(root, minlength=count)[root] if count else np.zeros(0, np.int64)
    return Verdict(parent, best, root, size, pairs)
