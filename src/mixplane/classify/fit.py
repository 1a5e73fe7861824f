"""Running fastText's trainer in a fresh child process.

fastText 0.9.2's trainer can stop with "Encountered NaN" on data it trains on without trouble
in another process: whether it does depends on what the process allocated before (it
happens far more often on a second training in the same process), not on the data or the
settings. Every run that finishes gives the same bytes for the same input, settings and
seed, so training in a child process, and starting a new child when one reports NaN, keeps
training deterministic. Only a run that diverges every time (a learning rate too high for
the data) is an error.

Example:
    >>> fit("train.txt", "model.bin", {"epoch": 5, "seed": 0, "thread": 1})  # doctest: +SKIP
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from mixplane.errors import InputError

ATTEMPTS = 5

# The child imports fastText only: it starts in a fraction of a second.
_CHILD = """
import json, sys
import fasttext
job = json.loads(sys.argv[1])
model = fasttext.train_supervised(input=job["input"], **job["params"])
model.save_model(job["output"])
"""


def fit(train_file: str, model_file: str, params: dict[str, Any]) -> int:
    """Train `train_file` into `model_file` with fastText's `train_supervised(**params)`;
    return the attempts it took."""
    job = json.dumps({"input": train_file, "output": model_file, "params": params})
    problem = ""
    for attempt in range(1, ATTEMPTS + 1):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, job], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            return attempt
        lines = done.stderr.strip().splitlines()
        problem = lines[-1] if lines else f"exit code {done.returncode}"
        if "Encountered NaN" not in problem:
            raise InputError(f"{train_file}: fastText training failed: {problem}")
    raise InputError(
        f"{train_file}: fastText training diverged (NaN) in {ATTEMPTS} attempts; "
        f"lower the learning rate (lr {params.get('lr')})"
    )
