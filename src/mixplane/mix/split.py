"""Which component fills each position of a segment, for any weights, with random access.

Two ways, one interface (`counts`, `lookup`, `position_of_pick`):

- `PeriodSplit`: weights that are simple fractions (common denominator up to the mixture's
  `weight_resolution`) repeat a period table (`quota`): every prefix of n positions holds
  each component within one position of n x weight.
- `TreeSplit`: any other positive weights. The components form a balanced binary tree; a
  node sends its i-th position to its left child when round((i+1) p) > round(i p), p being
  the left child's share of the node's weight, held as an integer over 2^52. The left child
  has then had round(n p) of the node's first n positions and the right one the rest, so
  every node is within half a position of its share at every prefix, and a component at
  depth d (at most ceil(log2 K) for K components) within d / 2 positions of n x weight:

      |count_c(n) - n w_c| <= d_c / 2 + n d_c 2^-52

  (each level's rounding moves the count by at most one half, which the levels below can
  only shrink; the last term is the rounding of p, under one position before n = 2^50).
  Up to four components that is within one sequence at every prefix, as for simple
  fractions; 16 components within two. A weight of 1e-6 gets its millionth of every prefix
  within a sequence or two, however long the run.

Finding the component of a position and its rank costs O(depth) vectorized steps, counts
after n positions O(K), and the position of a component's k-th pick a binary search.

Example:
    >>> split = make_split(np.array([0.5, 0.3, 0.2]), 1 << 16)  # simple fractions
    >>> split.lookup(np.arange(10))[0].tolist()
    [0, 1, 0, 2, 0, 1, 0, 1, 0, 2]
    >>> tiny = make_split(np.array([1 - 1e-6, 1e-6]), 1 << 16)
    >>> tiny.counts(10**9).tolist()
    [999999000, 1000]
    >>> tiny.counts(999_999).tolist(), tiny.counts(1_500_000).tolist()
    ([999998, 1], [1499998, 2])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixplane.mix.quota import exact_shares, period_table, picks_before, slot_of_pick

ONE = 1 << 52  # a node's share of its positions is an integer over this
HALF = 26
MAX_POSITIONS = 1 << 37  # per segment, so that the split products below fit in int64


class PeriodSplit:
    """Integer shares of a period, repeated (exact for simple fractions)."""

    def __init__(self, shares: np.ndarray):
        self.shares = np.asarray(shares, dtype=np.int64)
        self.table, self.rank = period_table(self.shares)
        self.period = int(self.shares.sum())

    def counts(self, n: int) -> np.ndarray:
        """Positions each component has among the first `n`."""
        return picks_before(self.shares, n)

    def lookup(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`(component, rank within the component)` of each local position."""
        periods, slots = np.divmod(np.asarray(local, dtype=np.int64), self.period)
        chosen = self.table[slots]
        return chosen, periods * self.shares[chosen] + self.rank[slots]

    def position_of_pick(self, c: int, pick: int) -> int:
        """The local position of component `c`'s `pick`-th position (0-based)."""
        return slot_of_pick(self.shares, c, pick)


@dataclass(frozen=True)
class _Node:
    left: int  # child node index, or -1 - component for a leaf
    right: int
    share: int  # the left child's share of this node's positions, over ONE


class TreeSplit:
    """A balanced binary tree over the components with positive weight."""

    def __init__(self, weights: np.ndarray):
        weights = np.asarray(weights, dtype=np.float64)
        self.n_components = len(weights)
        self.nodes: list[_Node] = []
        self.paths: dict[int, list[tuple[int, bool]]] = {}  # component -> (node, went left)
        present = [int(c) for c in np.flatnonzero(weights > 0)]
        self.root = self._build(present, weights, [])

    def _build(self, members: list[int], weights: np.ndarray, path: list) -> int:
        if len(members) == 1:
            self.paths[members[0]] = path
            return -1 - members[0]
        middle = len(members) // 2
        left, right = members[:middle], members[middle:]
        total = float(weights[members].sum())
        share = min(max(round(float(weights[left].sum()) / total * ONE), 1), ONE - 1)
        index = len(self.nodes)
        self.nodes.append(_Node(0, 0, share))
        lo = self._build(left, weights, [*path, (index, True)])
        hi = self._build(right, weights, [*path, (index, False)])
        self.nodes[index] = _Node(lo, hi, share)
        return index

    def counts(self, n: int) -> np.ndarray:
        out = np.zeros(self.n_components, dtype=np.int64)
        self._count(self.root, int(n), out)
        return out

    def _count(self, node: int, n: int, out: np.ndarray) -> None:
        if node < 0:
            out[-1 - node] = n
            return
        taken = (n * self.nodes[node].share + ONE // 2) // ONE
        self._count(self.nodes[node].left, taken, out)
        self._count(self.nodes[node].right, n - taken, out)

    def count_of(self, c: int, n: int) -> int:
        """Positions of component `c` among the first `n` (O(depth))."""
        if c not in self.paths:
            return 0
        for node, went_left in self.paths[c]:
            taken = (n * self.nodes[node].share + ONE // 2) // ONE
            n = taken if went_left else n - taken
        return n

    def lookup(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        index = np.asarray(local, dtype=np.int64)
        if index.size and int(index.max()) >= MAX_POSITIONS:
            raise ValueError(f"a segment holds at most {MAX_POSITIONS:,} positions")
        node = np.full(index.shape, self.root, dtype=np.int64)
        if self.root < 0:
            return np.full(index.shape, -1 - self.root, dtype=np.int32), index
        left = np.array([n.left for n in self.nodes], dtype=np.int64)
        right = np.array([n.right for n in self.nodes], dtype=np.int64)
        share = np.array([n.share for n in self.nodes], dtype=np.int64)
        inner = np.ones(index.shape, dtype=bool)
        while inner.any():
            at = node[inner]
            i = index[inner]
            before = _round_share(i, share[at])
            goes_left = _round_share(i + 1, share[at]) > before
            index[inner] = np.where(goes_left, before, i - before)
            node[inner] = np.where(goes_left, left[at], right[at])
            inner = node >= 0
        return (-1 - node).astype(np.int32), index

    def position_of_pick(self, c: int, pick: int) -> int:
        """The smallest n with count_of(c, n + 1) > pick, by binary search."""
        weight_bound = 1
        for node, went_left in self.paths[c]:
            share = self.nodes[node].share
            weight_bound *= share if went_left else ONE - share
        # The count reaches pick + 1 once n x weight >= pick + 1 + depth / 2.
        depth = len(self.paths[c])
        high = ((pick + depth + 2) * ONE ** max(depth, 1)) // max(weight_bound, 1) + 1
        low = 0
        while low < high:
            middle = (low + high) // 2
            if self.count_of(c, middle + 1) > pick:
                high = middle
            else:
                low = middle + 1
        return low


def _round_share(i: np.ndarray, share: np.ndarray) -> np.ndarray:
    """floor(i * share / 2^52 + 1/2) exactly in int64, for 0 <= i < 2^37, 0 <= share < 2^52.

    With share = high 2^26 + low: i share / 2^52 = a / 2^26 + b / 2^52 for a = i high and
    b = i low (each below 2^63); the parts below one are added up before the floor.
    """
    high, low = share >> HALF, share & ((1 << HALF) - 1)
    a = i * high
    b = i * low
    fraction = ((a & ((1 << HALF) - 1)) << HALF) + (b & (ONE - 1)) + ONE // 2  # < 3 x 2^52
    return (a >> HALF) + (b >> 52) + (fraction >> 52)


def make_split(weights: np.ndarray, resolution: int) -> PeriodSplit | TreeSplit:
    """The split for normalized `weights`: a period table for simple fractions, else a tree."""
    shares = exact_shares(weights, resolution)
    return PeriodSplit(shares) if shares is not None else TreeSplit(weights)
