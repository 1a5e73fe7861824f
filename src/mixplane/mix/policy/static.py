"""The static policy: the declared weights, whatever the losses (a baseline)."""

from __future__ import annotations

import numpy as np

from mixplane.mix.policy.base import Observation, Policy


class Static(Policy):
    """Keeps the mixture's declared weights; observations are recorded, nothing changes."""

    name = "static"

    def update(self, observation: Observation) -> np.ndarray | None:
        return None
