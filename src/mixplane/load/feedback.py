"""Feedback from the training loop to an adaptive mixture: one call per step.

    dataset = MixtureDataset("mixture.yaml", rank=rank, world_size=world_size)
    loader = torch_loader(dataset, batch_size=8, num_workers=2)
    feedback = Feedback(loader, log="weights.jsonl")
    for step, batch in enumerate(loader, start=first_step):
        loss_per_token = model_loss(batch)             # [batch, tokens], not reduced
        feedback.observe(step, loss_per_token, batch)  # before taking the next batch
        ...

`observe` sums each component's losses and tokens in the batch (every sequence comes from
one component: its `component` field), adds them up over the ranks (an all-reduce of a
2 x components tensor when torch.distributed is initialized, gloo or nccl) and, every
`update_every` steps, lets the policy decide new weights. Weights decided after step s
apply from step s + `delay` on every rank and every DataLoader worker: each rank decides the
same weights from the same sums, and tells its workers through the loader's channel before
it takes its next batch. The delay must cover how far the workers read ahead
(`num_workers x prefetch_factor` batches); that is checked here, not left to chance.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from mixplane.errors import ConfigError
from mixplane.load.dataset import MixtureDataset
from mixplane.load.torch_adapter import MixtureLoader
from mixplane.load.weight_log import append_weight_change


class Feedback:
    """Feeds per-component losses of a training loop to the mixture's policy.

    `loader` is a `torch_loader` (or the `MixtureDataset` itself, read without workers).
    `log` is a JSON Lines file that rank 0 appends every weight change to.
    """

    def __init__(self, loader: MixtureLoader | MixtureDataset, log: str | Path | None = None):
        dataset = loader if isinstance(loader, MixtureDataset) else loader.dataset.dataset
        if dataset.adaptive is None:
            raise ConfigError(
                "this mixture has no policy: add a policy: section (e.g. {name: ado}) to adapt "
                "its weights to the training loss"
            )
        self.dataset = dataset
        self.mixer = dataset.adaptive
        self.step_size = dataset.spec.sequences_per_step("policy steps")
        if isinstance(loader, MixtureLoader):
            check_delay(loader, self.step_size, self.mixer.config.delay)
        self.log = Path(log) if log is not None else None
        self.this_step: torch.Tensor | None = None  # this rank's sums in the current step
        self.pending: torch.Tensor | None = None  # all ranks' sums since the last update
        dataset.before_state = self._before_state

    def observe(
        self, step: int, loss_per_token: torch.Tensor, batch: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Count the losses of `batch` (the one just received) for optimizer step `step`.

        `loss_per_token` is the unreduced loss, `[batch, tokens]` (all `seq_len` tokens, or
        one fewer when the last position has no target); the batch's `loss_mask` applies
        when it has one of that shape. Call it for every micro-batch of every step, before
        taking the next batch. Returns the weight change decided at this step, if any.
        """
        loss = loss_per_token.detach()
        if loss.dim() != 2 or loss.shape[0] != batch["component"].shape[0]:
            raise ConfigError(
                f"observe expects the unreduced loss per token, [batch, tokens]; got shape "
                f"{tuple(loss.shape)} for a batch of {batch['component'].shape[0]} sequences"
            )
        self._check_position(step, batch)
        mask = batch.get("loss_mask")
        if isinstance(mask, torch.Tensor) and mask.shape == loss.shape:
            weights = mask.to(loss.device, torch.float64)
            per_sequence = torch.stack([(loss.double() * weights).sum(1), weights.sum(1)])
        else:
            sums = loss.sum(1, dtype=torch.float64)
            per_sequence = torch.stack([sums, torch.full_like(sums, loss.shape[1])])
        components = batch["component"].to(loss.device, torch.long)
        if self.this_step is None:
            shape = (2, len(self.dataset.names))
            self.this_step = torch.zeros(shape, dtype=torch.float64, device=loss.device)
            self.pending = torch.zeros_like(self.this_step)
        self.this_step.index_add_(1, components, per_sequence)
        if self.dataset.consumed < (step + 1) * self.step_size:
            return None  # more micro-batches of this step to come
        return self._end_step(step)

    def _check_position(self, step: int, batch: dict[str, Any]) -> None:
        index = batch["index"].reshape(-1)
        first, last = int(index[0]), int(index[-1])
        layout = self.dataset.layout
        received = self.dataset.consumed - layout.world_size + layout.rank
        if last != received:
            raise ConfigError(
                f"observe got the batch ending at position {last}, but the last batch this "
                f"rank received ends at {received}: observe each batch right after taking it"
            )
        if first // self.step_size != step or last // self.step_size != step:
            raise ConfigError(
                f"observe(step={step}) got a batch of step {first // self.step_size} (positions "
                f"{first}..{last}, {self.step_size} a step): pass the optimizer step the "
                "batch belongs to (its first step is 0, or the resumed step)"
            )

    def _end_step(self, step: int) -> dict[str, Any] | None:
        assert self.this_step is not None and self.pending is not None
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(self.this_step)
        self.pending += self.this_step
        self.this_step.zero_()
        if not self.mixer.end_step(step):
            return None
        self._flush()
        change = self.mixer.decide(step)
        if change is None:
            return None
        self._check_ranks_agree(change)
        self.dataset.set_weights(change["step"], change["weights"], change["details"])
        if self.log is not None and self.dataset.layout.rank == 0:
            append_weight_change(self.log, change)
        return change

    def _flush(self) -> None:
        if self.pending is not None:
            sums = self.pending.cpu().numpy()
            self.mixer.add(sums[0], sums[1])
            self.pending.zero_()

    def _check_ranks_agree(self, change: dict[str, Any]) -> None:
        """Every rank decides from the same all-reduced sums; make sure the bits agree."""
        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
            return
        mine = torch.tensor(change["details"]["policy_weights"], dtype=torch.float64)
        mine = mine.to(self.pending.device if self.pending is not None else "cpu")
        first = mine.clone()
        dist.broadcast(first, src=0)
        if not torch.equal(first, mine):
            raise ConfigError(
                f"ranks decided different weights at step {change['details']['decided_at']} "
                f"(rank 0: {first.tolist()}, rank {dist.get_rank()}: {mine.tolist()}); the "
                "policy must be deterministic"
            )

    def _before_state(self) -> None:
        if self.this_step is not None and bool(self.this_step.any()):
            raise ConfigError(
                "a loader state was asked for in the middle of a step (some of its "
                "micro-batches observed); save checkpoints after a step's last micro-batch"
            )
        self._flush()


def check_delay(loader: MixtureLoader, step_size: int, delay: int) -> None:
    """Refuse a delay shorter than how far the DataLoader's workers read ahead: a batch
    made before the weights changed would otherwise carry the old weights."""
    workers = loader.num_workers
    if workers == 0:
        return
    world = loader.dataset.dataset.layout.world_size
    ahead = workers * (loader.prefetch_factor or 2) * loader.dataset.block * world
    needed = 1 + math.ceil(ahead / step_size)
    if delay < needed:
        raise ConfigError(
            f"policy delay {delay} is shorter than the read-ahead of {workers} DataLoader "
            f"workers x prefetch_factor {loader.prefetch_factor} batches ({ahead} sequences, "
            f"{step_size} a step): set delay: {needed} or more in the mixture's policy, or "
            "read ahead less"
        )
