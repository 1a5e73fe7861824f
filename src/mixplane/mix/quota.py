"""Exact-prefix interleaving of components with integer shares of a period.

With integer shares `m` (summing to the period D), `period_table(m)` orders D slots so that
after any t slots each component c has been picked floor(t*m_c/D) or ceil(t*m_c/D) times:
every prefix is within one pick of its share. Picking "the largest deficit" does not always
achieve this; scheduling each component's k-th pick by earliest deadline does. The k-th pick of
c may happen at slot t (1-based) once t*m_c/D > k-1, and must happen by the first t with
t*m_c/D >= k; earliest-deadline-first meets every such window whenever any order can, and
one always can (each prefix holds at least as many deadlines as slots allow).
After D slots every count equals m_c, so the table repeats.

Example:
    >>> "".join("abc"[c] for c in period_table(np.array([5, 3, 2]))[0])
    'abacababac'
"""

from __future__ import annotations

import heapq
from fractions import Fraction
from functools import lru_cache
from math import gcd, lcm

import numpy as np


def exact_shares(weights: np.ndarray, resolution: int) -> np.ndarray | None:
    """Integer shares of a period when the weights are simple fractions whose common
    denominator is at most `resolution`; None otherwise (see `split`).

    Example:
        >>> exact_shares(np.array([0.5, 0.3, 0.2]), 1 << 16).tolist()
        [5, 3, 2]
        >>> exact_shares(np.array([0.5, 0.5 - 1e-9, 1e-9]), 1 << 16) is None
        True
    """
    return _exact_shares(np.asarray(weights, dtype=np.float64), resolution)


def _exact_shares(weights: np.ndarray, resolution: int) -> np.ndarray | None:
    fractions = []
    total = float(weights.sum())
    for weight in weights / total:
        fraction = Fraction(float(weight)).limit_denominator(resolution)
        if abs(float(fraction) - weight) > 1e-12 or (weight > 0 and fraction == 0):
            return None
        fractions.append(fraction)
    if sum(fractions) != 1:
        return None
    period = lcm(*(f.denominator for f in fractions))
    if period > resolution:
        return None
    shares = np.array([int(f * period) for f in fractions], dtype=np.int64)
    return shares // gcd(*shares.tolist())


def period_table(shares: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(component, rank)` per slot of one period; rank counts earlier slots of that component.

    Cached by shares, since a schedule reuses the same weights over many segments.
    """
    key = tuple(int(s) for s in shares)
    return _period_table(key)


@lru_cache(maxsize=16)
def _period_table(shares: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    period = sum(shares)
    picked = [0] * len(shares)
    component = np.empty(period, dtype=np.int32)
    rank = np.empty(period, dtype=np.int64)
    # waiting: (release slot, c) of each component's next pick; ready: (deadline, c).
    waiting = [(1, c) for c, share in enumerate(shares) if share > 0]
    heapq.heapify(waiting)
    ready: list[tuple[int, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    for slot in range(1, period + 1):
        while waiting and waiting[0][0] <= slot:
            _, c = pop(waiting)
            push(ready, (-(-(picked[c] + 1) * period // shares[c]), c))
        _, c = pop(ready)
        component[slot - 1] = c
        rank[slot - 1] = picked[c]
        picked[c] += 1
        if picked[c] < shares[c]:
            push(waiting, (picked[c] * period // shares[c] + 1, c))
    component.setflags(write=False)
    rank.setflags(write=False)
    return component, rank


def picks_before(shares: np.ndarray, slots: int) -> np.ndarray:
    """How many times each component is picked in the first `slots` slots (any length).

    Example:
        >>> picks_before(np.array([5, 3, 2]), 25).tolist()
        [13, 7, 5]
    """
    component, _ = period_table(shares)
    periods, rest = divmod(int(slots), len(component))
    counts = np.bincount(component[:rest], minlength=len(shares)).astype(np.int64)
    return periods * np.asarray(shares, dtype=np.int64) + counts


def slot_of_pick(shares: np.ndarray, c: int, pick: int) -> int:
    """The slot (0-based, any period) where component `c` makes its `pick`-th pick (0-based)."""
    component, rank = period_table(shares)
    periods, within = divmod(int(pick), int(shares[c]))
    slot = int(np.flatnonzero((component == c) & (rank == within))[0])
    return periods * len(component) + slot
