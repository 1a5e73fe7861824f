"""The loader's resume state: a small JSON-friendly dict.

The stream is a function of the mixture, the data and the weight changes, so resuming needs
only how far the stream was consumed and the weight changes made so far. `consumed` is the
global count of positions read by all ranks together (ranks advance in step); `base`,
`layout` and `read` let a DataLoader worker continue exactly where it stopped when the
layout is unchanged. With any other layout the stream is re-split from `consumed`.

Example:
    >>> state = LoaderState(fingerprint="abc", consumed=96, base=64, read=8,
    ...                     layout=[4, 2, 4], weight_changes=[])
    >>> LoaderState.from_dict(state.to_dict()) == state
    True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from mixplane.errors import ConfigError

STATE_FORMAT = "mixplane-loader"
STATE_VERSION = 1


@dataclass(frozen=True)
class LoaderState:
    fingerprint: str
    consumed: int = 0
    base: int = 0
    read: int = 0  # local indices this rank (or worker) handed out since `base`
    layout: list[int] = field(default_factory=lambda: [1, 1, 1])  # world, workers, block
    weight_changes: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "version": STATE_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoaderState:
        if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
            raise ConfigError(
                "not a mixplane loader state (expected a dict from MixtureDataset.state_dict())"
            )
        if data.get("version") != STATE_VERSION:
            raise ConfigError(
                f"loader state version {data.get('version')}; this mixplane reads "
                f"version {STATE_VERSION}"
            )
        try:
            return cls(
                fingerprint=str(data["fingerprint"]),
                consumed=int(data["consumed"]),
                base=int(data["base"]),
                read=int(data["read"]),
                layout=[int(v) for v in data["layout"]],
                weight_changes=[
                    {"step": int(c["step"]), "weights": dict(c["weights"])}
                    for c in data["weight_changes"]
                ],
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigError(f"loader state is incomplete or malformed: {error}") from None


def merge_states(states: list[dict[str, Any]]) -> dict[str, Any]:
    """One state from several DataLoader workers' states (the furthest one wins).

    With in-order delivery, the worker that handed out the latest batch has the highest
    `consumed`, and everything before it was delivered. Weight changes are merged by step.

    Example:
        >>> a = LoaderState("f", consumed=40, layout=[1, 2, 4]).to_dict()
        >>> b = LoaderState("f", consumed=36, layout=[1, 2, 4]).to_dict()
        >>> merge_states([a, b])["consumed"]
        40
    """
    parsed = [LoaderState.from_dict(s) for s in states]
    if not parsed:
        raise ConfigError("no loader states to merge")
    if len({s.fingerprint for s in parsed}) != 1:
        raise ConfigError("loader states come from different mixtures or data")
    furthest = max(parsed, key=lambda s: s.consumed)
    changes: dict[int, dict[str, Any]] = {}
    for state in parsed:
        for change in state.weight_changes:
            changes[change["step"]] = change
    merged = LoaderState(
        furthest.fingerprint,
        consumed=furthest.consumed,
        base=furthest.consumed,
        read=0,
        layout=[0, 0, 0],
        weight_changes=[changes[step] for step in sorted(changes)],
    )
    return merged.to_dict()
