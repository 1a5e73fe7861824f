"""Global stages: steps that must see the whole corpus before deciding about one document.

A global stage works in three phases, each crash-safe and independent of parallelism:

1. `collector(...)`: per task, in parallel, it sees the documents that reach it and writes
   what it needs (hashes, signatures) into its work folder.
2. `merge(...)`: once, after every task has collected, it combines the task files (it may
   fan work out through `MergeRun.map`) and writes a decision file per task.
3. `decider(...)`: per task, in parallel, it sees the same documents again, in the same
   order, and keeps each (possibly with new metadata) or drops it with a reason.

The pipeline cuts its stage list at global stages into segments (`plan_segments`). A
segment runs per task: it applies the decisions of the global stage that opens it, then its
ordinary stages, then feeds the collector of the global stage that closes it.

Example:
    >>> [s.collects for s in plan_segments([False, True, False])]
    [1, None]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mixplane.document import Document, Drop
from mixplane.io.atomic import join_url
from mixplane.process.executors import ExecutorSettings, execute
from mixplane.process.stage import Result, Stage


class Collector(Protocol):
    """Receives one task's documents, batch by batch, in a deterministic order."""

    def add(self, docs: list[Document]) -> None: ...

    def close(self) -> dict[str, Any]:
        """Write everything collected (atomically); return a small JSON-able summary."""
        ...


class Decider(Protocol):
    """Decides about one task's documents, seen in the same order as by its collector."""

    def decide(self, docs: list[Document]) -> list[Result]: ...


@dataclass(frozen=True)
class WorkArea:
    """A global stage's private folder under the output's `_work/`.

    Example:
        >>> WorkArea("out/_work/abc/stage-00-dedup").url("collect", "task-00000.npy")
        'out/_work/abc/stage-00-dedup/collect/task-00000.npy'
    """

    root: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def url(self, *parts: str) -> str:
        return join_url(self.root, *parts)


@dataclass(frozen=True)
class MergeRun:
    """What a merge may use: the run's executor and an id naming this output and config
    (stable across reruns, e.g. to name what the run adds to a persistent index)."""

    settings: ExecutorSettings
    run_id: str

    def map(self, function: Callable[..., Any], items: list[Any], context: Any) -> list[Any]:
        """Run `function(item, context)` for every item on the run's executor, in order."""
        return execute(function, items, context, self.settings)


class GlobalStage(Stage):
    """Base class of stages that need the whole corpus (see the module docstring).

    Subclasses implement `collector`, `merge` and `decider`. `apply` is not available: a
    global stage decides only inside a pipeline run.
    """

    def collector(self, work: WorkArea, task: int) -> Collector:
        raise TypeError(f"{type(self).__name__} must implement collector()")

    def merge(self, work: WorkArea, tasks: list[int], run: MergeRun) -> dict[str, Any]:
        """Combine all tasks' collected files; write per-task decisions; return a summary."""
        raise TypeError(f"{type(self).__name__} must implement merge()")

    def decider(self, work: WorkArea, task: int) -> Decider:
        raise TypeError(f"{type(self).__name__} must implement decider()")

    def apply(self, doc: Document) -> Document | Drop:
        raise TypeError(
            f"stage {self.stage_name()} sees the whole corpus; it runs only inside a pipeline"
        )


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
