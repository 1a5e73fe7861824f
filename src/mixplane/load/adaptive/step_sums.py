"""One optimizer step's feedback on this rank, added up over the ranks in one all-reduce.

Each rank fills one flat float64 tensor per step, in slots:

    loss, tokens, nonfinite   per leaf: loss sums, tokens, tokens whose loss was nan or inf
    validation, validated     per policy component: validation losses given, and how many
                              ranks gave one
    problem, problem_step     per rank: why it stopped observing (0: it did not), and when

and all-reduces it (a sum) once, at the step's last micro-batch. A rank that finds a mistake
in what it was given does that all-reduce at once, with its problem set, and raises: the
other ranks' all-reduce of that step brings them the problem, so every rank stops at the
same step instead of waiting on one that left.

Example:
    >>> sums = StepSums(leaves=2, components=2, world_size=1, rank=0, device="cpu")
    >>> sums.add_batch(torch.tensor([1, 1]), torch.tensor([3.0, 5.0]), torch.tensor([4.0, 4.0]),
    ...                torch.tensor([0.0, 1.0]))
    >>> sums.give_validation(np.array([np.nan, 2.5]))
    >>> reduced = sums.reduce(distributed=False)
    >>> reduced.loss.tolist(), reduced.tokens.tolist(), reduced.nonfinite.tolist()
    ([0.0, 8.0], [0.0, 8.0], [0.0, 1.0])
    >>> reduced.validation.tolist()
    [nan, 2.5]
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
    VALIDATION = 2

    @property
    def description(self) -> str:
        return {
            Problem.BATCH: "a batch or loss observed out of order or of the wrong shape",
            Problem.VALIDATION: "validation losses it could not take",
        }[self]


@dataclass(frozen=True)
class ReducedStep:
    """A step's sums over every rank."""

    loss: np.ndarray  # per leaf
    tokens: np.ndarray  # per leaf
    nonfinite: np.ndarray  # per leaf: tokens whose loss was nan or inf (not in `loss`)
    validation: np.ndarray  # per policy component: the mean of the ranks' values, or nan
    problems: dict[int, tuple[Problem, int]]  # rank -> why it stopped, at which step


class StepSums:
    """The step's sums of this rank, on `device` (the loss's, or the backend's)."""

    def __init__(
        self, leaves: int, components: int, world_size: int, rank: int, device: torch.device | str
    ):
        self.rank = rank
        sizes = {
            "loss": leaves,
            "tokens": leaves,
            "nonfinite": leaves,
            "validation": components,
            "validated": components,
            "problem": world_size,
            "problem_step": world_size,
        }
        self.slots: dict[str, slice] = {}
        start = 0
        for name, size in sizes.items():
            self.slots[name] = slice(start, start + size)
            start += size
        self.tensor = torch.zeros(start, dtype=torch.float64, device=device)

    @property
    def device(self) -> torch.device:
        return self.tensor.device

    def slot(self, name: str) -> torch.Tensor:
        return self.tensor[self.slots[name]]

    def add_batch(
        self,
        components: torch.Tensor,
        loss: torch.Tensor,
        tokens: torch.Tensor,
        nonfinite: torch.Tensor,
    ) -> None:
        """Add per-sequence loss sums, token counts and counts of tokens whose loss was not
        finite (left out of the sums) to their leaves (`components`)."""
        components = components.to(self.device)
        for name, values in (("loss", loss), ("tokens", tokens), ("nonfinite", nonfinite)):
            self.slot(name).index_add_(0, components, values.to(self.device, torch.float64))

    @property
    def validation_given(self) -> bool:
        return bool(self.slot("validated").any())

    def give_validation(self, losses: np.ndarray) -> None:
        """This rank's validation losses for the step (nan: none for that component)."""
        given = ~np.isnan(losses)
        values = torch.as_tensor(np.where(given, losses, 0.0), dtype=torch.float64)
        self.slot("validation").copy_(values)
        self.slot("validated").copy_(torch.as_tensor(given, dtype=torch.float64))

    def flag(self, problem: Problem, step: int) -> None:
        """Tell the other ranks, through the coming all-reduce, that this rank stops."""
        self.slot("problem")[self.rank] = float(problem)
        self.slot("problem_step")[self.rank] = float(step)

    def reduce(self, distributed: bool) -> ReducedStep:
        """Sum over the ranks (when `distributed`), read back, and start the next step."""
        if distributed:
            dist.all_reduce(self.tensor)
        values = self.tensor.cpu().numpy().copy()
        self.tensor.zero_()
        part = {name: values[where] for name, where in self.slots.items()}
        with np.errstate(invalid="ignore", divide="ignore"):
            validation = np.where(
                part["validated"] > 0, part["validation"] / part["validated"], np.nan
            )
        return ReducedStep(
            loss=part["loss"],
            tokens=part["tokens"],
            nonfinite=part["nonfinite"],
            validation=validation,
            problems={
                rank: (Problem(int(code)), int(step))
                for rank, (code, step) in enumerate(
                    zip(part["problem"], part["problem_step"], strict=True)
                )
                if code
            },
        )
