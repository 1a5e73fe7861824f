"""Where a rank's stream stands: the live `Cursor` and the saved `LoaderState`.

The stream is a function of the mixture, the data and the weight changes, so resuming needs
only how far the stream was consumed and the weight changes made so far (and, for an
adaptive mixture, the state of its policy, which decides the changes still to come).
`consumed` counts the global positions that all ranks together have received (ranks
advance in step): every position below it was delivered to some rank's training loop, none
above it. Resuming with any world size or DataLoader worker count re-splits the stream from
there. An image-text loader saves the same state: its positions count across epochs
(epoch x epoch_length + position in the epoch), and it has no weight changes.

Example:
    >>> state = LoaderState(fingerprint="abc", consumed=96, weight_changes=[])
    >>> LoaderState.from_dict(state.to_dict()) == state
    True
    >>> cursor = Cursor(base=64, read=8, split=(4, 2, 4))
    >>> cursor.consumed
    96
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from mixplane.errors import ConfigError

STATE_FORMAT = "mixplane-loader"
STATE_VERSION = 2


@dataclass
class Cursor:
    """The live position of one reader of a rank's stream.

    From global position `base`, the rank's local indices are split as `split` says (world
    size, DataLoader workers, block); `read` is the next local index to hand out, and every
    local index below it has been handed out.
    """

    base: int = 0
    read: int = 0
    split: tuple[int, int, int] = (1, 1, 1)

    @property
    def consumed(self) -> int:
        """Global positions handed out by all ranks together."""
        return self.base + self.split[0] * self.read

    def resplit(self, split: tuple[int, int, int]) -> None:
        """Continue from everything consumed so far under another split."""
        if split != self.split:
            self.base, self.read, self.split = self.consumed, 0, split


@dataclass(frozen=True)
class LoaderState:
    fingerprint: str
    consumed: int = 0
    weight_changes: list[dict[str, Any]] = field(default_factory=list)
    policy: dict[str, Any] | None = None  # an adaptive mixture's policy state
    # The components in the spec's order, which decides the blend but not the fingerprint
    # (states saved before it was recorded have none).
    components: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "version": STATE_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Any) -> LoaderState:
        if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
            raise ConfigError(
                "not a mixplane loader state (expected a dict from MixtureDataset.state_dict())"
            )
        if data.get("version") != STATE_VERSION:
            raise ConfigError(
                f"loader state version {data.get('version')}; this mixplane reads version "
                f"{STATE_VERSION} (states of version 1 taken with DataLoader workers could be "
                "stale, so they are not converted; resume from a checkpoint saved by this "
                "version)"
            )
        try:
            consumed = int(data["consumed"])
            changes = [
                {"step": int(c["step"]), "weights": dict(c["weights"])}
                | ({"details": dict(c["details"])} if c.get("details") else {})
                for c in data["weight_changes"]
            ]
            policy = data.get("policy")
            if policy is not None and not isinstance(policy, dict):
                raise TypeError("policy must be a mapping")
            components = data.get("components")
            if components is not None:
                components = [str(name) for name in components]
            state = cls(str(data["fingerprint"]), consumed, changes, policy, components)
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigError(f"loader state is incomplete or malformed: {error}") from None
        if consumed < 0:
            raise ConfigError(f"loader state has a negative position ({consumed})")
        return state

    @classmethod
    def matching(
        cls, data: Any, fingerprint: str, components: list[str] | None = None
    ) -> LoaderState:
        """`from_dict`, refusing a state saved for another mixture or other data versions
        (or for the same components listed in another order, which blends them otherwise)."""
        state = cls.from_dict(dict(data) if isinstance(data, Mapping) else data)
        if None not in (state.components, components) and state.components != components:
            raise ConfigError(
                f"the loader state was saved for a mixture listing its components as "
                f"{state.components}; this one lists {components}, which blends them in "
                "another order: list them as the state's mixture did"
            )
        if state.fingerprint != fingerprint:
            raise ConfigError(
                "the loader state was saved for another mixture or other data versions "
                f"(state {state.fingerprint}, this loader {fingerprint}); resume with the "
                "same mixture spec and catalog versions"
            )
        return state
