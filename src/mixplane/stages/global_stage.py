"""Global stages: steps that must see the whole corpus before deciding about one document.

A global stage works in three phases, each crash-safe and independent of parallelism:

1. `collector(...)`: per task, in parallel, it sees the documents that reach it and writes
   what it needs (hashes, signatures) into its work folder.
2. `merge(...)`: once, after every task has collected, it combines the task files (it may
   fan work out through `MergeRun.map`) and writes a decision file per task.
3. `decider(...)`: per task, in parallel, it sees the same documents again, in the same
   order, and keeps each (possibly with new metadata) or drops it with a reason.

How a pipeline schedules the phases is `mixplane.process`'s business (`process.segment_plan`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mixplane.document import Document, Drop
from mixplane.io.atomic import join_url
from mixplane.stages.base import Result, Stage


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


class MergeRun(Protocol):
    """What a merge may use: the run's executor and an id naming this output and config
    (stable across reruns, e.g. to name what the run adds to a persistent index)."""

    run_id: str

    def map(self, function: Callable[..., Any], items: list[Any], context: Any) -> list[Any]:
        """Run `function(item, context)` for every item on the run's executor, in order."""
        ...


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
