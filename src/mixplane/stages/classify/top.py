"""Which documents are the top fraction of a whole run by score: pure functions, no I/O.

The number kept is `k = round(fraction * N)` over the N documents scored, halves rounded up
(computed exactly on the fraction's binary value, no float rounding on the product). The
documents are ranked by score, highest first; documents with equal scores are ranked by id
(ascending, as Python compares strings), then by task and row, so the same inputs give the
same choice on any number of workers. The first `k` are kept: exactly `k`, whatever the ties.

So a document is kept when its score is above the cutoff score (the k-th highest), or equal
to it and among the first `k - above` of the documents at the cutoff in (id, task, row) order.

Example:
    >>> keep_count(0.1, 25)
    3
    >>> cut = top_cut(np.array([0.9, 0.5, 0.5, 0.2], dtype=np.float32), 2)
    >>> float(cut.score), cut.above, cut.tied
    (0.5, 1, 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


def keep_count(fraction: float, total: int) -> int:
    """How many of `total` documents the top `fraction` keeps: round half up, exactly.

    Example:
        >>> keep_count(0.25, 2), keep_count(0.1, 4), keep_count(1.0, 7), keep_count(0.0, 7)
        (1, 0, 7, 0)
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be within [0, 1], got {fraction}")
    return math.floor(Fraction(fraction) * total + Fraction(1, 2))


@dataclass(frozen=True)
class TopCut:
    """Where the top `k` ends.

    `score` is the k-th highest score (None when k is 0: nothing is kept); `above` documents
    score higher and are all kept; `tied` more are kept from those scoring exactly `score`.
    """

    score: float | None
    above: int
    tied: int


def top_cut(scores: np.ndarray, k: int) -> TopCut:
    """The cut keeping the `k` highest of `scores` (ties resolved later, by `tie_winners`)."""
    if k <= 0 or len(scores) == 0:
        return TopCut(None, 0, 0)
    k = min(k, len(scores))
    cutoff = np.partition(scores, len(scores) - k)[len(scores) - k]
    above = int(np.count_nonzero(scores > cutoff))
    return TopCut(float(cutoff), above, k - above)


def tie_winners(keys: list[tuple[str, int, int]], wanted: int) -> list[tuple[str, int, int]]:
    """The `wanted` first of the documents at the cutoff, by (id, task, row).

    Example:
        >>> tie_winners([("b", 0, 0), ("a", 1, 4), ("a", 0, 9)], 2)
        [('a', 0, 9), ('a', 1, 4)]
    """
    return sorted(keys)[:wanted]


def top_mask(scores: np.ndarray, ids: list[str], fraction: float) -> np.ndarray:
    """Which documents the top `fraction` keeps, for one in-memory list (one task, row order):
    the reference the run-wide merge follows, and what tests check it against.

    Example:
        >>> top_mask(np.array([0.2, 0.9, 0.5, 0.5]), ["a", "b", "d", "c"], 0.5).tolist()
        [False, True, False, True]
    """
    cut = top_cut(scores, keep_count(fraction, len(scores)))
    mask = np.zeros(len(scores), dtype=bool)
    if cut.score is None:
        return mask
    mask[scores > cut.score] = True
    at_cut = np.flatnonzero(scores == cut.score).tolist()
    winners = tie_winners([(ids[row], 0, row) for row in at_cut], cut.tied)
    mask[[row for _, _, row in winners]] = True
    return mask
