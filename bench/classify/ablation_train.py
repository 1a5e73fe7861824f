"""One training run of the ablation: the tiny causal LM (bench/tiny_lm.py) on one selection,
fed by `MixtureDataset` and `torch_loader`, evaluated on the held-out documents.

Every run of a seed starts from the same initial weights (seeded) and takes the same number
of steps of the same batch size; the mixture's seed (the order of the sequences) is the seed
too. The held-out sequences are read once through the loader (one epoch of each origin's
held-out documents, packed the same way as the training data). The curve is evaluated on
the first `curve_sequences` sequences of each origin; the final numbers on all of them.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from bench.tiny_lm import TinyLM, token_losses, warmup_cosine


def selection_mixture(catalog: str, selection: dict, seed: int, settings: dict) -> dict:
    """The mixture streaming one selection: one component, packed into `seq_len` + 1."""
    component: dict[str, Any] = {"weight": 1.0}
    if selection["where"]:
        component["where"] = selection["where"]
    return {
        "catalog": catalog,
        "datasets": [selection["dataset"]],
        "seq_len": settings["seq_len"],
        "seed": seed,
        "labels": True,
        "global_batch_size": settings["batch"],
        "components": {"train": component},
    }


def heldout_sequences(
    catalog: str, dataset: str, values: dict[str, str], seq_len: int
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """`(input_ids, labels)` of one pass over each `values` predicate's documents."""
    from mixplane.load import MixtureDataset

    out = {}
    for name, where in values.items():
        spec = {
            "catalog": catalog,
            "datasets": [dataset],
            "seq_len": seq_len,
            "seed": 0,
            "labels": True,
            "max_epochs": 1,
            "on_exhausted": "stop",
            "components": {name: {"where": where}},
        }
        samples = list(MixtureDataset(spec, dtype="int64", boundaries="none"))
        ids = torch.from_numpy(np.stack([s["input_ids"] for s in samples]))
        labels = torch.from_numpy(np.stack([s["labels"] for s in samples]))
        out[name] = (ids, labels)
    return out


@torch.no_grad()
def evaluate(
    model: TinyLM, data: dict[str, tuple[torch.Tensor, torch.Tensor]], limit: int | None, batch: int
) -> dict[str, dict[str, float]]:
    """Mean loss per token of each held-out set (its first `limit` sequences, or all)."""
    model.eval()
    out = {}
    for name, (ids, labels) in data.items():
        ids, labels = ids[:limit], labels[:limit]
        total = 0.0
        for start in range(0, len(ids), batch):
            total += float(
                token_losses(model, ids[start : start + batch], labels[start : start + batch]).sum()
            )
        out[name] = {"loss": total / labels.numel(), "tokens": int(labels.numel())}
    model.train()
    return out


def train_run(
    catalog: str, selection: dict, heldout: dict, seed: int, settings: dict
) -> dict[str, Any]:
    """Train from scratch on `selection`; the held-out losses along the way and at the end."""
    from mixplane.load import MixtureDataset
    from mixplane.load.torch import torch_loader

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = TinyLM(
        settings["vocab"],
        settings["seq_len"],
        dim=settings["dim"],
        layers=settings["layers"],
        heads=settings["heads"],
    )
    steps = settings["steps"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings["lr"], weight_decay=0.1)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, warmup_cosine(max(1, steps // 20), steps)
    )
    spec = selection_mixture(catalog, selection, seed, settings)
    dataset = MixtureDataset(spec, dtype="int64", boundaries="none")
    loader = torch_loader(dataset, settings["batch"])
    every, limit = settings["eval_every"], settings["curve_sequences"]
    curve, train_losses, window = [], [], []
    started = time.perf_counter()
    for step, batch in enumerate(loader, start=1):
        loss = token_losses(model, batch["input_ids"], batch["labels"]).mean()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        window.append(loss.item())
        if step % every == 0 or step == steps:
            train_losses.append({"step": step, "loss": float(np.mean(window))})
            window = []
            losses = evaluate(model, heldout, limit, settings["batch"])
            curve.append({"step": step} | {name: v["loss"] for name, v in losses.items()})
        if step == steps:
            break
    seconds = time.perf_counter() - started
    final = evaluate(model, heldout, None, settings["batch"])
    return {
        "seconds": seconds,
        "parameters": sum(p.numel() for p in model.parameters()),
        "final": final,
        "curve": curve,
        "train_loss": train_losses,
        "epochs": steps * settings["batch"] * settings["seq_len"] / selection["tokens"],
    }
