"""Where an unpacked loader stands: a window of the document stream and a step in it.

Batches are planned per window of documents, counted from `base` (see `plan.buckets`);
`window` and `step` say which step every rank receives next. A bucketed window's steps
depend on the world size, so a state resumes mid-window only with the world size it was
saved with; at a window's start (`step == 0`), or with fixed batches anywhere, another
world size starts its own windows from the first document not yet received.

Example:
    >>> state = UnpackedState("abc", world_size=2, batch_size=None, base=0, window=3, step=1)
    >>> UnpackedState.from_dict(state.to_dict()) == state
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from mixplane.errors import ConfigError

STATE_FORMAT = "mixplane-unpacked-loader"
STATE_VERSION = 1


@dataclass
class StepCursor:
    """The next step to hand out: step `step` of window `window` counted from `base`."""

    base: int = 0
    window: int = 0
    step: int = 0


@dataclass(frozen=True)
class UnpackedState:
    fingerprint: str
    world_size: int
    batch_size: int | None  # None: bucketed by a token budget
    base: int
    window: int
    step: int

    def to_dict(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "version": STATE_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Any) -> UnpackedState:
        if not isinstance(data, Mapping) or data.get("format") != STATE_FORMAT:
            raise ConfigError(
                "not an unpacked loader state (expected a dict from UnpackedDataset.state_dict())"
            )
        if data.get("version") != STATE_VERSION:
            raise ConfigError(
                f"unpacked loader state version {data.get('version')}; this mixplane reads "
                f"version {STATE_VERSION}"
            )
        try:
            batch_size = data["batch_size"]
            state = cls(
                str(data["fingerprint"]),
                int(data["world_size"]),
                None if batch_size is None else int(batch_size),
                int(data["base"]),
                int(data["window"]),
                int(data["step"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigError(f"loader state is incomplete or malformed: {error}") from None
        if min(state.base, state.window, state.step) < 0 or state.world_size < 1:
            raise ConfigError(f"loader state has a negative position or world size: {state}")
        return state
