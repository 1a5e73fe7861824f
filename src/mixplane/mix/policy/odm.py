"""Online Data Mixing (Albalak et al. 2023): an EXP3 bandit with the loss as its reward.

Each component is an arm; its reward is its mean loss per token, importance-weighted by
the weight it was drawn with (a component drawn rarely counts for more), in a moving
average:

    R_k <- smoothing * R_k + (1 - smoothing) * loss_k / w_k   (components with tokens)

At update t (1, 2, ...), with K components, the exploration rate is
eps_t = min(1/K, sqrt(ln K / (K t))) and the weights are

    w = (1 - K eps_t) * softmax(eps_t * R) + eps_t

so every weight is at least eps_t. The policy favours what stays hard to predict,
including a component of pure noise: a known failure, useful as a negative control.

Example:
    >>> policy = Odm(["a", "b", "c"], np.full(3, 1 / 3), Odm.Options())
    >>> seen = Observation(step=9, steps=10, loss=np.array([10.0, 20.0, 30.0]),
    ...                    tokens=np.array([10.0, 10.0, 10.0]))
    >>> policy.update(seen).tolist()  # eps_1 = 1/3: the first update explores only
    [0.3333333333333333, 0.3333333333333333, 0.3333333333333333]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

from mixplane.mix.policy.base import Observation, Policy, PolicyOptions


def exploration(components: int, updates: int) -> float:
    """eps_t = min(1/K, sqrt(ln K / (K t))) for K components at update t (from 1)."""
    if components <= 1:
        return 0.0
    return min(1.0 / components, math.sqrt(math.log(components) / (components * updates)))


class Odm(Policy):
    """Online Data Mixing: EXP3 over the components, rewarded by their loss.

    Options (with their defaults):

    - `smoothing` (0.9): the share of the old reward estimate kept at each update, for
      components that had tokens (the others keep theirs). In [0, 1); 0 keeps only the
      latest importance-weighted loss.

    A component whose current weight is 0 (a prior of 0, before any update) gets no
    reward from its tokens, having no importance weight. The state is the reward
    estimates and the number of updates so far.
    """

    name = "odm"

    class Options(PolicyOptions):
        smoothing: float = Field(0.9, ge=0, lt=1)

    def __init__(self, names: list[str], prior: np.ndarray, options: PolicyOptions):
        super().__init__(names, prior, options)
        self.rewards = np.zeros(len(self.names))
        self.updates = 0

    def update(self, observation: Observation) -> np.ndarray | None:
        mean = observation.mean_loss
        drawn = (observation.tokens > 0) & (self.weights > 0) & np.isfinite(mean)
        keep = self.options.smoothing
        with np.errstate(invalid="ignore", divide="ignore"):
            reward = np.where(drawn, mean / np.where(drawn, self.weights, 1.0), 0.0)
        self.rewards = np.where(drawn, keep * self.rewards + (1.0 - keep) * reward, self.rewards)
        self.updates += 1
        count = len(self.names)
        explore = exploration(count, self.updates)
        scores = explore * self.rewards
        soft = np.exp(scores - scores.max())
        soft /= soft.sum()
        return (1.0 - count * explore) * soft + explore

    def state_dict(self) -> dict[str, Any]:
        return {"rewards": self.rewards.tolist(), "updates": self.updates}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rewards = np.asarray(state["rewards"], dtype=np.float64)
        self.updates = int(state["updates"])
