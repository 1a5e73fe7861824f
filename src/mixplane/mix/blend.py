"""The blend: which component fills each global sequence position, as a pure function.

Weights hold over segments of positions. A segment starts at a weight change (a schedule
entry or `set_weights`) or where a component reaches its epoch cap (it is dropped and the rest
renormalized, or the stream ends). Inside a segment every prefix counted from the segment's
start holds each component within one sequence of its share (see `quota`). Finding the
component of position p and its running index within that component is O(log segments).

Example:
    >>> blend = Blend([(0, np.array([0.5, 0.3, 0.2]))])
    >>> components, indices = blend.lookup(np.arange(10))
    >>> components.tolist()
    [0, 1, 0, 2, 0, 1, 0, 1, 0, 2]
    >>> indices.tolist()
    [0, 0, 1, 0, 2, 1, 3, 2, 4, 1]
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mixplane.mix.split import PeriodSplit, TreeSplit, make_split

NO_CAP = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Segment:
    """Positions [start, end) blended by `split` in the proportions of `weights`."""

    start: int
    end: int | None  # None: runs forever
    weights: np.ndarray  # requested, after dropping exhausted components, normalized
    split: PeriodSplit | TreeSplit
    offsets: np.ndarray  # sequences each component used before `start`

    def picks(self, length: int) -> np.ndarray:
        """Sequences each component takes in the first `length` positions of the segment."""
        return self.split.counts(length)


class Blend:
    """Segments of exact-prefix interleaving over a history of weight switches.

    `switches` are `(position, weights)` pairs, the first at position 0. `caps` limits each
    component to that many sequences (`NO_CAP` for none); at its cap a component is dropped, or
    when `stop` is set for it the whole stream ends. `reuse` is a blend of the same mixture
    with earlier switches: its segments that end before the first switch that differs are
    taken as they are (an adaptive mixture adds a switch at a time).
    """

    def __init__(
        self,
        switches: Sequence[tuple[int, np.ndarray]],
        caps: np.ndarray | None = None,
        stop: np.ndarray | None = None,
        resolution: int = 1 << 16,
        reuse: Blend | None = None,
    ):
        if not switches or switches[0][0] != 0:
            raise ValueError("the first weight switch must be at position 0")
        positions = [int(p) for p, _ in switches]
        if positions != sorted(set(positions)):
            raise ValueError(f"switch positions must be increasing, got {positions}")
        k = len(switches[0][1])
        self.switches = [(int(p), np.asarray(w, dtype=np.float64)) for p, w in switches]
        self.caps = np.full(k, NO_CAP, dtype=np.int64) if caps is None else np.asarray(caps)
        self.stop = np.zeros(k, dtype=bool) if stop is None else np.asarray(stop, dtype=bool)
        self.resolution = resolution
        self.segments: list[Segment] = []
        self.length: int | None = None  # positions in the stream; None: endless
        self.exhausted: dict[int, int] = {}  # component -> position where it ran out
        self._build(reuse)

    @property
    def n_components(self) -> int:
        return len(self.caps)

    def _build(self, reuse: Blend | None) -> None:
        position, switch = 0, 0
        offsets = np.zeros(self.n_components, dtype=np.int64)
        dropped = np.zeros(self.n_components, dtype=bool)
        kept = self._unchanged_segments(reuse) if reuse is not None else []
        if kept:
            last = kept[-1]
            self.segments = kept
            position = int(last.end)
            self.exhausted = {c: at for c, at in reuse.exhausted.items() if at <= position}
            if reuse.length is not None and reuse.length <= position:
                self.length = reuse.length
                return
            offsets = last.offsets + last.split.counts(position - last.start)
            dropped[list(self.exhausted)] = True
            switch = bisect.bisect_right([p for p, _ in self.switches], position) - 1
        while True:
            weights = np.where(dropped, 0.0, self.switches[switch][1])
            if weights.sum() <= 0:
                self.length = position
                return
            weights = weights / weights.sum()
            split = make_split(weights, self.resolution)
            following = self.switches[switch + 1][0] if switch + 1 < len(self.switches) else None
            runs_out = self._exhaustion(position, weights, split, offsets)
            ends = [e for e in (following, min(runs_out.values(), default=None)) if e is not None]
            end = min(ends) if ends else None
            self.segments.append(Segment(position, end, weights, split, offsets.copy()))
            if end is None:
                return
            offsets = offsets + split.counts(end - position)
            position = end
            for c, at in runs_out.items():
                if at == end:
                    self.exhausted[c] = end
                    dropped[c] = True
                    if self.stop[c]:
                        self.length = end
                        return
            if following == end:
                switch += 1

    def _unchanged_segments(self, reuse: Blend) -> list[Segment]:
        """`reuse`'s segments that end before the first switch that differs from this one's."""
        same_setting = (
            reuse.n_components == self.n_components
            and reuse.resolution == self.resolution
            and np.array_equal(reuse.caps, self.caps)
            and np.array_equal(reuse.stop, self.stop)
        )
        if not same_setting:
            return []
        changed = None
        for index in range(max(len(reuse.switches), len(self.switches))):
            old = reuse.switches[index] if index < len(reuse.switches) else None
            new = self.switches[index] if index < len(self.switches) else None
            if old is None or new is None or old[0] != new[0] or not np.array_equal(old[1], new[1]):
                changed = min(s[0] for s in (old, new) if s is not None)
                break
        return [
            s for s in reuse.segments if s.end is not None and (changed is None or s.end <= changed)
        ]

    def _exhaustion(
        self, start: int, weights: np.ndarray, split: PeriodSplit | TreeSplit, offsets: np.ndarray
    ) -> dict[int, int]:
        """Position where each capped component would need a sequence beyond its cap."""
        runs_out = {}
        for c in np.flatnonzero((self.caps < NO_CAP) & (weights > 0)):
            left = int(self.caps[c] - offsets[c])
            at = start + split.position_of_pick(int(c), left)
            # A weight of a few 1e-308 puts it past any position a stream can hold: never.
            if at < NO_CAP:
                runs_out[int(c)] = at
        return runs_out

    def segment_index(self, positions: np.ndarray) -> np.ndarray:
        starts = np.fromiter((s.start for s in self.segments), dtype=np.int64)
        return np.searchsorted(starts, positions, side="right") - 1

    def lookup(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`(component, index within component)` for each global position (vectorized)."""
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size and (positions.min() < 0 or not self.contains(int(positions.max()))):
            raise IndexError(f"positions outside the stream of {self.length} sequences")
        components = np.empty(positions.shape, dtype=np.int32)
        indices = np.empty(positions.shape, dtype=np.int64)
        which = self.segment_index(positions)
        for s in np.unique(which):
            segment = self.segments[s]
            mask = which == s
            chosen, ranks = segment.split.lookup(positions[mask] - segment.start)
            components[mask] = chosen
            indices[mask] = segment.offsets[chosen] + ranks
        return components, indices

    def contains(self, position: int) -> bool:
        return self.length is None or position < self.length

    def counts_before(self, position: int) -> np.ndarray:
        """Sequences each component has filled in positions [0, position)."""
        if position <= 0:
            return np.zeros(self.n_components, dtype=np.int64)
        if self.length is not None:
            position = min(position, self.length)
        segment = self.segments[int(self.segment_index(np.array([position - 1]))[0])]
        return segment.offsets + segment.picks(position - segment.start)
