"""Checks on what a finished run produced, beyond the statistics balancing.

A run whose records are nearly all quarantined for one reason is almost always a setup
mistake (the text lives under another key, the files are not JSON Lines) rather than bad
data, and a run that exits 0 hides it behind a summary table. So the run fails with one
line naming the input, the reason, the count and what to do, unless the config allows it.
Likewise a run in which a stage's code raised on more records than `max_stage_errors`.

Example:
    >>> mostly_quarantined(config, tasks, results)  # doctest: +SKIP
    "raw/a.jsonl: 1,000 of 1,000 records quarantined by read (record has no text field ..."
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from mixplane.process.config import PipelineConfig
from mixplane.process.stats import count, merge_examples
from mixplane.process.tasks import Task

# Nearly all: a few good records among thousands of bad ones do not make the input usable.
SHARE = 0.9
# A handful of bad records in a tiny file is data, not a setup mistake.
AT_LEAST = 10

_HINTS = (
    ("record has no text field", "set text_key on the input to the field holding the text"),
    ("text field", "set text_key on the input to a field whose records hold text"),
    ("invalid JSON", "check that the file is JSON Lines, or set format on the input"),
    ("JSON value is", "check that the file holds one JSON object per line"),
    ("invalid UTF-8", "convert the file to UTF-8"),
    ("record exceeds max_record_bytes", "raise max_record_bytes if such records are wanted"),
    ("unreadable Parquet", "check that the files are whole Parquet files, or set format"),
)


@dataclass
class _Tally:
    """Records read and quarantined (by stage and reason) for one file or one input."""

    name: str
    records: int = 0
    quarantined: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, stats: dict[str, Any]) -> None:
        self.records += stats["documents_in"]
        for stage, reasons in stats["quarantined_by"].items():
            for reason, n in reasons.items():
                count(self.quarantined, stage, reason, n)
        merge_examples(self.examples, stats)

    def worst(self) -> tuple[int, str, str]:
        """The most frequent (count, stage, reason); ties go to the first stage and reason."""
        found = [
            (-n, stage, reason) for stage, r in self.quarantined.items() for reason, n in r.items()
        ]
        if not found:
            return 0, "", ""
        n, stage, reason = min(found)
        return -n, stage, reason


def mostly_quarantined(
    config: PipelineConfig, tasks: list[Task], results: list[dict[str, Any]]
) -> str | None:
    """A one-line error for the first input file (counting the records that could not be
    read), or input taken as a whole (many small files add up; every stage counts), whose
    records were nearly all quarantined for one reason; else None."""
    by_task = {task.index: task for task in tasks}
    files: dict[str, _Tally] = {}
    inputs: dict[int, _Tally] = defaultdict(lambda: _Tally(""))
    for result in sorted(results, key=lambda r: r["task"]):
        task = by_task[result["task"]]
        for url, read in result["stats"]["files"].items():
            files.setdefault(url, _Tally(url)).add(read)
        tally = inputs[task.input_index]
        tally.name = tally.name or _input_name(config, task.input_index)
        tally.add(result["stats"])
    for tally in [*files.values(), *(inputs[i] for i in sorted(inputs))]:
        n, stage, reason = tally.worst()
        if n >= AT_LEAST and n >= SHARE * tally.records:
            return _message(config, tally, n, stage, reason)
    return None


def _input_name(config: PipelineConfig, index: int) -> str:
    patterns = config.input[index].patterns()
    return f"input {', '.join(patterns)}"


def _message(config: PipelineConfig, tally: _Tally, n: int, stage: str, reason: str) -> str:
    example = tally.examples.get(stage, {}).get(reason, reason)
    if stage == "read":
        hint = next((h for prefix, h in _HINTS if reason.startswith(prefix)), None)
        hint = hint or "see the error column of _quarantine/"
    else:
        hint = f"stage {stage!r} fails on them; see the error column of _quarantine/"
    return (
        f"{tally.name}: {n:,} of {tally.records:,} records quarantined by {stage} ({example}); "
        f"{hint}. The outputs in {config.output} are complete; to accept this, set "
        "allow_mostly_quarantined: true (CLI: --allow-mostly-quarantined)"
    )


def stage_errors_message(config: PipelineConfig, stats: dict[str, Any]) -> str | None:
    """A one-line error when stages raised on more records than `max_stage_errors`; else
    None. It names the stage and exception hit most, with its first message.

    Example:
        >>> stage_errors_message(config, stats)  # doctest: +SKIP
        "3 records hit errors in stage code: fragile raised ValueError on 3 (ValueError: ..."
    """
    errored = stats.get("errored", 0)
    if errored <= config.max_stage_errors:
        return None
    found = [(-n, stage, kind) for stage, kinds in stats["errored_by"].items()
             for kind, n in kinds.items()]  # fmt: skip
    n, stage, kind = min(found)
    example = stats["error_examples"][stage][kind]
    others = f" (and {errored + n:,} more in other stages or types)" if errored + n else ""
    return (
        f"{errored:,} records hit errors in stage code: {stage} raised {kind} on {-n:,} "
        f"({example}){others}. Each is in {config.output}/_errors/ with its traceback, and "
        "the other outputs are complete; fix the stage and run again (tasks with errors are "
        f"redone), or allow up to N with max_stage_errors: N (CLI: --max-stage-errors N)"
    )
