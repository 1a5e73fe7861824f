"""Weight logs as JSON Lines: one weight change per line, with what decided it.

A run's weight log (`dataset.weight_log()`, or the file a `Feedback` appends to) says which
weights held from which step. The stream is a function of the mixture, its seed and this
log, so applying a saved log to the same mixture without its policy reproduces the run's
stream exactly:

    changes = read_weight_log("weights.jsonl")
    replay = MixtureDataset(mixture_without_policy)
    replay.apply_weight_changes(changes)

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "weights.jsonl")
    >>> write_weight_log(path, [{"step": 10, "weights": {"a": 0.7, "b": 0.3}}])
    >>> read_weight_log(path)
    [{'step': 10, 'weights': {'a': 0.7, 'b': 0.3}}]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from mixplane.errors import ConfigError


def write_weight_log(path: str | Path, changes: Iterable[Mapping[str, Any]]) -> None:
    """Write `changes` (as `dataset.weight_log()` returns them), one JSON object a line."""
    with open(path, "wb") as handle:
        for change in changes:
            handle.write(orjson.dumps(dict(change)) + b"\n")


def append_weight_change(path: str | Path, change: Mapping[str, Any]) -> None:
    """Add one change at the end of a log (written whole, so a reader never sees half)."""
    with open(path, "ab") as handle:
        handle.write(orjson.dumps(dict(change)) + b"\n")


def read_weight_log(path: str | Path) -> list[dict[str, Any]]:
    """The changes of a log, in step order; a bad line is an error naming it. When a step
    appears twice (a run resumed from a checkpoint decided it again), the last one holds."""
    changes: dict[int, dict[str, Any]] = {}
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                change = orjson.loads(line)
                step, weights = int(change["step"]), change["weights"]
                if not isinstance(weights, dict):
                    raise TypeError("weights is not a mapping")
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
                raise ConfigError(
                    f"{path}: line {number} is not a weight change ({error}); each line is "
                    '{"step": N, "weights": {...}}'
                ) from None
            changes[step] = change
    return [changes[step] for step in sorted(changes)]
