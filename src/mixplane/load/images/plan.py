"""The order of an image-text mixture, as a pure function of (seed, epoch, position).

An epoch holds `length` sample positions (by default as many as the components' samples
together, so natural weights visit every sample once an epoch). Positions are blended by the
components' sample weights with the exact-prefix blend (`mix.blend`): every prefix of N
positions holds each component within one sample of N x weight. A component's k-th pick
overall (counting across epochs) is sample `perm[k mod n]` of its pass `k // n`, with `perm`
a permutation seeded by (seed, component, pass): a component weighted above its natural share
starts a new shuffled pass, one weighted below continues its pass in the next epoch.

Ranks and DataLoader workers split an epoch's positions as they split a text stream
(`mixplane.load.plan.partition.Layout`, with the batch size as its block): rank r of W takes
positions r, r + W, ... An epoch delivers only whole global batches (`batch_size x W`): the
last `length mod global_batch` positions of an epoch are dropped, so every rank gets the same
number of batches. Nothing here reads files.

Example:
    >>> plan = EpochPlan([6, 3], [2 / 3, 1 / 3], seed=0)
    >>> plan.length
    9
    >>> components, members = plan.lookup(epoch=0, positions=np.arange(9))
    >>> components.tolist()
    [0, 0, 1, 0, 0, 1, 0, 0, 1]
    >>> sorted(members[components == 0].tolist()), sorted(members[components == 1].tolist())
    ([0, 1, 2, 3, 4, 5], [0, 1, 2])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from mixplane.errors import ConfigError
from mixplane.mix.blend import Blend

PERMUTATIONS_KEPT = 8  # passes whose permutations stay in memory (a few are live at once)


class EpochPlan:
    """Which component and which of its samples fills each position of each epoch."""

    def __init__(
        self,
        counts: Sequence[int],
        weights: Sequence[float],
        seed: int = 0,
        length: int | None = None,
        resolution: int = 1 << 16,
    ):
        self.counts = np.asarray(counts, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=np.float64)
        if self.counts.shape != self.weights.shape or self.counts.ndim != 1:
            raise ValueError("counts and weights must be two lists of the same length")
        empty = np.flatnonzero((self.counts <= 0) & (self.weights > 0))
        if empty.size:
            raise ConfigError(f"components {empty.tolist()} have a weight but no samples")
        self.seed = int(seed)
        self.length = int(self.counts.sum() if length is None else length)
        if self.length <= 0:
            raise ConfigError("an epoch needs at least one sample")
        self.blend = Blend([(0, self.weights)], resolution=resolution)
        # Picks of each component in one epoch: the same every epoch, as the blend restarts.
        self.picks = self.blend.counts_before(self.length)
        self._permutations: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()

    def permutation(self, component: int, epoch_pass: int) -> np.ndarray:
        """The order of a component's samples in one of its passes (seeded, cached)."""
        key = (component, epoch_pass)
        found = self._permutations.get(key)
        if found is None:
            seeds = np.random.SeedSequence([self.seed, component, epoch_pass])
            found = np.random.Generator(np.random.PCG64(seeds)).permutation(
                int(self.counts[component])
            )
            self._permutations[key] = found
            while len(self._permutations) > PERMUTATIONS_KEPT:
                self._permutations.popitem(last=False)
        else:
            self._permutations.move_to_end(key)
        return found

    def lookup(self, epoch: int, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`(component, sample within the component)` of each position of `epoch`."""
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size and (positions.min() < 0 or positions.max() >= self.length):
            raise IndexError(f"positions outside an epoch of {self.length} samples")
        components, ranks = self.blend.lookup(positions)
        picks = epoch * self.picks[components] + ranks
        counts = self.counts[components]
        passes, within = picks // counts, picks % counts
        members = np.empty(positions.shape, dtype=np.int64)
        pairs = set(zip(components.tolist(), passes.tolist(), strict=True))
        for component, epoch_pass in sorted(pairs):
            mask = (components == component) & (passes == epoch_pass)
            members[mask] = self.permutation(component, epoch_pass)[within[mask]]
        return components.astype(np.int64), members
