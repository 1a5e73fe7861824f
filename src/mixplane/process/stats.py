"""Per-task statistics and their merge into `_stats.json`.

The invariant every run keeps: documents in = kept + excluded + quarantined. Blank lines of
JSON Lines hold no record; they are counted apart (`skipped_blank`), so the lines of the
inputs add up to documents in + skipped_blank.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

SUMMED = (
    "documents_in",
    "kept",
    "excluded",
    "quarantined",
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
        "skipped_blank": 0,
        "bytes_in": 0,
        "text_bytes_out": 0,
        "excluded_by": {},
        "quarantined_by": {},
        "quarantine_examples": {},
        "seconds": {},
    }


def count(table: dict[str, dict[str, int]], stage: str, reason: str, n: int = 1) -> None:
    by_stage = table.setdefault(stage, {})
    by_stage[reason] = by_stage.get(reason, 0) + n


def count_quarantined(stats: dict[str, Any], stage: str, reason: str, error: str) -> None:
    """Count one quarantined record; the first error of each reason is kept as its example."""
    stats["quarantined"] += 1
    count(stats["quarantined_by"], stage, reason)
    add_example(stats["quarantine_examples"], stage, reason, error[:EXAMPLE_CHARS])


def add_example(table: dict[str, dict[str, str]], stage: str, reason: str, error: str) -> None:
    table.setdefault(stage, {}).setdefault(reason, error)


def merge_examples(target: dict[str, dict[str, str]], stats: dict[str, Any]) -> None:
    """Keep the first example of each reason, in task order (so the result is deterministic)."""
    for stage, reasons in stats.get("quarantine_examples", {}).items():
        for reason, error in reasons.items():
            add_example(target, stage, reason, error)


def merge_stats(task_stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum task statistics; raises if any task's documents do not balance."""
    totals: Counter = Counter()
    excluded: dict[str, Counter] = defaultdict(Counter)
    quarantined: dict[str, Counter] = defaultdict(Counter)
    examples: dict[str, dict[str, str]] = {}
    seconds: Counter = Counter()
    for stats in task_stats:
        check_balance(stats)
        for key in SUMMED:
            totals[key] += stats.get(key, 0)  # markers of older runs lack newer counters
        for stage, reasons in stats["excluded_by"].items():
            excluded[stage].update(reasons)
        for stage, reasons in stats["quarantined_by"].items():
            quarantined[stage].update(reasons)
        merge_examples(examples, stats)
        seconds.update(stats["seconds"])
    merged = dict(totals) | {"tasks": len(task_stats)}
    for key in SUMMED:
        merged.setdefault(key, 0)
    merged["excluded_by"] = {stage: dict(sorted(r.items())) for stage, r in excluded.items()}
    merged["quarantined_by"] = {stage: dict(sorted(r.items())) for stage, r in quarantined.items()}
    merged["quarantine_examples"] = {
        stage: dict(sorted(r.items())) for stage, r in examples.items()
    }
    merged["seconds"] = {stage: round(value, 3) for stage, value in seconds.items()}
    return merged


def check_balance(stats: dict[str, Any]) -> None:
    accounted = stats["kept"] + stats["excluded"] + stats["quarantined"]
    if stats["documents_in"] != accounted:
        raise AssertionError(
            f"statistics do not balance: in={stats['documents_in']} but "
            f"kept+excluded+quarantined={accounted}"
        )
