"""One optimizer step's feedback on this rank, added up over the ranks in one all-reduce.

Each rank fills one flat float64 tensor per step,

    [loss per leaf | tokens per leaf | non-finite tokens per leaf | problem, step per rank]

and all-reduces it (a sum) once, at the step's last micro-batch. A rank that finds a mistake
in what it was given does that all-reduce at once, with its problem code set, and raises:
the other ranks' all-reduce of that step brings them the code, so every rank stops at the
same step instead of waiting on one that left.

Example:
    >>> sums = StepSums(leaves=2, world_size=1, rank=0, device="cpu")
    >>> sums.add_batch(torch.tensor([1, 1]), torch.tensor([3.0, 5.0]), torch.tensor([4.0, 4.0]),
    ...                torch.tensor([0.0, 1.0]))
    >>> reduced = sums.reduce(distributed=False)
    >>> reduced.loss.tolist(), reduced.tokens.tolist(), reduced.nonfinite.tolist()
    ([0.0, 8.0], [0.0, 8.0], [0.0, 1.0])
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import torch
import torch.distributed as dist


class Problem(IntEnum):
    """Why a rank stopped observing, as the other ranks learn it."""

    BATCH = 1

    @property
    def description(self) -> str:
        return {
            Problem.BATCH: "a batch or loss observed out of order or of the wrong shape",
        }[self]


@dataclass(frozen=True)
class ReducedStep:
    """A step's sums over every rank."""

    loss: np.ndarray  # per leaf
    tokens: np.ndarray  # per leaf
    nonfinite: np.ndarray  # per leaf: tokens whose loss was nan or inf (not in `loss`)
    problems: dict[int, tuple[Problem, int]]  # rank -> why it stopped, at which step


class StepSums:
    """The step's sums of this rank, on `device` (the loss's, or the backend's)."""

    def __init__(self, leaves: int, world_size: int, rank: int, device: torch.device | str):
        self.leaves = leaves
        self.world_size = world_size
        self.rank = rank
        self.tensor = torch.zeros(3 * leaves + 2 * world_size, dtype=torch.float64, device=device)

    @property
    def device(self) -> torch.device:
        return self.tensor.device

    def add_batch(
        self,
        components: torch.Tensor,
        loss: torch.Tensor,
        tokens: torch.Tensor,
        nonfinite: torch.Tensor,
    ) -> None:
        """Add per-sequence loss sums, token counts and counts of tokens whose loss was not
        finite (left out of the sums) to their leaves (`components`)."""
        count, device = self.leaves, self.device
        components = components.to(device)
        self.tensor[:count].index_add_(0, components, loss.to(device, torch.float64))
        self.tensor[count : 2 * count].index_add_(0, components, tokens.to(device, torch.float64))
        bad = nonfinite.to(device, torch.float64)
        self.tensor[2 * count : 3 * count].index_add_(0, components, bad)

    def flag(self, problem: Problem, step: int) -> None:
        """Tell the other ranks, through the coming all-reduce, that this rank stops."""
        at = 3 * self.leaves + self.rank
        self.tensor[at] = float(problem)
        self.tensor[at + self.world_size] = float(step)

    def reduce(self, distributed: bool) -> ReducedStep:
        """Sum over the ranks (when `distributed`), read back, and start the next step."""
        if distributed:
            dist.all_reduce(self.tensor)
        values = self.tensor.cpu().numpy().copy()
        self.tensor.zero_()
        count = self.leaves
        codes, steps = np.split(values[3 * count :], 2)
        return ReducedStep(
            loss=values[:count],
            tokens=values[count : 2 * count],
            nonfinite=values[2 * count : 3 * count],
            problems={
                rank: (Problem(int(code)), int(step))
                for rank, (code, step) in enumerate(zip(codes, steps, strict=True))
                if code
            },
        )
