"""Per-task statistics and their merge into `_stats.json`.

The invariant every run keeps: documents in = kept + excluded + quarantined + errored
(`errored`: records a stage's own code raised an exception on). Blank lines of JSON Lines
hold no record; they are counted apart (`skipped_blank`), so the lines of the inputs add up
to documents in + skipped_blank.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

SUMMED = (
    "documents_in",
    "kept",
    "excluded",
    "quarantined",
    "errored",
    "skipped_blank",
    "bytes_in",
    "text_bytes_out",
)
# Enough of an error to show what went wrong (say, which fields a record had instead).
EXAMPLE_CHARS = 300


def new_task_stats() -> dict[str, Any]:
    return {
        "documents_in": 0,
        "kept": 0,
        "excluded": 0,
        "quarantined": 0,
        "errored": 0,
        "skipped_blank": 0,
        "bytes_in": 0,
        "text_bytes_out": 0,
        "excluded_by": {},
        "quarantined_by": {},
        "quarantine_examples": {},
        "errored_by": {},
        "error_examples": {},
        "seconds": {},
        "files": {},  # per input file: records read and quarantined reading it
    }


def new_file_stats() -> dict[str, Any]:
    """What a task records of each file it read (a task may read several)."""
    return {"documents_in": 0, "quarantined": 0, "quarantined_by": {}, "quarantine_examples": {}}


def count(table: dict[str, dict[str, int]], stage: str, reason: str, n: int = 1) -> None:
    by_stage = table.setdefault(stage, {})
    by_stage[reason] = by_stage.get(reason, 0) + n


def count_quarantined(stats: dict[str, Any], stage: str, reason: str, error: str) -> None:
    """Count one quarantined record; the first error of each reason is kept as its example."""
    stats["quarantined"] += 1
    count(stats["quarantined_by"], stage, reason)
    add_example(stats["quarantine_examples"], stage, reason, error[:EXAMPLE_CHARS])


def count_errored(stats: dict[str, Any], stage: str, kind: str, error: str) -> None:
    """Count one record a stage raised on; the first error of each exception type is kept."""
    stats["errored"] += 1
    count(stats["errored_by"], stage, kind)
    add_example(stats["error_examples"], stage, kind, error[:EXAMPLE_CHARS])


def add_example(table: dict[str, dict[str, str]], stage: str, reason: str, error: str) -> None:
    table.setdefault(stage, {}).setdefault(reason, error)


def merge_examples(
    target: dict[str, dict[str, str]], stats: dict[str, Any], key: str = "quarantine_examples"
) -> None:
    """Keep the first example of each reason, in task order (so the result is deterministic)."""
    for stage, reasons in stats.get(key, {}).items():
        for reason, error in reasons.items():
            add_example(target, stage, reason, error)


def add_counts(target: dict[str, dict[str, int]], table: dict[str, dict[str, int]]) -> None:
    """Add counts by stage and reason into `target`."""
    for stage, reasons in table.items():
        for reason, n in reasons.items():
            count(target, stage, reason, n)


def sorted_counts(table: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {stage: dict(sorted(reasons.items())) for stage, reasons in table.items()}


def merge_stats(task_stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum task statistics; raises if any task's documents do not balance."""
    totals: Counter = Counter()
    tables: dict[str, dict[str, dict[str, int]]] = {key: {} for key in COUNTED_BY}
    examples: dict[str, dict[str, dict[str, str]]] = {key: {} for key in EXAMPLES}
    seconds: Counter = Counter()
    for stats in task_stats:
        check_balance(stats)
        for key in SUMMED:
            totals[key] += stats.get(key, 0)  # markers of older runs lack newer counters
        for key in COUNTED_BY:
            add_counts(tables[key], stats.get(key, {}))
        for key in EXAMPLES:
            merge_examples(examples[key], stats, key)
        seconds.update(stats["seconds"])
    merged = dict(totals) | {"tasks": len(task_stats)}
    for key in SUMMED:
        merged.setdefault(key, 0)
    for key in COUNTED_BY:
        merged[key] = sorted_counts(tables[key])
    for key in EXAMPLES:
        merged[key] = sorted_counts(examples[key])
    merged["seconds"] = {stage: round(value, 3) for stage, value in seconds.items()}
    return merged


# Counts by stage and reason (for errors: by exception type), and their first examples.
COUNTED_BY = ("excluded_by", "quarantined_by", "errored_by")
EXAMPLES = ("quarantine_examples", "error_examples")


def check_balance(stats: dict[str, Any]) -> None:
    accounted = stats["kept"] + stats["excluded"] + stats["quarantined"] + stats.get("errored", 0)
    if stats["documents_in"] != accounted:
        raise AssertionError(
            f"statistics do not balance: in={stats['documents_in']} but "
            f"kept+excluded+quarantined+errored={accounted}"
        )
