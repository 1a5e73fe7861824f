"""Batches of whole documents for every rank, planned window by window (pure numpy).

The global document stream (`plan.documents`) is cut into windows of documents, counted
from a `base` position. A window becomes `steps`: each step is one batch per rank, so every
rank takes the same number of batches per step and per window (DDP never waits on a rank
with fewer). Rank r's batch of step s is batch s x world_size + r of the window.

- Fixed batches (`batch_size`): the window's documents in stream order, `batch_size` per
  batch; a window is a whole number of global batches.
- Bucketing (`budget` padded tokens per batch): the window's documents are sorted by length
  (ties in a seeded random order), cut greedily into batches whose rows x padded longest
  length stays within the budget, batches split in two (the largest first) until their
  count is a multiple of the world size, and the steps shuffled (seeded by the window).
  A window holds a multiple of world_size documents, so splitting always gets there.

The stream's last window is cut to whole steps: the few documents past the last whole
global batch (fixed) or past a multiple of world_size (bucketing) are left out.

Example:
    >>> lengths = np.array([5, 300, 7, 290, 6, 310])
    >>> batches = bucket_batches(lengths, budget=640, multiple=8, world_size=2, seed=[0, 0])
    >>> [sorted(lengths[b].tolist()) for b in batches]
    [[6], [5, 7], [290, 300], [310]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mixplane.load.plan.packing import stable_key


def padded(lengths: np.ndarray, multiple: int) -> np.ndarray:
    """Lengths rounded up to a multiple of `multiple`."""
    return -(-np.asarray(lengths, dtype=np.int64) // multiple) * multiple


def greedy_cuts(sorted_padded: np.ndarray, budget: int) -> np.ndarray:
    """Batch starts over padded lengths sorted ascending: each batch takes as many of the
    next samples as fit, rows x (its last, longest) length <= `budget`. Every length must
    be <= budget.

    >>> greedy_cuts(np.array([8, 8, 8, 16, 16, 32]), budget=32).tolist()
    [0, 3, 5]
    """
    cuts, start, n = [], 0, len(sorted_padded)
    while start < n:
        cuts.append(start)
        most = budget // int(sorted_padded[start])  # no batch from here holds more rows
        window = sorted_padded[start : start + most]
        cost = window * np.arange(1, len(window) + 1)
        start += int(np.searchsorted(cost, budget, side="right"))
    return np.array(cuts, dtype=np.int64)


def split_to_multiple(cuts: np.ndarray, n: int, multiple: int) -> np.ndarray:
    """Split batches (the largest first, into halves) until there are a multiple of
    `multiple`; `n` samples in all, n >= the next multiple of the batch count.

    >>> split_to_multiple(np.array([0, 4]), n=6, multiple=3).tolist()
    [0, 2, 4]
    """
    cuts = cuts.tolist()
    while len(cuts) % multiple:
        sizes = np.diff([*cuts, n])
        largest = int(np.argmax(sizes))  # the first of the largest: deterministic
        if sizes[largest] < 2:
            raise ValueError(f"{n} samples cannot make a multiple of {multiple} batches")
        cuts.insert(largest + 1, cuts[largest] + int(sizes[largest]) // 2)
    return np.array(cuts, dtype=np.int64)


def bucket_batches(
    lengths: np.ndarray, budget: int, multiple: int, world_size: int, seed: Sequence[int]
) -> list[np.ndarray]:
    """A window's batches (indices into `lengths`), in step order: steps of `world_size`
    batches of similar lengths, each batch within `budget` padded tokens, steps shuffled.

    `len(lengths)` must be a multiple of `world_size`; `seed` decides ties and the order
    of the steps.
    """
    n = len(lengths)
    if n == 0:
        return []
    if n % world_size:
        raise ValueError(f"a window of {n} documents is not a multiple of {world_size}")
    generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(seed))))
    rounded = padded(lengths, multiple)
    if int(rounded.max()) > budget:
        raise ValueError(f"a sample of {int(rounded.max())} padded tokens exceeds {budget}")
    # By length, ties in random order: one sort of (length, random 32 bits) in one int64.
    keys = (rounded << 32) | generator.integers(0, 1 << 32, n, dtype=np.int64)
    order = np.argsort(keys)
    cuts = split_to_multiple(greedy_cuts(rounded[order], budget), n, world_size).tolist()
    batches = [order[a:b] for a, b in zip(cuts, [*cuts[1:], n], strict=True)]
    steps = generator.permutation(len(batches) // world_size)
    return [batches[s * world_size + r] for s in steps.tolist() for r in range(world_size)]


def fixed_batches(count: int, batch_size: int) -> list[np.ndarray]:
    """`count` documents (a multiple of batch_size) in order, `batch_size` per batch."""
    return list(np.arange(count, dtype=np.int64).reshape(-1, batch_size))


def window_unit(world_size: int, batch_size: int | None) -> int:
    """What a window's size is a multiple of: a global batch (fixed batches), or one
    document per rank (bucketing)."""
    return world_size * (batch_size or 1)


def cut_window(
    lengths: np.ndarray,
    batch_size: int | None,
    budget: int | None,
    multiple: int,
    world_size: int,
    seed: Sequence[int],
) -> list[np.ndarray]:
    """A window's batches in step order: `batch_size` per batch in stream order, else
    bucketed within `budget` (see `bucket_batches`)."""
    if batch_size is not None:
        return fixed_batches(len(lengths), batch_size)
    return bucket_batches(lengths, budget, multiple, world_size, seed)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Window:
    """Window `number`: documents at global `positions`, and `batches` of indices into
    them in step order (batch s x world_size + r is rank r's of step s)."""

    number: int
    positions: np.ndarray
    lengths: np.ndarray
    batches: list[np.ndarray]
    world_size: int

    @property
    def steps(self) -> int:
        return len(self.batches) // self.world_size

    def batch(self, step: int, rank: int) -> np.ndarray:
        """Global positions of rank `rank`'s batch of step `step`."""
        return self.positions[self.batches[step * self.world_size + rank]]


@dataclass(frozen=True)
class BatchPlan:
    """How a stream of `length` documents (None: endless) becomes steps, from `base`.

    Give `batch_size` for fixed batches or `budget` (padded tokens) for bucketing.
    `window` is rounded up to whole steps' worth of documents.
    """

    world_size: int
    window: int
    seed: int
    multiple: int = 1
    batch_size: int | None = None
    budget: int | None = None
    base: int = 0
    length: int | None = None

    def __post_init__(self) -> None:
        if (self.batch_size is None) == (self.budget is None):
            raise ValueError("a batch plan needs a batch_size or a token budget, not both")

    @property
    def unit(self) -> int:
        """Documents a window's size is a multiple of (`window_unit`)."""
        return window_unit(self.world_size, self.batch_size)

    @property
    def window_size(self) -> int:
        return -(-self.window // self.unit) * self.unit

    def window_positions(self, number: int) -> np.ndarray:
        """Global positions of window `number` (empty past the stream's end)."""
        start = self.base + number * self.window_size
        stop = start + self.window_size
        if self.length is not None:
            stop = start + max(0, min(stop, self.length) - start) // self.unit * self.unit
        return np.arange(start, max(start, stop), dtype=np.int64)

    def plan_window(self, number: int, lengths: np.ndarray) -> Window:
        """Window `number` with its documents' `lengths` (cut to seq_len)."""
        positions = self.window_positions(number)
        seed = [self.seed, stable_key("bucketing"), int(positions[0]) if len(positions) else 0]
        batches = cut_window(
            lengths, self.batch_size, self.budget, self.multiple, self.world_size, seed
        )
        return Window(number, positions, lengths, batches, self.world_size)
