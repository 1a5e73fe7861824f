"""Where an audio loader stands: the window of an epoch and the step in it that every rank
receives next, and the layouts that read that window before (see `audio.plan`).

Resuming with the layout the state was saved with continues at the same step. Another layout
(world size, batch size or budget, window) continues from the first clip not yet received
when the clips received are a prefix of the window (at a window's start, or with a fixed
batch size): it opens its own windows from there. Otherwise (in the middle of a bucketed
window) the state's layout joins the cursor's `history`: the new layout batches the window's
clips that no step took, then opens its own windows after it. Nothing is received twice;
fewer than one unit of the new layout (world size, or world size x batch size) of the
window's remaining clips is left out of the epoch, to give every rank the same batches.

Example:
    >>> cursor = AudioCursor(epoch=1, start=4096, step=3)
    >>> batching = Batching(world_size=2, batch_size=None, budget=480000, window=4096)
    >>> state = AudioState("abc", cursor, batching)
    >>> AudioState.from_dict(state.to_dict()) == state
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.audio.plan import Batching, History, Window

# (epoch, start, history, layout) -> that window as the layout reads it (`plan_window`).
Planner = Callable[[int, int, History, Batching], Window]

STATE_FORMAT = "mixplane-audio-loader"
STATE_VERSION = 1


@dataclass(frozen=True)
class AudioCursor:
    """The next step to hand out: step `step` of the window at position `start` of `epoch`,
    which the layouts of `history` read before this one."""

    epoch: int = 0
    start: int = 0
    step: int = 0
    history: History = ()


@dataclass(frozen=True)
class AudioState:
    fingerprint: str
    cursor: AudioCursor
    batching: Batching  # the layout that saved it

    def to_dict(self) -> dict[str, Any]:
        cursor = self.cursor
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "fingerprint": self.fingerprint,
            "epoch": cursor.epoch,
            "start": cursor.start,
            "step": cursor.step,
            "history": [[layout.to_dict(), steps] for layout, steps in cursor.history],
            "batching": self.batching.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> AudioState:
        if not isinstance(data, Mapping) or data.get("format") != STATE_FORMAT:
            raise ConfigError(
                "not an audio loader state (expected a dict from AudioTextDataset.state_dict())"
            )
        if data.get("version") != STATE_VERSION:
            raise ConfigError(
                f"audio loader state version {data.get('version')}; this mixplane reads "
                f"version {STATE_VERSION}"
            )
        try:
            history = tuple(
                (Batching.from_dict(layout), int(steps)) for layout, steps in data["history"]
            )
            cursor = AudioCursor(int(data["epoch"]), int(data["start"]), int(data["step"]), history)
            state = cls(str(data["fingerprint"]), cursor, Batching.from_dict(data["batching"]))
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigError(f"audio loader state is incomplete or malformed: {error!r}") from None
        layouts = [state.batching, *(layout for layout, _ in history)]
        if min(cursor.epoch, cursor.start, cursor.step, *(s for _, s in history)) < 0 or any(
            layout.world_size < 1 or layout.window < 1 for layout in layouts
        ):
            raise ConfigError(f"audio loader state has a negative position or size: {data}")
        return state


def epoch_steps(
    cursor: AudioCursor, batching: Batching, length: int, plan: Planner
) -> Iterator[tuple[Window, int]]:
    """Every (window, step) from `cursor` to the end of its epoch of `length` positions."""
    start, step, history = cursor.start, cursor.step, cursor.history
    while history or length - start >= batching.unit:
        window = plan(cursor.epoch, start, history, batching)
        for s in range(step, window.steps):
            yield window, s
        start, step, history = window.end, 0, ()


def after_window(window: Window, batching: Batching, length: int) -> AudioCursor:
    """The cursor after the whole of `window`: the next window holding a step of
    `batching`, else the next epoch."""
    if length - window.end >= batching.unit:
        return AudioCursor(window.epoch, window.end)
    return AudioCursor(window.epoch + 1)


def advanced(cursor: AudioCursor, window: Window, batching: Batching, length: int) -> AudioCursor:
    """The cursor after step `cursor.step` of `window` was received."""
    if cursor.step + 1 < window.steps:
        return AudioCursor(window.epoch, window.start, cursor.step + 1, cursor.history)
    return after_window(window, batching, length)


def carried_over(loaded: AudioState, batching: Batching, length: int, plan: Planner) -> AudioCursor:
    """`batching`'s cursor for a state saved by another layout (see the module's note)."""
    cursor, saved = loaded.cursor, loaded.batching
    if saved == batching:
        return cursor
    if cursor.step == 0 and not cursor.history:
        if length - cursor.start < batching.unit:
            return AudioCursor(cursor.epoch + 1)
        return AudioCursor(cursor.epoch, cursor.start)
    window = plan(cursor.epoch, cursor.start, cursor.history, saved)
    if not cursor.history:
        left = np.setdiff1d(np.arange(cursor.start, window.end), window.taken(cursor.step))
        if len(left) == 0 or int(left[-1]) - int(left[0]) + 1 == len(left):
            # The clips received are the window's first ones: a clean cut.
            start = int(left[0]) if len(left) else window.end
            if length - start < batching.unit:
                return AudioCursor(cursor.epoch + 1)
            return AudioCursor(cursor.epoch, start)
    history = (*cursor.history, (saved, cursor.step))
    rest = plan(cursor.epoch, cursor.start, history, batching)
    if rest.steps:
        return AudioCursor(cursor.epoch, cursor.start, 0, history)
    return after_window(rest, batching, length)
