"""What adapting the mixture costs the training loop: 16 components, DataLoader workers.

    .venv/bin/python bench/adaptive/overhead.py --steps 3000 --rounds 5

With `--step-ms`, each step also keeps the CPU busy that long, as a training step would.

Per step: the time of `Feedback.observe` (per-component sums of a [batch, 2048] loss, the
policy's update every `update_every` steps, the weight change reaching the workers), as
the median and 99th percentile over steps, and its median on update steps alone. Loader
throughput: sequences per second of a loop that takes batches and (adaptive) observes them,
against the same mixture without a policy, rounds interleaved, paired ratios reported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from mixplane.load import MixtureDataset
from mixplane.load.adaptive.feedback import Feedback
from mixplane.load.tools.synthetic import write_catalog
from mixplane.load.torch import torch_loader

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = 16
SEQ_LEN = 2048
BATCH = 8


def build(folder: Path) -> str:
    datasets = {
        f"c{index:02d}": {
            "documents": 3000,
            "seed": index,
            "source": f"c{index:02d}",
            "mean_tokens": 400,
            "eos_id": 0,
        }
        for index in range(COMPONENTS)
    }
    return write_catalog(str(folder), datasets)


def spec(catalog: str, policy: dict | None) -> dict:
    components = {
        f"c{index:02d}": {"where": f"source = 'c{index:02d}'", "weight": 1 + index % 4}
        for index in range(COMPONENTS)
    }
    made = {
        "catalog": catalog,
        "seq_len": SEQ_LEN,
        "seed": 1,
        "global_batch_size": BATCH,
        "components": components,
    }
    return made | ({"policy": policy} if policy else {})


def run(mixture: dict, steps: int, workers: int, step_ms: float = 0.0) -> dict:
    dataset = MixtureDataset(mixture, dtype="int32")
    loader = torch_loader(dataset, BATCH, num_workers=workers)
    feedback = Feedback(loader) if "policy" in mixture else None
    # A loss whose per-component means differ, so the policy has something to act on.
    generator = torch.Generator().manual_seed(0)
    loss = torch.rand(BATCH, SEQ_LEN - 1, generator=generator, dtype=torch.float32)
    observe, updates = [], []
    stream = iter(loader)
    warmup = 20  # workers started, first blocks read: not timed
    started = time.perf_counter()
    for step in range(warmup + steps):
        if step == warmup:
            started = time.perf_counter()
        batch = next(stream)
        # The training loop has its loss either way; only observing it is the policy's cost.
        scaled = loss * (1 + batch["component"].float()[:, None] / COMPONENTS)
        train_for(step_ms)
        if feedback is None:
            continue
        before = time.perf_counter()
        change = feedback.observe(step, scaled, batch)
        spent = time.perf_counter() - before
        if step >= warmup:
            observe.append(spent)
            if change is not None:
                updates.append(spent)
    seconds = time.perf_counter() - started
    result = {"sequences_per_second": steps * BATCH / seconds}
    if observe:
        result |= {
            "observe_median_ms": 1e3 * statistics.median(observe),
            "observe_p99_ms": 1e3 * float(np.percentile(observe, 99)),
            "observe_mean_ms": 1e3 * statistics.fmean(observe),
            "update_median_ms": 1e3 * statistics.median(updates) if updates else None,
            "updates": len(updates),
        }
    return result


def train_for(milliseconds: float) -> None:
    """Stand-in for a training step: the CPU stays busy this long (0: a loader-only loop)."""
    until = time.perf_counter() + milliseconds / 1e3
    while time.perf_counter() < until:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--policy", default="ado")
    parser.add_argument("--update-every", type=int, default=100)
    parser.add_argument(
        "--step-ms", type=float, default=0.0, help="a stand-in training step per batch"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "adaptive" / "overhead.json")
    args = parser.parse_args()
    catalog = build(Path(tempfile.mkdtemp(prefix="mixplane-overhead-")))
    policy = {"name": args.policy, "update_every": args.update_every, "min_weight": 0.01}
    mixtures = {"static": spec(catalog, None), "adaptive": spec(catalog, policy)}
    rounds: list[dict] = []
    for index in range(args.rounds):
        order = list(mixtures) if index % 2 == 0 else list(reversed(mixtures))
        rounds.append(
            {name: run(mixtures[name], args.steps, args.workers, args.step_ms) for name in order}
        )
        print(json.dumps(rounds[-1]), file=sys.stderr)
    ratios = [
        r["adaptive"]["sequences_per_second"] / r["static"]["sequences_per_second"] for r in rounds
    ]
    updates = [r["adaptive"]["update_median_ms"] for r in rounds if r["adaptive"]["updates"]]
    summary = {
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "rounds": rounds,
        "throughput_ratio": {
            "median": statistics.median(ratios),
            "min": min(ratios),
            "max": max(ratios),
        },
        "observe_median_ms": statistics.median(r["adaptive"]["observe_median_ms"] for r in rounds),
        "observe_p99_ms": statistics.median(r["adaptive"]["observe_p99_ms"] for r in rounds),
        "update_median_ms": statistics.median(updates) if updates else None,
    }
    args.out.write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "rounds"}, indent=1))


if __name__ == "__main__":
    main()
