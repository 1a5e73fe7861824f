"""A user's policy, named by import path (`custom_policies:Greedy`) as a mixture would."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from mixplane.mix.policy import Observation, Policy, PolicyOptions


class Greedy(Policy):
    """Moves `step_size` of the way toward the component with the highest mean loss, and
    counts its updates (so that it has a state to save)."""

    name = "greedy"

    class Options(PolicyOptions):
        step_size: float = Field(0.5, gt=0, le=1)

    def __init__(self, names: list[str], prior: np.ndarray, options: PolicyOptions):
        super().__init__(names, prior, options)
        self.updates = 0

    def update(self, observation: Observation) -> np.ndarray | None:
        mean = observation.mean_loss
        if np.all(np.isnan(mean)):
            return None
        self.updates += 1
        hardest = np.zeros(len(self.names))
        hardest[int(np.nanargmax(mean))] = 1.0
        step = self.options.step_size
        return (1.0 - step) * self.weights + step * hardest

    def state_dict(self) -> dict[str, Any]:
        return {"updates": self.updates}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.updates = int(state["updates"])
