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


def trajectories(
    changes: list[dict[str, Any]], initial: dict[str, float] | None = None
) -> dict[str, Any]:
    """Each component's weight (and, for a policy's decisions, mean loss per token) by step.

    `weights[name][i]` holds from `steps[i]` on; `decided_at[i]` is the step the policy
    decided it after (None for a change made by hand, or for the `initial` weights, which
    come first, at step 0). Components are the policy's when the log has its details, else
    the names the changes give.
    """
    if initial:
        changes = [{"step": 0, "weights": dict(initial)}, *changes]
    names: list[str] = []
    for change in changes:
        details = change.get("details") or {}
        for name in details.get("components") or change["weights"]:
            if name not in names:
                names.append(name)
    result: dict[str, Any] = {
        "components": names,
        "steps": [],
        "decided_at": [],
        "weights": {name: [] for name in names},
        "loss": {name: [] for name in names},
    }
    for change in changes:
        details = change.get("details") or {}
        if details.get("components"):
            weights = dict(zip(details["components"], details["policy_weights"], strict=True))
            losses = {
                name: (loss / tokens if tokens else None)
                for name, loss, tokens in zip(
                    details["components"], details["loss"], details["tokens"], strict=True
                )
            }
        else:
            total = sum(change["weights"].values()) or 1.0
            weights = {name: value / total for name, value in change["weights"].items()}
            losses = {}
        result["steps"].append(int(change["step"]))
        result["decided_at"].append(details.get("decided_at"))
        for name in names:
            result["weights"][name].append(weights.get(name))
            result["loss"][name].append(losses.get(name))
    return result


def plot_weight_log(
    changes: list[dict[str, Any]], path: str | Path, initial: dict[str, float] | None = None
) -> None:
    """Draw the weight trajectories (and the losses the policy saw) into an image file.

    Needs matplotlib (`pip install 'mixplane[plot]'`).
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    found = trajectories(changes, initial)
    has_loss = any(v is not None for series in found["loss"].values() for v in series)
    figure, axes = pyplot.subplots(
        2 if has_loss else 1, 1, figsize=(8, 6 if has_loss else 3.5), sharex=True, squeeze=False
    )
    for name in found["components"]:
        axes[0][0].step(found["steps"], found["weights"][name], where="post", label=name)
    axes[0][0].set_ylabel("weight")
    axes[0][0].legend(loc="best", fontsize="small")
    if has_loss:
        decided = [
            s if s is not None else step
            for s, step in zip(found["decided_at"], found["steps"], strict=True)
        ]
        for name in found["components"]:
            axes[1][0].plot(decided, found["loss"][name], marker=".", label=name)
        axes[1][0].set_ylabel("loss per token")
    axes[-1][0].set_xlabel("step")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)
