"""Finding candidate duplicate pairs from sorted key runs, one (band, key range) at a time.

Every document is a node: the documents of this run get nodes `0..new_documents-1` in task
order, then the documents of a persistent index follow. A merge unit reads, from every run,
the keys of one band whose first word falls into one slice of the 64-bit range, sorts them,
and links each document to the first (smallest) node of its group of equal keys. Memory per
unit is bounded by the slice, not by the corpus. Groups holding only index documents are
skipped: those were settled when the index was written.

When pairs are verified, a document can fail against its group's smallest node and still be
similar to other members: in a dense cluster of near-duplicates, copies are less similar to
one another than to their original, and which member is smallest is an accident of input
order. So a second pass reads the same units again and pairs every document that failed
against a smallest node with its neighbours in each of its groups, up to `RECHECK_WINDOW` on
each side in node order. In a group of up to `RECHECK_WINDOW + 1` members that is every pair
with such a document; the cap keeps a large group of moderately similar texts (templated pages) from
costing a verification per pair of members: the second pass adds at most
`2 * RECHECK_WINDOW` pairs per failed key, so a unit's pairs stay proportional to its slice.
Pairs that passed against the smallest node need no second look: they share its cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mixplane.stages.dedup.minhash import agreement
from mixplane.stages.dedup.runs import Run, key_range, signature_rows

KEY_SPACE = 1 << 64
#: Neighbours on each side a document that failed verification is paired with again.
RECHECK_WINDOW = 8


@dataclass(frozen=True)
class MergePlan:
    """The runs a merge reads (this run's tasks, then index runs) and how nodes are numbered."""

    runs: tuple[Run, ...]
    new_documents: int
    bands: int
    parts: int = 1
    cutoff: float | None = None
    storage_options: dict[str, Any] = field(default_factory=dict)
    #: Sorted nodes that failed verification against a group's smallest node: the second
    #: pass (`find_rechecks`) pairs them with their neighbours.
    rechecked: np.ndarray | None = None
    #: Neighbours on each side the second pass pairs a rechecked node with.
    window: int = RECHECK_WINDOW
    #: Names this merge: a process keeps the remote runs it downloaded for it
    #: (`runs.load_arrays`).
    scope: str = ""
    #: Remote runs are read by ranges, not downloaded whole (see `runs`).
    ranged: bool = False

    @property
    def offsets(self) -> np.ndarray:
        sizes = [run.documents for run in self.runs]
        return np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))).astype(np.int64)

    def units(self) -> list[tuple[int, int]]:
        return [(band, part) for band in range(self.bands) for part in range(self.parts)]


def parts_for(keys: int, keys_per_unit: int) -> int:
    """A power of two splitting `keys` per band into slices of about `keys_per_unit`.

    Example:
        >>> parts_for(10, 4), parts_for(3, 4)
        (4, 1)
    """
    parts = 1
    while keys > parts * keys_per_unit:
        parts *= 2
    return parts


def find_candidates(unit: tuple[int, int], plan: MergePlan) -> np.ndarray:
    """Candidate pairs `(2, E)` of node ids from one band and key slice; every pair has a
    node of this run."""
    keys, nodes = unit_keys(unit, plan)
    return group_pairs(keys, nodes, plan.new_documents)


def find_rechecks(unit: tuple[int, int], plan: MergePlan) -> np.ndarray:
    """The second pass's pairs from one band and key slice: each of `plan.rechecked` with
    its neighbours in its groups, `plan.window` on each side (see the module docstring)."""
    keys, nodes = unit_keys(unit, plan)
    rechecked = np.empty(0, dtype=np.int64) if plan.rechecked is None else plan.rechecked
    return neighbour_pairs(keys, nodes, plan.new_documents, rechecked, plan.window)


def unit_keys(unit: tuple[int, int], plan: MergePlan) -> tuple[np.ndarray, np.ndarray]:
    """Keys `(width, k)` and nodes `(k,)` of one band and key slice, from every run."""
    band, part = unit
    low = part * (KEY_SPACE // plan.parts)
    high = KEY_SPACE if part == plan.parts - 1 else (part + 1) * (KEY_SPACE // plan.parts)
    offsets = plan.offsets
    all_keys, all_nodes = [], []
    for number, run in enumerate(plan.runs):
        if run.keyed == 0:
            continue
        keys, rows = key_range(run, band, low, high, plan.storage_options, plan.scope, plan.ranged)
        all_keys.append(keys)
        all_nodes.append(rows.astype(np.int64) + offsets[number])
    if not all_nodes:
        return np.empty((1, 0), dtype=np.uint64), np.empty(0, dtype=np.int64)
    return np.concatenate(all_keys, axis=1), np.concatenate(all_nodes)


def group_pairs(keys: np.ndarray, nodes: np.ndarray, new_documents: int) -> np.ndarray:
    """Link each node to the smallest node sharing its key; keep links to new documents.

    Example:
        >>> keys = np.array([[7, 3, 7, 7]], dtype=np.uint64)
        >>> group_pairs(keys, np.array([5, 1, 2, 9]), new_documents=6).tolist()
        [[2, 2], [5, 9]]
    """
    nodes, same, group_start, _ = _groups(keys, nodes)
    centers = nodes[group_start]
    linked = same & (centers < new_documents)
    return np.stack((centers[linked], nodes[linked]))


def neighbour_pairs(
    keys: np.ndarray, nodes: np.ndarray, new_documents: int, rechecked: np.ndarray, window: int
) -> np.ndarray:
    """Pair each node of `rechecked` (sorted) with up to `window` members of its group on
    each side in node order, except the group's smallest node (already verified against);
    pairs `(smaller, larger)`, keeping those with a new document.

    Example:
        >>> keys = np.array([[7, 7, 7, 7, 7, 3]], dtype=np.uint64)
        >>> neighbour_pairs(keys, np.array([0, 1, 2, 3, 4, 5]), 6, np.array([2, 5]), 1).tolist()
        [[1, 2], [2, 3]]
    """
    if not len(nodes):
        return np.empty((2, 0), dtype=np.int64)
    nodes, _, group_start, group_end = _groups(keys, nodes)
    found = np.searchsorted(rechecked, nodes)
    chosen = found < len(rechecked)
    chosen[chosen] = rechecked[found[chosen]] == nodes[chosen]
    chosen &= np.arange(len(nodes)) != group_start  # a smallest node failed no one
    position = np.flatnonzero(chosen)
    first, stop = group_start[position] + 1, group_end[position]
    found_pairs = []
    for step in range(1, window + 1):
        for other, inside in ((position - step, position - step >= first),
                              (position + step, position + step < stop)):  # fmt: skip
            left = nodes[np.minimum(position, other)[inside]]
            right = nodes[np.maximum(position, other)[inside]]
            keep = left < new_documents
            found_pairs.append(np.stack((left[keep], right[keep])))
    return np.concatenate([np.empty((2, 0), dtype=np.int64), *found_pairs], axis=1)


def _groups(keys: np.ndarray, nodes: np.ndarray) -> tuple:
    """Nodes sorted by key then node; whether each follows an equal key; where its group
    starts and ends (positions in the sorted order)."""
    order = np.lexsort((nodes, *(keys[w] for w in reversed(range(len(keys))))))
    keys, nodes = keys[:, order], nodes[order]
    same = np.ones(len(nodes), dtype=bool)
    same[:1] = False
    for word in keys:
        same[1:] &= word[1:] == word[:-1]
    position = np.arange(len(nodes))
    group_start = np.maximum.accumulate(np.where(same, 0, position))
    last = np.ones(len(nodes), dtype=bool)
    last[:-1] = ~same[1:]
    group_end = np.minimum.accumulate(np.where(last, position + 1, len(nodes))[::-1])[::-1]
    return nodes, same, group_start, group_end


def unique_pairs(pairs: list[np.ndarray]) -> np.ndarray:
    """Distinct pairs, sorted; `pairs` holds `(2, E)` arrays.

    Example:
        >>> unique_pairs([np.array([[1, 0], [2, 5]]), np.array([[1], [2]])]).tolist()
        [[0, 1], [5, 2]]
    """
    joined = np.concatenate([np.empty((2, 0), dtype=np.int64), *pairs], axis=1)
    if not joined.size:
        return joined
    if joined.max() < (1 << 31):
        codes = np.unique((joined[0] << 32) | joined[1])
        return np.stack((codes >> 32, codes & 0xFFFFFFFF))
    return np.unique(joined, axis=1)


def subtract_pairs(pairs: np.ndarray, known: np.ndarray) -> np.ndarray:
    """The pairs of `pairs` not in `known` (both `(2, E)`), in their order.

    Example:
        >>> subtract_pairs(np.array([[0, 1, 2], [5, 6, 7]]), np.array([[1], [6]])).tolist()
        [[0, 2], [5, 7]]
    """
    if not pairs.shape[1] or not known.shape[1]:
        return pairs
    if max(pairs.max(), known.max()) < (1 << 31):
        return pairs[:, ~np.isin((pairs[0] << 32) | pairs[1], (known[0] << 32) | known[1])]
    rows = np.dtype([("a", np.int64), ("b", np.int64)])

    def view(array: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(array.T, dtype=np.int64).view(rows).ravel()

    return pairs[:, ~np.isin(view(pairs), view(known))]


def agreeing(pairs: np.ndarray, plan: MergePlan) -> np.ndarray:
    """Whether each pair's signatures agree on at least `plan.cutoff` of their values."""
    if plan.cutoff is None or not pairs.shape[1]:
        return np.ones(pairs.shape[1], dtype=bool)
    left = signatures_of(pairs[0], plan)
    right = signatures_of(pairs[1], plan)
    return agreement(left, right) >= plan.cutoff


def signatures_of(nodes: np.ndarray, plan: MergePlan) -> np.ndarray:
    """The stored signature of each node."""
    offsets = plan.offsets
    run_of = np.searchsorted(offsets, nodes, side="right") - 1
    result: np.ndarray | None = None
    for number in np.unique(run_of).tolist():
        chosen = run_of == number
        rows = nodes[chosen] - offsets[number]
        signatures = signature_rows(
            plan.runs[number], rows, plan.storage_options, plan.scope, plan.ranged
        )
        if result is None:
            result = np.empty((len(nodes), signatures.shape[1]), dtype=np.uint32)
        result[chosen] = signatures
    return result if result is not None else np.empty((0, 0), dtype=np.uint32)
