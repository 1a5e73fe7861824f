"""A small training loop around the README's loading snippet, run exactly as written.

    python train_loop.py README WORKDIR STEPS     (run in the folder of mixture.yaml)

The snippet is taken from the README and executed with the names it leaves to the user:
`rank`, `world_size`, `checkpoint` (the last one saved in WORKDIR, or None), `train_step`
(a step of a small real model; logs `step digest-of-the-batch` to WORKDIR/batches.log and
stops the run after STEPS steps), `time_to_save` (every CHECKPOINT_EVERY steps) and `save`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import time

import torch

CHECKPOINT_EVERY = 10


class Finished(Exception):
    pass


def readme_snippet(readme: str) -> str:
    with open(readme) as handle:
        blocks = re.findall(r"```python\n(.*?)```", handle.read(), flags=re.S)
    return next(block for block in blocks if "torch_loader(dataset" in block)


def main(readme: str, workdir: str, steps: int) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(1024, 16), torch.nn.Linear(16, 1024))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    path = os.path.join(workdir, "checkpoint.pt")
    checkpoint = torch.load(path) if os.path.exists(path) else None
    step = 0
    if checkpoint:
        model.load_state_dict(checkpoint["model"]["weights"])
        optimizer.load_state_dict(checkpoint["model"]["optimizer"])
        step = checkpoint["model"]["step"]
    log = open(os.path.join(workdir, "batches.log"), "a")  # noqa: SIM115 (open for the run)

    def train_step(batch: dict) -> None:
        nonlocal step
        tokens = batch["input_ids"] % 1024
        logits = model(tokens[:, :-1]).reshape(-1, 1024)
        loss = torch.nn.functional.cross_entropy(logits, tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        digest = hashlib.sha256(batch["input_ids"].numpy().tobytes()).hexdigest()[:16]
        log.write(f"{step} {digest}\n")
        log.flush()
        time.sleep(0.02)  # a slower model: the workers read further ahead

    def time_to_save() -> bool:
        return step % CHECKPOINT_EVERY == 0

    def save(checkpoint: dict) -> None:
        if checkpoint["model"] is ...:
            checkpoint["model"] = {
                "weights": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": step,
            }
        torch.save(checkpoint, path + ".partial")
        os.replace(path + ".partial", path)
        if step >= steps:
            raise Finished

    names = {
        "rank": 0,
        "world_size": 1,
        "checkpoint": checkpoint,
        "train_step": train_step,
        "time_to_save": time_to_save,
        "save": save,
    }
    with contextlib.suppress(Finished):
        exec(readme_snippet(readme), names)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
