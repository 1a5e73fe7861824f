"""Online excess-loss reweighting: more of what the model is still worse at than a reference.

Each component has a reference loss per token (what a reference model, e.g. one trained on
the declared mixture, reaches on it). At each update the excess loss of component k is
lambda_k = max(mean loss_k - reference_k, 0), and the sampling weights take an
exponentiated-gradient step (the update rule of DoReMi's domain weights, Xie et al. 2023):

    w <- w * exp(eta * lambda)   (then normalized)
    w <- (1 - uniform_mix) * w + uniform_mix / K

A component with no tokens in the observation has no excess loss (lambda = 0). The
references come from the mixture (`reference_losses: {name: loss}`); from a reference
run's weight log, `reference_losses_from_log` turns the records already read into them.

This is not DoReMi. DoReMi trains a small proxy model with Group DRO: the data is sampled
from fixed reference weights throughout, the domain weights only reweight the proxy's
training loss, the excess is clipped per token against a reference model's per-token
losses on the same tokens, and the result is the weights averaged over the whole proxy run,
which then train the large model as a static mixture. Here the model being trained is the
one whose loss is observed, the weights change what it is fed as it trains, the references
are one number per component (so the excess is clipped after averaging), and no average is
taken. The policy was called `doremi` before; that name is refused with a pointer here.

Example:
    >>> options = ExcessLoss.Options(reference_losses={"a": 2.0, "b": 3.0}, uniform_mix=0.0)
    >>> policy = ExcessLoss(["a", "b"], np.array([0.5, 0.5]), options)
    >>> seen = Observation(step=99, steps=100, loss=np.array([300.0, 200.0]),
    ...                    tokens=np.array([100.0, 100.0]))  # a: 1 above, b: 1 below
    >>> weights = policy.update(seen)
    >>> bool(np.isclose(weights[0], np.e / (np.e + 1)))
    True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from mixplane.errors import ConfigError
from mixplane.mix.policy.base import Observation, Policy, PolicyOptions


def reference_losses_from_log(
    records: Iterable[Mapping[str, Any]], last: int | None = None
) -> dict[str, float]:
    """The mean loss per token of each component over the `last` records (all when None).

    `records` are JSON Lines records already read: either a weight log's changes (the
    policy's inputs are under `details`: `components`, `loss`, `tokens`) or plain records
    with `names`, `loss` (per-component loss sums) and `tokens` (per-component token
    counts). The mean is the summed loss over the summed tokens, so an observation counts
    by its tokens; a component with no tokens in those records is left out.

    Example:
        >>> reference_losses_from_log([
        ...     {"names": ["a", "b"], "loss": [30.0, 8.0], "tokens": [10.0, 4.0]},
        ...     {"names": ["a", "b"], "loss": [10.0, 0.0], "tokens": [10.0, 0.0]},
        ... ])
        {'a': 2.0, 'b': 2.0}
    """
    chosen = list(records)
    if last is not None:
        if last < 1:
            raise ConfigError(f"last must be at least 1, got {last}")
        chosen = chosen[-last:]
    loss: dict[str, float] = {}
    tokens: dict[str, float] = {}
    for number, record in enumerate(chosen, start=1):
        inputs = record.get("details") or record
        names = inputs.get("components", inputs.get("names"))
        if names is None or "loss" not in inputs or "tokens" not in inputs:
            raise ConfigError(
                f"record {number} has no per-component losses: expected names (or "
                "details.components), loss and tokens"
            )
        if not len(names) == len(inputs["loss"]) == len(inputs["tokens"]):
            raise ConfigError(
                f"record {number}: {len(names)} names, {len(inputs['loss'])} losses and "
                f"{len(inputs['tokens'])} token counts"
            )
        for name, value, count in zip(names, inputs["loss"], inputs["tokens"], strict=True):
            loss[name] = loss.get(name, 0.0) + float(value)
            tokens[name] = tokens.get(name, 0.0) + float(count)
    return {name: loss[name] / tokens[name] for name in loss if tokens[name] > 0}


class ExcessLoss(Policy):
    """Exponentiated-gradient steps on each component's loss above a fixed reference.

    Options (with their defaults):

    - `reference_losses` (required): the reference loss per token of each component, by
      the policy's component names (finite, >= 0). Names of other components are ignored.
    - `eta` (1.0): the step size of the exponentiated update (> 0).
    - `uniform_mix` (0.001): the share of the uniform mixture mixed into the weights after
      each step, so that no weight reaches 0. In [0, 1].

    The policy keeps nothing but its weights (the caller restores those).
    """

    name = "excess_loss"

    class Options(PolicyOptions):
        reference_losses: dict[str, float]
        eta: float = Field(1.0, gt=0)
        uniform_mix: float = Field(1e-3, ge=0, le=1)

        @field_validator("reference_losses")
        @classmethod
        def _finite(cls, value: dict[str, float]) -> dict[str, float]:
            bad = [f"{n}={v!r}" for n, v in value.items() if not (math.isfinite(v) and v >= 0)]
            if bad:
                raise ValueError(f"reference losses must be finite and >= 0: {', '.join(bad)}")
            return value

    def __init__(self, names: list[str], prior: np.ndarray, options: PolicyOptions):
        super().__init__(names, prior, options)
        references = self.options.reference_losses
        missing = [name for name in self.names if name not in references]
        if missing:
            raise ConfigError(
                f"excess_loss: no reference loss for {', '.join(missing)} (reference_losses has "
                f"{', '.join(sorted(references)) or 'none'}; components: "
                f"{', '.join(self.names)})"
            )
        self.reference = np.array([references[name] for name in self.names], dtype=np.float64)

    def excess(self, observation: Observation) -> np.ndarray:
        """lambda: each component's loss per token above its reference (0 without tokens)."""
        mean = observation.mean_loss
        return np.where(np.isnan(mean), 0.0, np.maximum(np.nan_to_num(mean) - self.reference, 0))

    def update(self, observation: Observation) -> np.ndarray | None:
        step = self.options.eta * self.excess(observation)
        weights = self.weights * np.exp(step - step.max())  # the shift cancels out; no overflow
        weights = weights / weights.sum()
        mix = self.options.uniform_mix
        return (1.0 - mix) * weights + mix / len(self.names)
