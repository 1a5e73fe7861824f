"""Per-task statistics and their merge into `_stats.json`.

The invariant every run keeps: documents in = kept + excluded + quarantined.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any


def new_task_stats() -> dict[str, Any]:
    return {
        "documents_in": 0,
        "kept": 0,
        "excluded": 0,
        "quarantined": 0,
        "bytes_in": 0,
        "text_bytes_out": 0,
        "excluded_by": {},
        "quarantined_by": {},
        "seconds": {},
    }


def count(table: dict[str, dict[str, int]], stage: str, reason: str, n: int = 1) -> None:
    by_stage = table.setdefault(stage, {})
    by_stage[reason] = by_stage.get(reason, 0) + n


def merge_stats(task_stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum task statistics; raises if any task's documents do not balance."""
    totals: Counter = Counter()
    excluded: dict[str, Counter] = defaultdict(Counter)
    quarantined: dict[str, Counter] = defaultdict(Counter)
    seconds: Counter = Counter()
    for stats in task_stats:
        check_balance(stats)
        for key in (
            "documents_in",
            "kept",
            "excluded",
            "quarantined",
            "bytes_in",
            "text_bytes_out",
        ):
            totals[key] += stats[key]
        for stage, reasons in stats["excluded_by"].items():
            excluded[stage].update(reasons)
        for stage, reasons in stats["quarantined_by"].items():
            quarantined[stage].update(reasons)
        seconds.update(stats["seconds"])
    merged = dict(totals) | {"tasks": len(task_stats)}
    for key in ("documents_in", "kept", "excluded", "quarantined", "bytes_in", "text_bytes_out"):
        merged.setdefault(key, 0)
    merged["excluded_by"] = {stage: dict(sorted(r.items())) for stage, r in excluded.items()}
    merged["quarantined_by"] = {stage: dict(sorted(r.items())) for stage, r in quarantined.items()}
    merged["seconds"] = {stage: round(value, 3) for stage, value in seconds.items()}
    return merged


def check_balance(stats: dict[str, Any]) -> None:
    accounted = stats["kept"] + stats["excluded"] + stats["quarantined"]
    if stats["documents_in"] != accounted:
        raise AssertionError(
            f"statistics do not balance: in={stats['documents_in']} but "
            f"kept+excluded+quarantined={accounted}"
        )
