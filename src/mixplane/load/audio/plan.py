"""An audio epoch's batches, window by window, as a pure function of the plan (no files).

An epoch's positions (`EpochPlan`: which component and clip fills each) are cut into windows
of `window` positions (rounded up to whole `unit`s). A window's clips become steps, one batch
per rank each (`plan.buckets.bucket_batches`): with a `budget` of padded frames, clips of
similar length share a batch whose rows x longest (rounded up to `multiple`) stays within
the budget; with a fixed `batch_size`, the window's clips in order, `batch_size` a batch.
Every rank gets the same number of batches per window. The epoch's last window is cut to
whole units (fewer than `unit` positions are left out, as the image loader leaves out those
past its last global batch).

`Batching` is one layout (world size, batch size or budget, window): a cursor's window was
opened by a layout and may have been read by others since (elastic resume, `AudioState`):
`history` lists each earlier layout with the steps it took of the window. The window's
remaining clips (those no earlier layout's steps took) are batched anew by the next layout,
cut to whole units of it (the last layout leaves fewer than its `unit` clips of the window
out of the epoch).

Example:
    >>> batching = Batching(world_size=2, batch_size=None, budget=100, window=8)
    >>> lengths = np.array([10, 90, 12, 80, 11, 85, 9, 95])
    >>> window = plan_window(0, 0, (), batching, 8, lambda p: lengths[p], seed=0)
    >>> [sorted(lengths[window.batch(s, r)].tolist()) for s in range(window.steps)
    ...  for r in range(2)]
    [[90], [95], [80], [85], [9, 10], [11, 12]]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from mixplane.load.plan import buckets
from mixplane.load.plan.buckets import cut_window, padded, window_unit
from mixplane.load.plan.packing import stable_key

Lengths = Callable[[np.ndarray], np.ndarray]  # positions of the epoch -> clip lengths


@dataclass(frozen=True)
class Batching:
    """How one layout batches a window: `world_size` ranks, a fixed `batch_size` or a
    `budget` of padded frames per batch (clip lengths rounded up to `multiple`), windows of
    `window` positions."""

    world_size: int
    batch_size: int | None
    budget: int | None
    window: int
    multiple: int = 1

    @property
    def unit(self) -> int:
        """Positions a window's size is a multiple of (`window_unit`)."""
        return window_unit(self.world_size, self.batch_size)

    @property
    def window_size(self) -> int:
        return -(-self.window // self.unit) * self.unit

    def cut(self, lengths: np.ndarray, seed: list[int]) -> list[np.ndarray]:
        """The batches (indices into `lengths`, a multiple of `unit` of them) in step order."""
        return cut_window(
            lengths, self.batch_size, self.budget, self.multiple, self.world_size, seed
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Batching:
        def number(key: str) -> int | None:
            return None if data[key] is None else int(data[key])

        return cls(
            int(data["world_size"]),
            number("batch_size"),
            number("budget"),
            int(data["window"]),
            int(data["multiple"]),
        )


@dataclass(frozen=True)
class Window(buckets.Window):
    """The window of `epoch` starting at position `number` (`start`; the next starts at
    `end`), as the current layout reads it: `positions` its clips still to batch, `batches`
    indices into them in step order (batch s x world_size + r is rank r's of step s)."""

    epoch: int = 0
    end: int = 0

    @property
    def start(self) -> int:
        return self.number

    def taken(self, steps: int) -> np.ndarray:
        """Epoch positions of the batches of the first `steps` steps (every rank's)."""
        chosen = self.batches[: steps * self.world_size]
        return self.positions[np.concatenate(chosen)] if chosen else np.zeros(0, np.int64)


History = tuple[tuple[Batching, int], ...]  # earlier layouts and the steps each took


def plan_window(
    epoch: int,
    start: int,
    history: History,
    batching: Batching,
    length: int,
    lengths: Lengths,
    seed: int,
) -> Window:
    """The window of `epoch` (of `length` positions) at `start`, opened by the first layout
    of `history` (else `batching`), with what each earlier layout took removed, batched by
    `batching`."""
    opener = history[0][0] if history else batching
    end = min(start + opener.window_size, length)
    left = np.arange(start, max(start, end), dtype=np.int64)  # not taken by a step yet
    layouts = [*history, (batching, None)]
    for depth, (layout, steps) in enumerate(layouts):
        positions = left[: len(left) // layout.unit * layout.unit]
        window_seed = [seed, stable_key("audio-bucketing"), epoch, start, depth]
        found = lengths(positions)
        batches = layout.cut(found, window_seed)
        window = Window(start, positions, found, batches, layout.world_size, epoch, end)
        if steps is not None:
            left = np.setdiff1d(left, window.taken(steps), assume_unique=True)
    return window


def check_budget(frames: np.ndarray, budget: int, multiple: int) -> int:
    """The index of the longest clip when it does not fit a batch of `budget` padded frames
    (rounded up to `multiple`), else -1.

    Example:
        >>> check_budget(np.array([5, 30, 12]), budget=24, multiple=8), check_budget(
        ...     np.array([5, 12]), budget=24, multiple=8)
        (1, -1)
    """
    if len(frames) == 0:
        return -1
    longest = int(np.argmax(frames))
    return longest if int(padded(frames[longest : longest + 1], multiple)[0]) > budget else -1
