"""A component's documents as ranges of document indices over a list of shards (pure numpy).

Component-local document j is the j-th document counted through the ranges in order; finding
its shard and index is one binary search. Set operations between components (for overlapping
predicates) work on ranges, never on one object per document.

Example:
    >>> ranges = DocumentRanges.build(
    ...     [("/d", "shard-00000-000"), ("/d", "shard-00001-000")],
    ...     shard=[0, 1], start=[10, 0], end=[13, 2])
    >>> ranges.documents
    5
    >>> [a.tolist() for a in ranges.locate(np.array([0, 2, 3]))]
    [[0, 0, 1], [10, 12, 0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

ShardKey = tuple[str, str]  # (dataset folder URI, shard stem)
# Documents of shard number s sit at s * SHARD_SPAN + index on one line for set operations.
SHARD_SPAN = 1 << 40


@dataclass(frozen=True, eq=False)
class DocumentRanges:
    """Documents `start..end-1` of shard `shards[shard]`, range after range."""

    shards: tuple[ShardKey, ...]
    shard: np.ndarray
    start: np.ndarray
    end: np.ndarray
    bases: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        counts = self.end - self.start
        object.__setattr__(self, "bases", np.concatenate(([0], np.cumsum(counts))))

    @classmethod
    def build(cls, shards: Sequence[ShardKey], shard, start, end) -> DocumentRanges:
        return cls(
            tuple(shards),
            np.asarray(shard, dtype=np.int32),
            np.asarray(start, dtype=np.int64),
            np.asarray(end, dtype=np.int64),
        )

    @classmethod
    def join(cls, parts: Sequence[DocumentRanges]) -> DocumentRanges:
        """One list of ranges from several (over their shards, renumbered)."""
        shards: list[ShardKey] = []
        numbers: dict[ShardKey, int] = {}
        shard, start, end = [], [], []
        for part in parts:
            mapping = np.array([numbers.setdefault(k, len(numbers)) for k in part.shards] or [0])
            shard.append(mapping[part.shard] if len(part.shard) else part.shard)
            start.append(part.start)
            end.append(part.end)
        shards = sorted(numbers, key=numbers.get)
        if not parts:
            return cls.build([], [], [], [])
        return cls.build(shards, np.concatenate(shard), np.concatenate(start), np.concatenate(end))

    @property
    def documents(self) -> int:
        return int(self.bases[-1])

    def locate(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`(shard number, document index in shard)` of component-local documents."""
        which = np.searchsorted(self.bases, local, side="right") - 1
        return self.shard[which], self.start[which] + (local - self.bases[which])

    def shard_of(self, local: np.ndarray) -> np.ndarray:
        """The shard number of each component-local document."""
        return self.shard[self.bases.searchsorted(local, side="right") - 1]

    def gather(self, per_shard: Callable[[int], np.ndarray]) -> np.ndarray:
        """A per-document array (e.g. token counts) from each shard's whole array, in order."""
        out = np.empty(self.documents, dtype=np.int64)
        for number in np.unique(self.shard):
            values = per_shard(int(number))
            mine = np.flatnonzero(self.shard == number)
            counts = self.end[mine] - self.start[mine]
            targets = expand(self.bases[mine], counts)
            out[targets] = values[expand(self.start[mine], counts)]
        return out

    def line(self, numbering: dict[ShardKey, int]) -> tuple[np.ndarray, np.ndarray]:
        """Sorted disjoint `[lo, hi)` intervals of these documents on the shared line."""
        codes = np.array([numbering[k] for k in self.shards] or [0], dtype=np.int64)
        offset = codes[self.shard] * SHARD_SPAN if len(self.shard) else np.zeros(0, np.int64)
        return merge(self.start + offset, self.end + offset)

    @classmethod
    def from_line(cls, lo: np.ndarray, hi: np.ndarray, numbering: dict[ShardKey, int]):
        keys = sorted(numbering, key=numbering.get)
        code = lo // SHARD_SPAN
        used = np.unique(code)
        renumber = np.searchsorted(used, code)
        return cls.build(
            [keys[int(c)] for c in used], renumber, lo - code * SHARD_SPAN, hi - code * SHARD_SPAN
        )


def expand(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated `arange(start, start + count)` for every pair, without a Python loop.

    Example:
        >>> expand(np.array([10, 0]), np.array([3, 2])).tolist()
        [10, 11, 12, 0, 1]
    """
    total = int(counts.sum())
    run_start = np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + (np.arange(total) - run_start)


def merge(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort intervals and join those that overlap or touch."""
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if len(lo) == 0:
        return lo, hi
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    starts = np.concatenate(([True], lo[1:] > reach[:-1]))
    firsts = np.flatnonzero(starts)
    lasts = np.concatenate((firsts[1:], [len(lo)])) - 1
    return lo[firsts], reach[lasts]


def covered(lo: np.ndarray, hi: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Whether each point lies in one of the sorted disjoint intervals."""
    if len(lo) == 0:
        return np.zeros(len(points), dtype=bool)
    which = np.searchsorted(lo, points, side="right") - 1
    return (which >= 0) & (points < hi[np.maximum(which, 0)])


def elementary(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]):
    """The pieces between all boundaries of two interval sets, with membership in each."""
    cuts = np.unique(np.concatenate([a[0], a[1], b[0], b[1]]))
    lo, hi = cuts[:-1], cuts[1:]
    return lo, hi, covered(*a, lo), covered(*b, lo)


def overlaps(a, b) -> bool:
    """Whether two sorted disjoint interval sets share a point (no sort, one binary search).

    For each interval of `a`, the last interval of `b` starting before its end overlaps it
    exactly when some interval of `b` does, since `b`'s intervals are sorted and disjoint.
    """
    (a_lo, a_hi), (b_lo, b_hi) = a, b
    if len(a_lo) == 0 or len(b_lo) == 0:
        return False
    last = b_lo.searchsorted(a_hi, side="left") - 1
    return bool(np.any((last >= 0) & (b_hi[np.maximum(last, 0)] > a_lo)))


def intersection_size(a, b) -> int:
    """Number of documents in both interval sets."""
    lo, hi, in_a, in_b = elementary(a, b)
    return int((hi - lo)[in_a & in_b].sum())


def difference(a, b) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of `a` not in `b`."""
    lo, hi, in_a, in_b = elementary(a, b)
    keep = in_a & ~in_b
    return merge(lo[keep], hi[keep])


def union(a, b) -> tuple[np.ndarray, np.ndarray]:
    return merge(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
