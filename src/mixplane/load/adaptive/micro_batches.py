"""Which micro-batches of the current step this rank has observed: none twice, none missing.

A step is `step_size` global positions. Rank r of W receives that step's positions
step * step_size + r, + W, + 2W, ... in order, a micro-batch at a time, and the training loop
observes each micro-batch right after taking it. `check` says what is wrong with a batch
before anything of it is counted (None when it is the next one expected); `advance` records
it and says whether the step is complete on this rank.

Example:
    >>> seen = MicroBatches(step_size=8, rank=1, world_size=2)
    >>> seen.check(0, np.array([1, 3]), next_step=0, received=3) is None
    True
    >>> seen.advance(0, np.array([1, 3]))
    False
    >>> seen.check(0, np.array([1, 3]), next_step=0, received=3).split(":")[0]
    'positions 1..3 of step 0 were already observed'
    >>> seen.check(0, np.array([7]), next_step=0, received=7).split(":")[0]
    'positions 5..5 of step 0 were taken but not observed'
"""

from __future__ import annotations

import numpy as np


class MicroBatches:
    """Tracks the positions this rank has observed in the step under way."""

    def __init__(self, step_size: int, rank: int, world_size: int):
        self.step_size = step_size
        self.rank = rank
        self.world_size = world_size
        self.step: int | None = None  # the step under way (some of its micro-batches seen)
        self.next = 0  # the next position of that step this rank should observe

    def reset(self) -> None:
        """Forget the step under way (a loader state was loaded: it starts at a step)."""
        self.step = None

    def first_of(self, step: int) -> int:
        return step * self.step_size + self.rank

    def last_of(self, step: int) -> int:
        return (step + 1) * self.step_size - self.world_size + self.rank

    def check(self, step: int, positions: np.ndarray, next_step: int, received: int) -> str | None:
        """What is wrong with observing the batch at `positions` for `step`, or None.

        `next_step` is the step the policy expects next, `received` the last position this
        rank has taken from its loader.
        """
        if positions.size == 0:
            return "observe got an empty batch"
        first, last = int(positions[0]), int(positions[-1])
        if positions.size > 1 and np.any(np.diff(positions) != self.world_size):
            return (
                f"the batch's positions {first}..{last} are not consecutive positions of rank "
                f"{self.rank} of {self.world_size}: observe the batches the loader gives, whole"
            )
        if last != received:
            return (
                f"observe got the batch ending at position {last}, but the last batch this rank "
                f"received ends at {received}: observe each batch right after taking it"
            )
        size = self.step_size
        if first // size != step or last // size != step:
            return (
                f"observe(step={step}) got a batch of step {first // size} (positions "
                f"{first}..{last}, {size} a step): pass the optimizer step the batch belongs "
                "to (its first step is 0, or the resumed step)"
            )
        if self.step is not None and step != self.step:
            return (
                f"step {self.step} is not complete: its positions {self.next}.."
                f"{self.last_of(self.step)} on this rank were taken but not observed; observe "
                "every micro-batch of a step"
            )
        if self.step is None:
            if step < next_step:
                return (
                    f"positions {first}..{last} of step {step} were already observed (the "
                    f"step is complete): observe each micro-batch once"
                )
            if step > next_step:
                return (
                    f"feedback for step {step} where step {next_step} was next: observe every "
                    "step, in order, with the optimizer step's number"
                )
        expected = self.next if self.step is not None else self.first_of(step)
        if first < expected:
            return (
                f"positions {first}..{last} of step {step} were already observed: observe "
                "each micro-batch once"
            )
        if first > expected:
            return (
                f"positions {expected}..{first - self.world_size} of step {step} were taken "
                "but not observed: observe every micro-batch, right after taking it"
            )
        return None

    def advance(self, step: int, positions: np.ndarray) -> bool:
        """Record the batch (checked); True when it completes the step on this rank."""
        self.next = int(positions[-1]) + self.world_size
        if self.next > self.last_of(step):
            self.step = None
            return True
        self.step = step
        return False
