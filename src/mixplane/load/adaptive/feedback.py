"""Feedback from the training loop to an adaptive mixture: one call per step.

    dataset = MixtureDataset("mixture.yaml", rank=rank, world_size=world_size)
    loader = torch_loader(dataset, batch_size=8, num_workers=2)
    feedback = Feedback(loader, log="weights.jsonl")
    for step, batch in enumerate(loader, start=first_step):
        loss_per_token = model_loss(batch)             # [batch, tokens], not reduced
        feedback.observe(step, loss_per_token, batch)  # before taking the next batch
        ...

`observe` checks each micro-batch against what this rank received (each observed once, in
order, none skipped) and the loss against the batch's shape, then sums each component's
losses and tokens (every sequence comes from one component: its `component` field). At a
step's last micro-batch the ranks add their sums up in one all-reduce of a small float64
tensor (when torch.distributed is initialized, gloo or nccl), read back to the CPU; every
`update_every` steps the policy decides new weights. A mistake found on one rank rides on
that all-reduce, so every rank raises at the same step instead of waiting on a rank that
left (see `mixplane.load.adaptive.step_sums`).

Weights decided after step s apply from step s + `delay` on every rank and every DataLoader
worker: each rank decides the same weights from the same sums (checked bit for bit), and
tells its workers through the loader's channel before it takes its next batch. The delay
must cover how far the workers read ahead (`loader.batches_ahead`: `num_workers x
prefetch_factor` batches, more if they travel several to a message); that is checked here,
not left to chance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch
import torch.distributed as dist

from mixplane.errors import ConfigError
from mixplane.load.adaptive.loss_checks import loss_shape_problem, validation_losses
from mixplane.load.adaptive.micro_batches import MicroBatches
from mixplane.load.adaptive.step_sums import Problem, StepSums
from mixplane.load.adaptive.weight_log import append_weight_change
from mixplane.load.dataset import MixtureDataset
from mixplane.load.read.labels import IGNORE_INDEX
from mixplane.load.torch.adapter import MixtureLoader


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
        layout = dataset.layout
        self.distributed = _distributed(layout.rank, layout.world_size)
        self.log = Path(log) if log is not None else None
        self.seen = MicroBatches(self.step_size, layout.rank, layout.world_size)
        self.sums: StepSums | None = None  # this rank's sums in the current step
        self.generation = dataset.generation  # of the loader state the tracking follows
        self.broken: str | None = None  # why this rank can no longer observe
        dataset.before_state = self._before_state

    def observe(
        self,
        step: int,
        loss_per_token: torch.Tensor,
        batch: dict[str, Any],
        validation_loss: Mapping[str, float] | None = None,
    ) -> dict[str, Any] | None:
        """Count the losses of `batch` (the one just received) for optimizer step `step`.

        `loss_per_token` is the unreduced loss, `[batch, tokens]`: all `seq_len` tokens, or
        one fewer when the last position has no target (with `labels: true`, the shape of
        `labels`; with `labels: huggingface`, one fewer than `labels`, whose -100s do not
        count); the batch's `loss_mask`, when it has one, must have that shape and
        applies. Call it for every micro-batch of every step, once, right after taking it.
        A mistake (a batch observed twice or skipped, a wrong shape) raises before anything
        is counted; with several ranks, every rank raises at the end of that step. A nan or
        inf loss on a token that counts raises on every rank at the end of its step, or
        leaves the step out on every rank (the policy's `on_nonfinite: skip`).

        `validation_loss` gives, at any one micro-batch of a step, the loss per token on
        held-out data of some of the policy's components (`{"web": 2.31, ...}`), measured by
        the training loop at that step; with several ranks, the mean of the ranks that give
        one is taken (give the same values on every rank, or on one). Policies may use them
        (ADO with `fit_on: validation`). Returns the weight change decided at this step, if
        any.
        """
        if self.broken is not None:
            raise ConfigError(self.broken)
        self._follow_loads()
        try:
            counted = self._count(step, loss_per_token, batch)
            validation = self._validation(validation_loss)
        except _Refused as refused:
            self._fail_together(refused, step, loss_per_token)
        sums = self._sums(counted.device)
        sums.add_batch(counted.components, counted.loss, counted.tokens, counted.nonfinite)
        if validation is not None:
            sums.give_validation(validation)
        if not self.seen.advance(step, counted.positions):
            return None  # more micro-batches of this step to come
        return self._end_step(step)

    def _count(self, step: int, loss_per_token: Any, batch: dict[str, Any]) -> _Counted:
        """Check the batch and its loss against what this rank received; what to count."""
        components, index = batch.get("component"), batch.get("index")
        if not (isinstance(components, torch.Tensor) and isinstance(index, torch.Tensor)):
            raise _Refused(
                "observe needs the batch as the loader gave it, with its `component` and "
                "`index` tensors"
            )
        positions = index.reshape(-1).cpu().numpy()
        if components.dim() != 1 or components.shape[0] != positions.size:
            raise _Refused(
                f"the batch has {positions.size} positions but a `component` of shape "
                f"{tuple(components.shape)}: observe the batch as the loader gave it"
            )
        layout = self.dataset.layout
        received = self.dataset.consumed - layout.world_size + layout.rank
        wrong = self.seen.check(step, positions, self.mixer.next_step, received)
        if wrong is not None:
            raise _Refused(wrong)
        problem = loss_shape_problem(loss_per_token, batch)
        if problem is not None:
            raise _Refused(problem)
        loss = loss_per_token.detach().double()
        mask, labels = batch.get("loss_mask"), batch.get("labels")
        if mask is None and isinstance(labels, torch.Tensor):
            mask = labels[:, 1:] != IGNORE_INDEX  # `labels: huggingface`, shifted by the model
        weights = torch.ones_like(loss) if mask is None else mask.to(loss.device, torch.float64)
        # A non-finite loss is counted apart (no sync here: the step's end looks at the
        # counts), and left out of the sums so that nothing of it reaches the policy.
        bad = ~torch.isfinite(loss) & (weights != 0)
        sums = torch.where(bad | (weights == 0), 0.0, loss * weights).sum(1)
        return _Counted(
            positions=positions,
            components=components.to(loss.device, torch.long),
            loss=sums,
            tokens=torch.where(bad, 0.0, weights).sum(1),
            nonfinite=bad.sum(1, dtype=torch.float64),
        )

    def _validation(self, given: Mapping[str, float] | None) -> np.ndarray | None:
        """The validation losses by the policy's components (nan: not given), checked."""
        if given is None:
            return None
        if self.sums is not None and self.seen.step is not None and self.sums.validation_given:
            raise _Refused("validation_loss was already given in this step", Problem.VALIDATION)
        skip = self.mixer.config.on_nonfinite == "skip"
        try:
            return validation_losses(given, self.mixer.names, skip_nonfinite=skip)
        except ValueError as error:
            raise _Refused(str(error), Problem.VALIDATION) from None

    def _sums(self, device: torch.device) -> StepSums:
        if self.sums is None:
            layout = self.dataset.layout
            if self.distributed and dist.get_backend() == "gloo":
                device = torch.device("cpu")
            self.sums = StepSums(
                len(self.dataset.names),
                len(self.mixer.names),
                layout.world_size,
                layout.rank,
                device,
            )
        return self.sums

    def _fail_together(self, refused: _Refused, step: int, loss: Any) -> NoReturn:
        """Raise `refused`; with several ranks, first tell them, through the all-reduce
        they are in (or about to be in) for this step, so that they raise too."""
        if self.distributed:
            device = loss.device if isinstance(loss, torch.Tensor) else _backend_device()
            sums = self._sums(device)
            sums.flag(refused.problem, step)
            sums.reduce(distributed=True)
            self.broken = (
                f"observe stopped at an earlier mistake on this rank ({refused}); the ranks "
                "stopped together: restart from the last checkpoint"
            )
        raise ConfigError(str(refused)) from None

    def _end_step(self, step: int) -> dict[str, Any] | None:
        assert self.sums is not None
        reduced = self.sums.reduce(self.distributed)
        if reduced.problems:
            rank, (problem, at) = min(reduced.problems.items())
            self.broken = (
                f"rank {rank} stopped observing at step {at}: {problem.description} (its own "
                "error says more); every rank stops with it: restart from the last checkpoint"
            )
            raise ConfigError(self.broken)
        skipped = bool(reduced.nonfinite.any())
        if skipped and self.mixer.config.on_nonfinite == "raise":
            self.broken = nonfinite_message(step, reduced.nonfinite, self.dataset.names)
            raise ConfigError(self.broken)
        if not skipped:
            self.mixer.add(reduced.loss, reduced.tokens)
        self.mixer.add_validation(reduced.validation)
        if not self.mixer.end_step(step, skipped=skipped):
            return None
        change = self.mixer.decide(step)
        if change is None:
            return None
        self._check_ranks_agree(change)
        self.dataset.set_weights(change["step"], change["weights"], change["details"])
        if self.log is not None and self.dataset.layout.rank == 0:
            append_weight_change(self.log, change)
        return change

    def _check_ranks_agree(self, change: dict[str, Any]) -> None:
        """Every rank decides from the same all-reduced sums; make sure the bits agree.
        Every rank sees every rank's weights, so all of them raise together if not."""
        if not self.distributed:
            return
        assert self.sums is not None
        mine = torch.tensor(change["details"]["policy_weights"], dtype=torch.float64)
        mine = mine.to(self.sums.device)
        everyone = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(everyone, mine)
        for rank, theirs in enumerate(everyone[1:], start=1):
            if not torch.equal(theirs, everyone[0]):
                raise ConfigError(
                    f"ranks decided different weights at step {change['details']['decided_at']} "
                    f"(rank 0: {everyone[0].tolist()}, rank {rank}: {theirs.tolist()}); the "
                    "policy must be deterministic"
                )

    def _follow_loads(self) -> None:
        """A loader state loaded since starts at a step: forget the step under way."""
        if self.dataset.generation != self.generation:
            self.generation = self.dataset.generation
            self.seen.reset()
            self.sums = None

    def _before_state(self) -> None:
        self._follow_loads()
        if self.broken is not None:
            raise ConfigError(
                f"no loader state after observe stopped ({self.broken}): it would not resume "
                "the run; load the last checkpoint instead"
            )
        if self.seen.step is not None:
            raise ConfigError(
                "a loader state was asked for in the middle of a step (some of its "
                "micro-batches observed); save checkpoints after a step's last micro-batch"
            )
        observed = self.mixer.next_step * self.step_size
        if self.dataset.consumed != observed:
            raise ConfigError(
                f"a loader state was asked for with positions {observed}.."
                f"{self.dataset.consumed - 1} received but not observed: observe every batch "
                "before saving a checkpoint"
            )


class _Refused(Exception):
    """A mistake in what observe was given, found before anything was counted."""

    def __init__(self, message: str, problem: Problem = Problem.BATCH):
        super().__init__(message)
        self.problem = problem


@dataclass(frozen=True)
class _Counted:
    """What one checked micro-batch adds to its step."""

    positions: np.ndarray
    components: torch.Tensor
    loss: torch.Tensor  # per sequence, of its finite losses
    tokens: torch.Tensor  # per sequence, with a finite loss
    nonfinite: torch.Tensor  # per sequence: tokens whose loss is nan or inf

    @property
    def device(self) -> torch.device:
        return self.loss.device


def nonfinite_message(step: int, nonfinite: np.ndarray, names: list[str]) -> str:
    """The error for a step whose losses (over every rank) were not all finite."""
    found = ", ".join(f"{int(n)} of {name}" for name, n in zip(names, nonfinite, strict=True) if n)
    return (
        f"step {step}: the loss of some tokens is nan or inf ({found}, over every rank); the "
        "policy takes no non-finite loss: resume from a checkpoint before the divergence, or "
        "set on_nonfinite: skip in the mixture's policy to leave such steps out"
    )


def _distributed(rank: int, world_size: int) -> bool:
    """Whether torch.distributed joins several ranks; it must agree with the dataset's."""
    if not (dist.is_available() and dist.is_initialized()):
        return False
    if (dist.get_rank(), dist.get_world_size()) != (rank, world_size):
        raise ConfigError(
            f"torch.distributed has rank {dist.get_rank()} of {dist.get_world_size()}, the "
            f"dataset rank {rank} of {world_size}: build the dataset with "
            "MixtureDataset(..., rank=dist.get_rank(), world_size=dist.get_world_size())"
        )
    return world_size > 1


def _backend_device() -> torch.device:
    """Where a collective's tensor lives: the current GPU for nccl, else the CPU."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def check_delay(loader: MixtureLoader, step_size: int, delay: int) -> None:
    """Refuse a delay shorter than how far the DataLoader's workers read ahead: a batch
    made before the weights changed would otherwise carry the old weights."""
    workers = loader.num_workers
    if workers == 0:
        return
    world = loader.dataset.dataset.layout.world_size
    batches = loader.batches_ahead
    ahead = batches * loader.dataset.block * world
    needed = 1 + math.ceil(ahead / step_size)
    if delay < needed:
        raise ConfigError(
            f"policy delay {delay} is shorter than the read-ahead of {workers} DataLoader "
            f"workers ({batches} batches: prefetch_factor {loader.prefetch_factor} items of "
            f"{loader.dataset.per_message} batches each; {ahead} sequences, {step_size} a "
            f"step): set delay: {needed} or more in the mixture's policy, or read ahead less"
        )
