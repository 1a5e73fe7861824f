"""Which global positions a training step holds, and which of them a rank receives (pure).

A step is `global_batch_size` sequences (or, for a mixture without one, the world size
times the per-rank batch size): step s holds positions [s x G, (s + 1) x G). Rank r of W
receives its positions s x G + r + W x i, i = 0 .. G/W - 1, in that order, as micro-batches
of `batch_size` (G / (W x batch_size) of them with gradient accumulation). This is what
`MixtureDataset.batches(batch_size)` and `torch_loader(dataset, batch_size, num_workers=N)`
hand the loop: DataLoader workers take whole batches in turn and the loader puts them back
in order, so workers change who reads a batch, not what it holds.

Example:
    >>> layout = StepLayout.of(global_batch_size=8, world_size=2, batch_size=2)
    >>> layout.positions(step=3, rank=1).tolist()
    [25, 27, 29, 31]
    >>> layout.micro_batches().tolist()
    [0, 0, 1, 1]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixplane.errors import ConfigError
from mixplane.mix.split import MAX_POSITIONS

# The blend's arithmetic holds up to here (over 10^11 sequences, more than any run reads).
MAX_POSITION = MAX_POSITIONS


@dataclass(frozen=True)
class StepLayout:
    """Sequences per step `step_size`, split over `world_size` ranks in micro-batches of
    `batch_size` sequences per rank."""

    step_size: int
    world_size: int
    batch_size: int

    @classmethod
    def of(
        cls, global_batch_size: int | None, world_size: int = 1, batch_size: int | None = None
    ) -> StepLayout:
        """The layout of a run, checked as the loader checks it: a step must split evenly
        over the ranks and their micro-batches."""
        if world_size < 1:
            raise ConfigError(f"world_size must be >= 1, got {world_size}")
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if global_batch_size is None:
            if batch_size is None:
                raise ConfigError(
                    "the mixture has no global_batch_size, so a step needs the batch size: "
                    "pass batch_size (--batch-size), the sequences each rank takes per step"
                )
            return cls(batch_size * world_size, world_size, batch_size)
        per_pass = world_size * (batch_size or 1)
        if global_batch_size % per_pass:
            raise ConfigError(
                f"global_batch_size {global_batch_size} is not a multiple of world_size "
                f"{world_size} x batch_size {batch_size or 1} = {per_pass}; the run could not "
                "have had this layout"
            )
        return cls(global_batch_size, world_size, batch_size or global_batch_size // world_size)

    @property
    def per_rank(self) -> int:
        """Sequences each rank receives in one step."""
        return self.step_size // self.world_size

    def positions(self, step: int, rank: int) -> np.ndarray:
        """The global positions rank `rank` receives in step `step`, in the order received."""
        if not 0 <= rank < self.world_size:
            raise ConfigError(f"rank must be in [0, {self.world_size}), got {rank}")
        if step < 0:
            raise ConfigError(f"step must be >= 0, got {step}")
        if (step + 1) * self.step_size > MAX_POSITION:
            raise ConfigError(
                f"step {step} of {self.step_size} sequences is past any stream "
                f"(positions up to {MAX_POSITION:,})"
            )
        first = step * self.step_size + rank
        return first + self.world_size * np.arange(self.per_rank, dtype=np.int64)

    def micro_batches(self) -> np.ndarray:
        """The micro-batch of each of a rank's positions in a step."""
        return np.arange(self.per_rank, dtype=np.int64) // self.batch_size


def delivered(positions: np.ndarray, world_size: int, length: int | None) -> np.ndarray:
    """The positions a rank receives before a stream of `length` sequences ends: only whole
    rows of `world_size` positions are handed out, so every rank gets as many."""
    if length is None:
        return positions
    return positions[positions < world_size * (length // world_size)]
