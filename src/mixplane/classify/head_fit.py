"""Fitting a linear head on fixed embeddings, deterministically.

The head starts at zero weights, its bias at the targets' mean (regression) or that mean's
log-odds (classification), so no random numbers go into it. Training is AdamW on
minibatches of `batch_size` examples, in an order drawn from numpy's generator seeded with
`seed`, a new permutation each epoch, the learning rate falling linearly from `lr` to 0 over
all steps (Hugging Face Trainer's default schedule, which FineWeb-Edu's classifier was
trained with). The loss is the mean squared error (regression) or the logistic loss on the
logit (classification). PyTorch runs on `threads` threads: the same embeddings, targets
and settings give the same float32 weights, bit for bit.

Example:
    >>> x = np.eye(4, dtype=np.float32)
    >>> head = fit_head(x, np.array([0.0, 1.0, 2.0, 3.0]), "regression", HeadSettings())
    >>> head.weight.shape
    (4,)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mixplane.errors import InputError
from mixplane.stages.classify.head import LinearHead


@dataclass(frozen=True)
class HeadSettings:
    """How the head trains (see `EmbeddingTrainConfig` for their meaning)."""

    epoch: int = 20
    lr: float = 0.03
    batch_size: int = 32
    weight_decay: float = 0.0
    seed: int = 0
    threads: int = 1


def fit_head(
    embeddings: np.ndarray, targets: np.ndarray, task: str, settings: HeadSettings
) -> LinearHead:
    """A `task` head (regression or classification) fitted to `targets` (0/1 for
    classification) from `embeddings` (one float32 row per example).

    Raises InputError when the loss stops being finite (a learning rate too high).
    """
    import torch

    n, dim = embeddings.shape
    if n == 0:
        raise InputError("no training examples to fit the head on")
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    try:
        x = torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32))
        y = torch.from_numpy(np.asarray(targets, dtype=np.float32))
        weight = torch.zeros(dim, dtype=torch.float32, requires_grad=True)
        bias = torch.tensor([_initial_bias(targets, task)], dtype=torch.float32)
        bias.requires_grad_(True)
        optimizer = torch.optim.AdamW(
            [weight, bias], lr=settings.lr, weight_decay=settings.weight_decay
        )
        steps = settings.epoch * math.ceil(n / settings.batch_size)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
        rng = np.random.default_rng([settings.seed, 30])
        for epoch in range(settings.epoch):
            order = torch.from_numpy(rng.permutation(n))
            for start in range(0, n, settings.batch_size):
                rows = order[start : start + settings.batch_size]
                logits = x[rows] @ weight + bias
                if task == "regression":
                    loss = torch.mean((logits - y[rows]) ** 2)
                else:
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y[rows])
                if not torch.isfinite(loss):
                    raise InputError(
                        f"training the head diverged (loss {loss.item()} in epoch {epoch + 1}); "
                        f"lower the learning rate (lr {settings.lr})"
                    )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
    finally:
        torch.set_num_threads(previous_threads)
    return LinearHead(task, weight.detach().numpy().copy(), np.float32(bias.detach().item()))


def _initial_bias(targets: np.ndarray, task: str) -> float:
    mean = float(np.mean(targets))
    if task == "regression":
        return mean
    share = min(max(mean, 1e-6), 1 - 1e-6)
    return math.log(share / (1 - share))
