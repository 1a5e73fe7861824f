"""Applying a stage to a batch, and sending each document where the stage's result says.

A stage returns a `Document` (kept, maybe changed) or a `Drop` (excluded, with a reason).
Anything else is a stage error: an exception raised by the stage's own code, or a result
of another type. A stage error is a bug in the stage, not a bad record, so it is not
quarantined: the document goes to `_errors/` with the exception and its traceback, is
counted as `errored`, and the run fails unless `max_stage_errors` allows that many.

When a batch raises, the stage is applied again to one document at a time
(`apply_batch([doc])`), so only the documents it fails on are errored.

Example:
    >>> kept = apply_stage(stage, batch, stats, sinks)  # doctest: +SKIP
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from mixplane.document import Document, Drop
from mixplane.error_text import without_addresses
from mixplane.process.sinks import Sinks
from mixplane.process.stats import count, count_errored
from mixplane.stages.base import Stage

# A traceback of a deep recursion runs to megabytes: keep its start and its end.
TRACEBACK_CHARS = 32 << 10


class StageFailure:
    """What a stage did instead of returning a Document or a Drop: the error in one line
    (its type and message) and the traceback, if it raised."""

    def __init__(self, kind: str, message: str, trace: str = ""):
        self.kind = kind
        # Without memory addresses, so two identical runs write identical `_errors/`.
        self.error = without_addresses(" ".join(f"{kind}: {message}".split()))
        self.trace = without_addresses(trace)

    @classmethod
    def raised(cls, error: Exception) -> StageFailure:
        trace = "".join(traceback.format_exception(error))
        if len(trace) > TRACEBACK_CHARS:
            half = TRACEBACK_CHARS // 2
            trace = f"{trace[:half]}\n[... {len(trace) - 2 * half} characters ...]\n{trace[-half:]}"
        return cls(type(error).__name__, str(error), trace)

    @classmethod
    def returned(cls, result: Any) -> StageFailure:
        kind = type(result).__name__
        return cls("TypeError", f"stage returned {kind}, expected Document or Drop")


def apply_stage(stage: Stage, docs: list[Document], stats: dict[str, Any], sinks: Sinks) -> list:
    """The documents `stage` keeps of `docs`; the others are excluded or errored."""
    name = stage.stage_name()
    started = time.perf_counter()
    try:
        results = stage.apply_batch(docs)
        if len(results) != len(docs):
            raise RuntimeError(f"apply_batch returned {len(results)} results for {len(docs)}")
    except Exception:
        results = [_apply_one(stage, doc) for doc in docs]
    kept = sort_results(name, docs, results, stats, sinks)
    seconds = stats["seconds"]
    seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
    return kept


def _apply_one(stage: Stage, doc: Document) -> Any:
    try:
        results = stage.apply_batch([doc])
        if len(results) != 1:
            raise RuntimeError(f"apply_batch returned {len(results)} results for 1")
        return results[0]
    except Exception as error:
        return StageFailure.raised(error)


def sort_results(name: str, docs: list[Document], results: list, stats, sinks: Sinks) -> list:
    """Send each document where its stage's result says: kept, excluded or errored."""
    kept = []
    for doc, result in zip(docs, results, strict=True):
        if isinstance(result, Document):
            kept.append(result)
        elif isinstance(result, Drop):
            stats["excluded"] += 1
            count(stats["excluded_by"], name, result.reason)
            sinks.exclude(doc, name, result)
        else:
            if not isinstance(result, StageFailure):
                result = StageFailure.returned(result)
            count_errored(stats, name, result.kind, result.error)
            sinks.error(name, doc, result.error, result.trace)
    return kept
