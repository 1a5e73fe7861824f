"""What an adaptive mixing policy is: observed losses in, weights out, state as JSON.

A policy is a pure object: it never reads files, talks to other processes or looks at a
clock, so the same observations always give the same weights. The training loop's feedback
(`mixplane.load.adaptive.feedback`) sums each component's per-token losses and token counts over all
ranks and hands them to the policy every `update_every` steps, as one `Observation`.

Writing your own policy: subclass `Policy`, give it a `name` and, if it takes options, an
`Options` model, and implement `update` (and `state_dict` / `load_state_dict` when it keeps
anything between updates). Then name it by import path in the mixture:
`policy: {name: my_pkg.policies:Greedy, update_every: 50, step_size: 0.5}`.

Example:
    >>> import numpy as np
    >>> class Greedy(Policy):
    ...     name = "greedy"
    ...     class Options(PolicyOptions):
    ...         step_size: float = 0.5
    ...     def update(self, observation):
    ...         hardest = np.zeros(len(self.names))
    ...         hardest[np.nanargmax(observation.mean_loss)] = 1.0
    ...         step = self.options.step_size
    ...         return (1 - step) * self.weights + step * hardest
    >>> policy = Greedy(["a", "b"], np.array([0.5, 0.5]), Greedy.Options())
    >>> seen = Observation(step=99, steps=100, loss=np.array([200.0, 100.0]),
    ...                    tokens=np.array([100.0, 100.0]))
    >>> policy.update(seen).tolist()
    [0.75, 0.25]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict


class PolicyOptions(BaseModel):
    """A policy's own options (those beyond the ones every policy takes); unknown keys are
    refused so that a misspelt option is an error, not a silent default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class ValidationPoint:
    """Validation losses the training loop measured at step `step` (`observe(...,
    validation_loss=...)`): `loss[k]` is component k's loss per token on held-out data (nan
    where it gave none), `tokens[k]` the tokens k had had in the observation up to then."""

    step: int
    loss: np.ndarray
    tokens: np.ndarray


@dataclass(frozen=True)
class Observation:
    """What the training loop saw since the previous update, summed over all ranks.

    `loss[k]` is the sum of the per-token losses of component k's tokens, `tokens[k]` how
    many tokens that sum covers, over the `steps` training steps ending with `step`.
    `validation` holds the validation losses given during those steps, oldest first.
    """

    step: int
    steps: int
    loss: np.ndarray
    tokens: np.ndarray
    validation: tuple[ValidationPoint, ...] = ()

    @property
    def mean_loss(self) -> np.ndarray:
        """Loss per token of each component (NaN for a component with no tokens)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.tokens > 0, self.loss / np.maximum(self.tokens, 1e-300), np.nan)


class Policy(ABC):
    """Turns observations into mixture weights.

    `names` are the components the policy weighs, `prior` their weights as the mixture
    declares them (summing to 1), `options` an instance of the class's `Options`. The
    current weights are `self.weights`; `update` returns new weights (any non-negative
    numbers, normalized by the caller, which also applies the floor) or None to keep them.
    """

    name: ClassVar[str] = "policy"
    Options: ClassVar[type[PolicyOptions]] = PolicyOptions

    def __init__(self, names: list[str], prior: np.ndarray, options: PolicyOptions):
        self.names = list(names)
        self.prior = np.asarray(prior, dtype=np.float64)
        self.options = options
        self.weights = self.prior.copy()

    @abstractmethod
    def update(self, observation: Observation) -> np.ndarray | None:
        """New weights after `observation`, or None to keep the current ones."""

    def record(self, observation: Observation) -> None:
        """Called for each observation during warm-up, when no weights are decided (a
        policy that learns from the warm-up's losses keeps them here; by default, nothing)."""
        return None

    def state_dict(self) -> dict[str, Any]:
        """Everything the policy keeps between updates, as JSON-serializable values."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned."""
        return None
