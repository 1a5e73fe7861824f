"""Online Data Mixing (Albalak et al. 2023): an EXP3 bandit with the loss as its reward.

Each component is an arm; its reward is its mean loss per token, importance-weighted by
the weight it was drawn with (a component drawn rarely counts for more), in a moving
average:

    R_k <- smoothing * R_k + (1 - smoothing) * loss_k / w_k   (components with tokens)

With K components, the exploration rate after t training steps is
eps_t = min(1/K, sqrt(ln K / (K t))), and the weights are

    w = (1 - K eps_t) * softmax(eps_prev * R) + eps_t

where eps_prev is the rate the current weights were drawn with (1/K before the first
update), as in the paper and its official code; every weight is at least eps_t. The policy
favours what stays hard to predict, including a component of pure noise: a known failure,
useful as a negative control.

The official runs update every step (`update_every: 1`) with reward smoothing 0.5 (the
default here is 0.9); with `update_every: n`, one update sees the mean loss of n steps and t
still counts steps. `clock: updates` is the ODM of earlier mixplane versions: t counts
updates, and eps_t is also the softmax's temperature.

Example:
    >>> policy = Odm(["a", "b", "c"], np.full(3, 1 / 3), Odm.Options())
    >>> seen = Observation(step=9, steps=10, loss=np.array([10.0, 20.0, 30.0]),
    ...                    tokens=np.array([10.0, 10.0, 10.0]))
    >>> policy.update(seen).round(3).tolist()  # eps_10 = 0.191; softmax(R / 3)
    [0.319, 0.333, 0.348]
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import Field

from mixplane.errors import ConfigError
from mixplane.mix.policy.base import Observation, Policy, PolicyOptions


def exploration(components: int, t: int) -> float:
    """eps_t = min(1/K, sqrt(ln K / (K t))) for K components at time t (from 1)."""
    if components <= 1:
        return 0.0
    return min(1.0 / components, math.sqrt(math.log(components) / (components * t)))


class Odm(Policy):
    """Online Data Mixing: EXP3 over the components, rewarded by their loss.

    Options (with their defaults):

    - `smoothing` (0.9): the share of the old reward estimate kept at each update, for
      components that had tokens (the others keep theirs). In [0, 1); 0 keeps only the
      latest importance-weighted loss.
    - `clock` (`steps`): t counts training steps, and the softmax's temperature is the
      rate of the current weights; `updates`: t counts updates, and eps_t is both.

    A component whose current weight is 0 (a prior of 0, before any update) gets no
    reward from its tokens, having no importance weight. The state is the reward
    estimates, the number of updates so far and the current exploration rate.
    """

    name = "odm"

    class Options(PolicyOptions):
        smoothing: float = Field(0.9, ge=0, lt=1)
        clock: Literal["steps", "updates"] = "steps"

    def __init__(self, names: list[str], prior: np.ndarray, options: PolicyOptions):
        super().__init__(names, prior, options)
        self.rewards = np.zeros(len(self.names))
        self.updates = 0
        self.rate = 1.0 / len(self.names)  # the exploration rate of the current weights

    def update(self, observation: Observation) -> np.ndarray | None:
        mean = observation.mean_loss
        drawn = (observation.tokens > 0) & (self.weights > 0) & np.isfinite(mean)
        keep = self.options.smoothing
        with np.errstate(invalid="ignore", divide="ignore"):
            reward = np.where(drawn, mean / np.where(drawn, self.weights, 1.0), 0.0)
        self.rewards = np.where(drawn, keep * self.rewards + (1.0 - keep) * reward, self.rewards)
        self.updates += 1
        count = len(self.names)
        if self.options.clock == "steps":
            explore = exploration(count, observation.step + 1)
            temperature = self.rate
        else:
            explore = exploration(count, self.updates)
            temperature = explore
        scores = temperature * self.rewards
        soft = np.exp(scores - scores.max())
        soft /= soft.sum()
        self.rate = explore
        return (1.0 - count * explore) * soft + explore

    def state_dict(self) -> dict[str, Any]:
        return {
            "clock": self.options.clock,
            "rewards": self.rewards.tolist(),
            "updates": self.updates,
            "rate": self.rate,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = state.get("clock", "updates")  # none: saved by an earlier version
        if saved != self.options.clock:
            raise ConfigError(
                f"this odm state was saved with clock: {saved}, which the mixture's policy "
                f"does not say: set clock: {saved} in the policy to resume it"
            )
        self.rewards = np.asarray(state["rewards"], dtype=np.float64)
        self.updates = int(state["updates"])
        default = (
            exploration(len(self.names), self.updates) if self.updates else 1 / len(self.names)
        )
        self.rate = float(state.get("rate", default))
