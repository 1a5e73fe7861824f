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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mixplane.errors import ConfigError
from mixplane.load.audio.plan import Batching, History

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
