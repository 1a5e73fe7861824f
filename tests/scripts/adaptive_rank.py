"""One rank of a training loop with an adaptive mixture, for the tests.

    python adaptive_rank.py CONFIG.json RANK OUT.json

CONFIG: {"spec", "world", "workers", "batch", "steps", "save_at", "state" (saved there at
save_at), "resume" (a state to start from), "log"}. The loss of each token is its component
index plus (token id % 8) / 8, exact in float64 so that sums do not depend on how ranks
split them. With world > 1 the ranks join a gloo group (MASTER_ADDR / MASTER_PORT).
"""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist

from mixplane.load import MixtureDataset
from mixplane.load.adaptive.feedback import Feedback
from mixplane.load.torch import torch_loader


def main() -> None:
    with open(sys.argv[1]) as handle:
        config = json.load(handle)
    rank, out = int(sys.argv[2]), sys.argv[3]
    world = config["world"]
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    dataset = MixtureDataset(config["spec"], rank=rank, world_size=world)
    loader = torch_loader(dataset, config["batch"], num_workers=config["workers"])
    feedback = Feedback(loader, log=config.get("log"))
    step_size = config["spec"]["global_batch_size"]
    first_step = 0
    if config.get("resume"):
        with open(config["resume"]) as handle:
            state = json.load(handle)
        dataset.load_state_dict(state)
        first_step = state["consumed"] // step_size
    micro = step_size // (world * config["batch"])
    batches = []
    stream = iter(loader)
    for step in range(first_step, config["steps"]):
        for _ in range(micro):
            batch = next(stream)
            ids = batch["input_ids"].double()
            loss = batch["component"].double()[:, None] + torch.remainder(ids, 8) / 8
            feedback.observe(step, loss, batch)
            batches.append(
                {
                    "step": step,
                    "index": batch["index"].tolist(),
                    "component": batch["component"].tolist(),
                    "input_ids": batch["input_ids"].tolist(),
                }
            )
        if step + 1 == config.get("save_at"):
            partial = config["state"] + ".partial"
            with open(partial, "w") as handle:
                json.dump(dataset.state_dict(), handle)
            os.replace(partial, config["state"])
    with open(out, "w") as handle:
        json.dump({"batches": batches, "log": dataset.weight_log()}, handle)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
