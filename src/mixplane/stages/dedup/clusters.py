"""Clusters of duplicates: connected components of the verified pairs, and one survivor each.

Union-find runs vectorised over the nodes that appear in a pair: every round hooks each
pair's larger root under its smaller root, then compresses paths fully, until all pairs
share a root. The survivor of a cluster is a document already in the persistent index if
there is one (it was kept before), else the document ranked first by source preference,
then id, then position in the input.

Connected components chain: A close to B and B close to C puts A and C in one cluster
however far apart they are. A stage that must not remove a document for a survivor it is
not itself close to (`dedup_image`) redraws the components where that happens as stars
(`split_into_stars`), so every removal agrees directly with its survivor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mixplane.stages.dedup.minhash import agreement


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


def preference_order(members: Members) -> np.ndarray:
    """Positions of the members by component, then in the order survivors are chosen:
    index documents first, then rank, id, node."""
    table = pa.table(
        {
            "root": members.roots,
            "fresh": ~members.in_index,
            "rank": members.ranks,
            "id": members.ids,
            "node": members.nodes,
        }
    )
    return pc.sort_indices(
        table,
        sort_keys=[(name, "ascending") for name in ("root", "fresh", "rank", "id", "node")],
    ).to_numpy()


def choose_survivors(members: Members) -> Clusters:
    """One survivor per component: index documents first, then rank, id, node.

    Example:
        >>> m = Members(np.array([3, 5, 9]), np.array([3, 3, 3]), pa.array(["b", "a", "c"]),
        ...             np.array([0, 0, 0]), np.array([False, False, False]))
        >>> choose_survivors(m).survivor.tolist(), choose_survivors(m).size.tolist()
        ([1, 1, 1], [3, 3, 3])
    """
    count = len(members.nodes)
    order = preference_order(members)
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


def split_into_stars(
    members: Members,
    clusters: Clusters,
    positions: np.ndarray,
    signatures: np.ndarray,
    cutoff: float,
) -> Clusters:
    """Redraw the components holding `positions` (whole components, sorted; `signatures`
    row by row) as stars: in preference order, each member not yet claimed becomes a
    survivor and claims every unclaimed document of this run whose signature agrees with
    its own on at least `cutoff` of the values. So every duplicate agrees directly with its
    survivor, never only through a chain of pairs, and no survivor claimed by an earlier
    one could have been (index documents are never claimed: they were kept before).

    Example (one chain 0 - 1 - 2 where 0 and 2 disagree: 2 survives beside 0):
        >>> m = Members(np.arange(3), np.zeros(3, int), pa.array(["a", "b", "c"]),
        ...             np.zeros(3, int), np.zeros(3, bool))
        >>> sigs = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]])
        >>> stars = split_into_stars(m, choose_survivors(m), np.arange(3), sigs, 0.75)
        >>> stars.survivor.tolist(), stars.size.tolist()
        ([0, 0, 2], [2, 2, 1])
    """
    survivor, size = clusters.survivor.copy(), clusters.size.copy()
    order = preference_order(members)
    chosen = order[np.isin(order, positions)]
    rows = np.searchsorted(positions, chosen)
    roots = members.roots[chosen]
    starts = np.flatnonzero(np.concatenate(([True], roots[1:] != roots[:-1])))
    for group, group_rows in zip(
        np.split(chosen, starts[1:]), np.split(rows, starts[1:]), strict=True
    ):
        own = signatures[group_rows]
        claimable = ~members.in_index[group]
        claimed = np.full(len(group), -1)
        for first in range(len(group)):
            if claimed[first] >= 0:
                continue
            claimed[first] = first
            open_ = np.flatnonzero((claimed < 0) & claimable)
            close = agreement(own[open_], own[first : first + 1]) >= cutoff
            claimed[open_[close]] = first
        survivor[group] = group[claimed]
        size[group] = np.bincount(claimed, minlength=len(group))[claimed]
    return Clusters(survivor, size)
