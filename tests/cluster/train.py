"""A training job's data side across hosts: the README's `train.py` lines, run by torchrun.

    torchrun --nnodes=2 --nproc-per-node=2 --node-rank=N --master-addr=A --master-port=P train.py

It executes the README's block (process group, dataset, loader) as written, in the folder of
`mixture.yaml`, then loops: each step, every rank's batch (global positions and tokens) is
gathered over gloo, and rank 0 appends one line per sequence to `stream.jsonl`:
`[step, position, digest of its tokens]`. Options come from the environment:

- `STEPS`: stop after this many steps (default: never, until the job is killed);
- `SAVE_AT`: at this step rank 0 writes `{"step", "data": dataset.state_dict()}` to the
  URL `CHECKPOINT` (on the store) and prints `saved step N`;
- `RESUME`: the checkpoint URL to start from (loaded into every rank, whatever the world
  size now).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys

import fsspec
import torch

README = os.environ["README"]


def readme_snippet() -> str:
    with open(README) as handle:
        blocks = re.findall(r"```python\n(.*?)```", handle.read(), flags=re.S)
    return next(block for block in blocks if "dist.init_process_group" in block)


def digest(tokens: torch.Tensor) -> str:
    return hashlib.sha256(tokens.numpy().astype("<i8").tobytes()).hexdigest()[:16]


def main() -> None:
    names: dict = {}
    exec(readme_snippet(), names)
    dist, dataset, loader = names["dist"], names["dataset"], names["loader"]
    rank, world = dist.get_rank(), dist.get_world_size()
    step = 0
    if os.environ.get("RESUME"):
        with fsspec.open(os.environ["RESUME"], "r") as handle:
            checkpoint = json.load(handle)
        dataset.load_state_dict(checkpoint["data"])
        step = checkpoint["step"]
    steps = int(os.environ.get("STEPS", "0")) or None
    save_at = int(os.environ.get("SAVE_AT", "0"))
    log = open("stream.jsonl", "a") if rank == 0 else None  # noqa: SIM115 (open for the run)
    for batch in loader:
        step += 1
        rows = torch.cat([batch["index"].view(-1, 1).long(), batch["input_ids"].long()], dim=1)
        gathered = [torch.empty_like(rows) for _ in range(world)]
        dist.all_gather(gathered, rows)
        if log is not None:
            for row in torch.cat(gathered):
                log.write(json.dumps([step, int(row[0]), digest(row[1:])]) + "\n")
            log.flush()
        if step == save_at and rank == 0:
            with fsspec.open(os.environ["CHECKPOINT"], "w") as handle:
                json.dump({"step": step, "data": dataset.state_dict()}, handle)
            print(f"saved step {step}", flush=True)
        if step == steps:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
