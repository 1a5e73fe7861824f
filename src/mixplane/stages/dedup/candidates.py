"""Finding candidate duplicate pairs from sorted key runs, one (band, key range) at a time.

Every document is a node: the documents of this run get nodes `0..new_documents-1` in task
order, then the documents of a persistent index follow. A merge unit reads, from every run,
the keys of one band whose first word falls into one slice of the 64-bit range, sorts them,
and links each document to the first (smallest) node of its group of equal keys. Memory per
unit is bounded by the slice, not by the corpus. Groups holding only index documents are
skipped: those were settled when the index was written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mixplane.stages.dedup.minhash import agreement
from mixplane.stages.dedup.runs import Run, key_range, load_arrays

KEY_SPACE = 1 << 64


@dataclass(frozen=True)
class MergePlan:
    """The runs a merge reads (this run's tasks, then index runs) and how nodes are numbered."""

    runs: tuple[Run, ...]
    new_documents: int
    bands: int
    parts: int = 1
    cutoff: float | None = None
    storage_options: dict[str, Any] = field(default_factory=dict)

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
    band, part = unit
    low = part * (KEY_SPACE // plan.parts)
    high = KEY_SPACE if part == plan.parts - 1 else (part + 1) * (KEY_SPACE // plan.parts)
    offsets = plan.offsets
    all_keys, all_nodes = [], []
    for number, run in enumerate(plan.runs):
        if run.keyed == 0:
            continue
        keys, rows = key_range(run, band, low, high, plan.storage_options)
        all_keys.append(keys)
        all_nodes.append(rows.astype(np.int64) + offsets[number])
    if not all_nodes:
        return np.empty((2, 0), dtype=np.int64)
    keys = np.concatenate(all_keys, axis=1)
    nodes = np.concatenate(all_nodes)
    return group_pairs(keys, nodes, plan.new_documents)


def group_pairs(keys: np.ndarray, nodes: np.ndarray, new_documents: int) -> np.ndarray:
    """Link each node to the smallest node sharing its key; keep links to new documents.

    Example:
        >>> keys = np.array([[7, 3, 7, 7]], dtype=np.uint64)
        >>> group_pairs(keys, np.array([5, 1, 2, 9]), new_documents=6).tolist()
        [[2, 2], [5, 9]]
    """
    order = np.lexsort((nodes, *(keys[w] for w in reversed(range(len(keys))))))
    keys, nodes = keys[:, order], nodes[order]
    same = np.ones(len(nodes), dtype=bool)
    same[0] = False
    for word in keys:
        same[1:] &= word[1:] == word[:-1]
    group_start = np.maximum.accumulate(np.where(same, 0, np.arange(len(nodes))))
    centers = nodes[group_start]
    linked = same & (centers < new_documents)
    return np.stack((centers[linked], nodes[linked]))


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


def verify_pairs(pairs: np.ndarray, plan: MergePlan) -> np.ndarray:
    """Keep the pairs whose signatures agree on at least `plan.cutoff` of their values."""
    if plan.cutoff is None or not pairs.shape[1]:
        return pairs
    left = signatures_of(pairs[0], plan)
    right = signatures_of(pairs[1], plan)
    return pairs[:, agreement(left, right) >= plan.cutoff]


def signatures_of(nodes: np.ndarray, plan: MergePlan) -> np.ndarray:
    """The stored signature of each node."""
    offsets = plan.offsets
    run_of = np.searchsorted(offsets, nodes, side="right") - 1
    result: np.ndarray | None = None
    for number in np.unique(run_of).tolist():
        signatures = load_arrays(plan.runs[number].url("run"), plan.storage_options)["sigs"]
        if result is None:
            result = np.empty((len(nodes), signatures.shape[1]), dtype=np.uint32)
        chosen = run_of == number
        result[chosen] = signatures[nodes[chosen] - offsets[number]]
    return result if result is not None else np.empty((0, 0), dtype=np.uint32)
