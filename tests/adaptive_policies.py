"""A policy of the tests' own, named by import path as a user's would be."""

from __future__ import annotations

import numpy as np

from mixplane.mix.policy import Observation, Policy, PolicyOptions


class LossSquared(Policy):
    """Weights proportional to the square of each component's mean loss (components with
    no tokens keep their weight)."""

    name = "loss_squared"

    class Options(PolicyOptions):
        power: float = 2.0

    def update(self, observation: Observation) -> np.ndarray | None:
        mean = observation.mean_loss
        return np.where(np.isnan(mean), self.weights, np.nan_to_num(mean) ** self.options.power)


class RankDependent(Policy):
    """A faulty policy: it prefers the component of its own rank's number, so ranks decide
    different weights from the same losses."""

    name = "rank_dependent"

    def update(self, observation: Observation) -> np.ndarray | None:
        import torch.distributed as dist

        weights = np.ones(len(self.names))
        weights[dist.get_rank() % len(self.names)] = 2.0
        return weights
