"""One rank of a training loop that makes a mistake on one rank, for the tests.

    python feedback_mistakes.py CONFIG.json RANK OUT.json

CONFIG: {"spec", "world", "scenarios": [{"name", "batch", "steps", "culprit", "at_step",
"mistake", "policy" (optional, replaces the spec's)}]}. The ranks join one gloo group and run
every scenario in turn, each with a fresh dataset and `Feedback`; on the culprit rank, at
step `at_step`, the loop makes the `mistake`:

- `twice`: observes its first micro-batch of the step twice;
- `skip`: takes its first micro-batch of the step without observing it;
- `twice_whole`: observes the step's last micro-batch again after the step is complete;
- `nan` / `inf`: one token of its first micro-batch of the step has a nan / inf loss;
- `validation`: gives validation losses (no mistake: the other rank gives none);
- `none`: no mistake (a policy that decides differently on each rank makes its own).

OUT gets, per scenario, the error this rank raised (None if none) and the step it was at.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

from mixplane.errors import ConfigError
from mixplane.load import MixtureDataset
from mixplane.load.adaptive.feedback import Feedback
from mixplane.load.torch import torch_loader


def loss_of(batch: dict) -> torch.Tensor:
    ids = batch["input_ids"].double()
    return batch["component"].double()[:, None] + torch.remainder(ids, 8) / 8


def run(spec: dict, rank: int, world: int, scenario: dict) -> dict:
    if "policy" in scenario:
        spec = spec | {"policy": scenario["policy"]}
    dataset = MixtureDataset(spec, rank=rank, world_size=world, read_ahead=64)
    loader = torch_loader(dataset, scenario["batch"])
    feedback = Feedback(loader)
    micro = spec["global_batch_size"] // (world * scenario["batch"])
    culprit = rank == scenario["culprit"]
    mistake = scenario["mistake"]
    stream = iter(loader)
    step = 0
    try:
        for step in range(scenario["steps"]):
            for index in range(micro):
                batch = next(stream)
                loss = loss_of(batch)
                here = culprit and step == scenario["at_step"] and index == 0
                if here and mistake == "skip":
                    continue
                if here and mistake == "twice":
                    feedback.observe(step, loss, batch)
                if here and mistake in ("nan", "inf"):
                    loss[0, 3] = float(mistake)
                given = {"web": 2.5} if here and mistake == "validation" else None
                feedback.observe(step, loss, batch, validation_loss=given)
            if culprit and step == scenario["at_step"] and mistake == "twice_whole":
                feedback.observe(step, loss, batch)
    except ConfigError as error:
        return {"error": str(error), "step": step, "log": dataset.weight_log()}
    return {"error": None, "step": step, "log": dataset.weight_log()}


def main() -> None:
    with open(sys.argv[1]) as handle:
        config = json.load(handle)
    rank, out = int(sys.argv[2]), sys.argv[3]
    world = config["world"]
    # A lost rank becomes an error within a minute rather than a hang.
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    results = {s["name"]: run(config["spec"], rank, world, s) for s in config["scenarios"]}
    with open(out, "w") as handle:
        json.dump(results, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
