"""Clusters of duplicates: connected components of the verified pairs, and one survivor each.

Union-find runs vectorised over the nodes that appear in a pair: every round hooks each
pair's larger root under its smaller root, then compresses paths fully, until all pairs
share a root. The survivor of a cluster is a document already in the persistent index if
there is one (it was kept before), else the document ranked first by source preference,
then id, then position in the input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def components(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Connected components: the nodes that appear in `pairs` (sorted) and the root of each
    (the smallest node of its component).

    Example:
        >>> nodes, roots = components(np.array([[4, 1, 7], [2, 4, 8]]))
        >>> nodes.tolist(), roots.tolist()
        ([1, 2, 4, 7, 8], [1, 1, 1, 7, 7])
    """
    nodes, compact = np.unique(pairs, return_inverse=True)
    compact = compact.reshape(pairs.shape)
    left, right = compact[0], compact[1]
    parent = np.arange(len(nodes))
    while True:
        root_left, root_right = parent[left], parent[right]
        differ = root_left != root_right
        if not differ.any():
            break
        low = np.minimum(root_left[differ], root_right[differ])
        high = np.maximum(root_left[differ], root_right[differ])
        np.minimum.at(parent, high, low)
        while True:
            grandparent = parent[parent]
            if np.array_equal(grandparent, parent):
                break
            parent = grandparent
    return nodes, nodes[parent]


@dataclass(frozen=True)
class Members:
    """What survivor choice needs to know about each clustered node."""

    nodes: np.ndarray  # node ids
    roots: np.ndarray  # component root of each node
    ids: pa.Array  # document ids
    ranks: np.ndarray  # source preference (lower wins)
    in_index: np.ndarray  # True for documents of the persistent index


@dataclass(frozen=True)
class Clusters:
    """For each member node: its survivor's position in `Members`, and its cluster's size."""

    survivor: np.ndarray
    size: np.ndarray


def choose_survivors(members: Members) -> Clusters:
    """One survivor per component: index documents first, then rank, id, node.

    Example:
        >>> m = Members(np.array([3, 5, 9]), np.array([3, 3, 3]), pa.array(["b", "a", "c"]),
        ...             np.array([0, 0, 0]), np.array([False, False, False]))
        >>> choose_survivors(m).survivor.tolist(), choose_survivors(m).size.tolist()
        ([1, 1, 1], [3, 3, 3])
    """
    count = len(members.nodes)
    table = pa.table(
        {
            "root": members.roots,
            "fresh": ~members.in_index,
            "rank": members.ranks,
            "id": members.ids,
            "node": members.nodes,
        }
    )
    order = pc.sort_indices(
        table,
        sort_keys=[(name, "ascending") for name in ("root", "fresh", "rank", "id", "node")],
    ).to_numpy()
    roots = members.roots[order]
    first = np.ones(count, dtype=bool)
    first[1:] = roots[1:] != roots[:-1]
    group = np.cumsum(first) - 1
    leaders = order[first]
    sizes = np.diff(np.concatenate((np.flatnonzero(first), [count])))
    survivor = np.empty(count, dtype=np.int64)
    size = np.empty(count, dtype=np.int64)
    survivor[order] = leaders[group]
    size[order] = sizes[group]
    return Clusters(survivor, size)
