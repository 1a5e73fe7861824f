"""What every demo step shares: timing, reporting as it ends, writing its config, and
comparing a streamed mixture with its weights."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml


def write_yaml(path: Path, config: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))


def component_shares(
    mixture: dict[str, Any], names: list[str], counts: np.ndarray, unit: str
) -> dict[str, dict[str, Any]]:
    """Per component: the share its weight requests, the share of `counts` it got, and its
    count (under `unit`)."""
    weights = {name: c["weight"] for name, c in mixture["components"].items()}
    total, seen = sum(weights.values()), int(counts.sum())
    return {
        name: {
            "requested": round(weights[name] / total, 4),
            "realized": round(int(counts[i]) / max(seen, 1), 4),
            unit: int(counts[i]),
        }
        for i, name in enumerate(names)
    }


class Stepper:
    """Times each step and hands its report to the caller as soon as it is done."""

    def __init__(self, report: dict[str, Any], on_step):
        self.report = report
        self.on_step = on_step or (lambda name, out: None)

    def __call__(self, name: str):
        return _Step(self, name)


class _Step:
    def __init__(self, stepper: Stepper, name: str):
        self.stepper, self.name, self.out = stepper, name, {}

    def __enter__(self) -> dict[str, Any]:
        self.started = time.perf_counter()
        return self.out

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.out["seconds"] = round(time.perf_counter() - self.started, 2)
            self.stepper.report[self.name] = self.out
            self.stepper.on_step(self.name, self.out)
