"""How a pipeline runs its global stages: its stage list cut into segments.

The pipeline cuts its stage list at global stages (`mixplane.stages.global_stage`) into
segments (`plan_segments`). A segment runs per task: it applies the decisions of the global
stage that opens it, then its ordinary stages, then feeds the collector of the global stage
that closes it. A merge fans its work out on the run's executor (`ExecutorRun`).

Example:
    >>> [s.collects for s in plan_segments([False, True, False])]
    [1, None]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mixplane.process.executors import ExecutorSettings, execute


@dataclass(frozen=True)
class ExecutorRun:
    """A global stage's `MergeRun` on the pipeline's executor."""

    settings: ExecutorSettings
    run_id: str

    def map(self, function: Callable[..., Any], items: list[Any], context: Any) -> list[Any]:
        """Run `function(item, context)` for every item on the run's executor, in order."""
        return execute(function, items, context, self.settings)


@dataclass(frozen=True)
class Segment:
    """A run of ordinary stages between global stages, executed per task.

    `opens`: the global stage (index in the stage list) whose decisions start the segment;
    `stages`: its ordinary stages; `collects`: the global stage it feeds at its end.
    `source`: the earlier segment whose saved documents it reads (-1: the inputs), then
    `replays` are global stages whose decisions it re-applies silently (their drops are
    already recorded) to get back to the documents it must see. `saves`: it writes its kept
    documents for later segments, because re-running its stages would cost more.
    """

    index: int
    opens: int | None
    stages: tuple[int, ...]
    collects: int | None
    source: int
    replays: tuple[int, ...]
    saves: bool

    @property
    def final(self) -> bool:
        return self.collects is None


def plan_segments(is_global: list[bool]) -> list[Segment]:
    """Cut a stage list at its global stages; a pure function of which stages are global.

    Example:
        >>> [(s.opens, s.stages, s.collects, s.source, s.saves)
        ...  for s in plan_segments([False, True, True])]
        [(None, (0,), 1, -1, True), (1, (), 2, 0, False), (2, (), None, 0, False)]
    """
    cuts = [i for i, flag in enumerate(is_global) if flag]
    bounds = [-1, *cuts, len(is_global)]
    segments: list[Segment] = []
    last_saved = -1
    for number in range(len(bounds) - 1):
        start, stop = bounds[number], bounds[number + 1]
        opens = start if start >= 0 else None
        collects = stop if stop < len(is_global) else None
        stages = tuple(range(start + 1, stop))
        earlier = segments[last_saved + 1 : number]
        replays = tuple(s.opens for s in earlier if s.opens is not None)
        saves = collects is not None and bool(stages)
        segments.append(Segment(number, opens, stages, collects, last_saved, replays, saves))
        if saves:
            last_saved = number
    return segments
