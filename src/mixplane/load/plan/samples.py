"""The sample plan: global position -> component -> sequence -> document pieces (pure).

It joins the blend (which component fills each position, under the schedule and weight
changes) with each component's packing (which document pieces make its k-th sequence).
Nothing here reads files: inputs are token counts per document, outputs are index arrays.

Example:
    >>> from mixplane.mix import MixtureSpec, MixtureTree
    >>> spec = MixtureSpec.parse({"seq_len": 4, "components": {
    ...     "a": {"weight": 0.5}, "b": {"weight": 0.5}}})
    >>> plan = SamplePlan(spec, MixtureTree(spec), [np.full(10, 3), np.full(10, 5)])
    >>> block = plan.block(np.arange(4))
    >>> block.components.tolist(), block.indices.tolist()
    ([0, 1, 0, 1], [0, 0, 1, 1])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.plan.packing import OrderStore, PackedComponent, Spans
from mixplane.mix.blend import NO_CAP, Blend
from mixplane.mix.spec import MixtureSpec
from mixplane.mix.tree import MixtureTree

# Components this large share their epoch orders through the plan cache (12 bytes a
# document an epoch, seconds to compute at 1e8). A smaller one's order costs milliseconds
# and little memory, while a block may span hundreds of its epochs: files for each would
# cost far more than they save.
SHARED_ORDERS_FROM = 1 << 20


@dataclass(frozen=True)
class Block:
    """A block of positions: their components, sequence indices and document pieces.

    `spans.row` indexes the block's positions; the pieces are grouped by component, and
    `groups` lists `(component, first piece, end)` for each group (`spans.document` is
    local to that component). Within a group pieces are ordered by row, then column.
    """

    positions: np.ndarray
    components: np.ndarray
    indices: np.ndarray
    spans: Spans
    groups: list[tuple[int, int, int]]

    @property
    def span_component(self) -> np.ndarray:
        """The component of each piece."""
        out = np.empty(len(self.spans), dtype=np.int32)
        for component, lo, hi in self.groups:
            out[lo:hi] = component
        return out


class SamplePlan:
    """The whole stream of a mixture as a function of position.

    `lengths[c]` holds the token count of every document of leaf c (EOS included when one is
    appended); with a `shuffle_window`, `runs[c]` gives the shards of its documents as
    (shard, documents) of each run of consecutive documents. `weight_changes` are
    `{"step": s, "weights": {...}}` made by `set_weights`. With `orders` (the plan cache's
    `EpochOrders`), the epoch orders of components of `SHARED_ORDERS_FROM` documents or more
    are kept on disk and memory-mapped; smaller ones are computed in memory.
    """

    def __init__(
        self,
        spec: MixtureSpec,
        tree: MixtureTree,
        lengths: Sequence[np.ndarray],
        weight_changes: Sequence[Mapping[str, Any]] = (),
        runs: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
        orders: OrderStore | None = None,
    ):
        if len(lengths) != len(tree.leaves):
            raise ValueError(f"expected {len(tree.leaves)} components, got {len(lengths)}")
        self.spec = spec
        self.tree = tree
        self.components = [
            PackedComponent(
                lengths[c],
                spec.seq_len,
                spec.seed,
                leaf.name,
                overlap=int(spec.shifted_labels),
                runs=runs[c] if runs is not None else None,
                window=spec.shuffle_window,
                orders=orders if len(lengths[c]) >= SHARED_ORDERS_FROM else None,
            )
            for c, leaf in enumerate(tree.leaves)
        ]
        self.leaf_tokens = np.array([p.total_tokens for p in self.components], dtype=np.float64)
        self.caps = np.array(
            [_cap(leaf.max_epochs, p.sequences_per_epoch) for leaf, p in self._pairs()],
            dtype=np.int64,
        )
        self.stop = np.array([leaf.on_exhausted == "stop" for leaf in tree.leaves])
        self.weight_changes: list[dict[str, Any]] = []
        self.replace_weight_changes(weight_changes)

    def _pairs(self):
        return zip(self.tree.leaves, self.components, strict=True)

    @property
    def names(self) -> list[str]:
        return self.tree.names

    @property
    def length(self) -> int | None:
        """Positions in the stream (None: endless)."""
        return self.blend.length

    def _record(
        self, step: int, weights: Mapping[str, float], details: Mapping[str, Any] | None
    ) -> None:
        step = int(step)
        if step < 0:
            raise ConfigError(f"set_weights: step must be >= 0, got {step}")
        weights = {str(k): float(v) for k, v in weights.items()}
        self.tree.check_overrides(weights, where=f"set_weights at step {step}")
        change: dict[str, Any] = {"step": step, "weights": weights}
        if details:
            change["details"] = dict(details)
        self.weight_changes = [c for c in self.weight_changes if c["step"] != step]
        self.weight_changes.append(change)
        self.weight_changes.sort(key=lambda c: c["step"])

    def set_weights(
        self, step: int, weights: Mapping[str, float], details: Mapping[str, Any] | None = None
    ) -> None:
        """From `step` on, these sibling weights hold (recorded with `details`, such as what
        an adaptive policy decided them from; the blend is rebuilt)."""
        self._record(step, weights, details)
        self.blend = self._make_blend()

    def replace_weight_changes(self, changes: Sequence[Mapping[str, Any]]) -> None:
        """Use exactly these weight changes (as saved in a loader state)."""
        self.weight_changes = []
        for change in changes:
            self._record(change["step"], change["weights"], change.get("details"))
        self.blend = self._make_blend()

    def switches(self) -> list[tuple[int, np.ndarray]]:
        """`(position, leaf weights)` at each point where the weights change."""
        entries = [(e.step, 0, e.weights) for e in self.spec.schedule]
        entries += [(c["step"], 1, c["weights"]) for c in self.weight_changes]
        batch = self.spec.sequences_per_step("weight changes") if entries else 1
        overrides: dict[str, float] = {}
        switches = [(0, self.tree.leaf_weights(self.leaf_tokens))]
        for step, _, weights in sorted(entries, key=lambda e: (e[0], e[1])):
            overrides.update(weights)
            leaf = self.tree.leaf_weights(self.leaf_tokens, overrides)
            position = step * batch
            if switches[-1][0] == position:
                switches[-1] = (position, leaf)
            elif not np.array_equal(switches[-1][1], leaf):
                switches.append((position, leaf))
        return switches

    def _make_blend(self) -> Blend:
        # The segments before the first changed switch are kept from the current blend.
        current = self.__dict__.get("blend")
        return Blend(
            self.switches(), self.caps, self.stop, self.spec.weight_resolution, reuse=current
        )

    def block(self, positions: np.ndarray) -> Block:
        """Everything needed to read the sequences at `positions`."""
        positions = np.asarray(positions, dtype=np.int64)
        components, indices = self.blend.lookup(positions)
        parts, groups, count = [], [], 0
        for c in np.unique(components).tolist():
            rows = np.flatnonzero(components == c)
            spans = self.components[c].spans(indices[rows], rows)
            parts.append(spans)
            groups.append((c, count, count + len(spans)))
            count += len(spans)
        spans = Spans.concatenate(parts) if parts else _no_spans()
        return Block(positions, components, indices, spans, groups)

    def epochs_at(self, position: int) -> np.ndarray:
        """Epochs each component has gone through by `position` (fractional)."""
        counts = self.blend.counts_before(position)
        per_epoch = np.array([p.sequences_per_epoch for p in self.components], dtype=np.float64)
        return counts / per_epoch


def _cap(max_epochs: float | None, per_epoch: int) -> int:
    """Sequences a component may give: `max_epochs` passes, none past int64 (a cap of 1e300
    epochs is no cap, not an overflow)."""
    if max_epochs is None:
        return NO_CAP
    cap = max_epochs * per_epoch
    return NO_CAP if cap >= NO_CAP else math.floor(cap)


def _no_spans() -> Spans:
    empty = np.zeros(0, dtype=np.int64)
    return Spans(*[empty] * len(Spans.FIELDS))
