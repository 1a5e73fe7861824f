"""ADO (Adaptive Data Optimization, Jiang et al. 2024): mix toward what is still learning fast.

Each component's loss is modelled as a power law, L(n) = eps + beta * n^-alpha, refitted at
every update to the (n, mean loss) points seen since step 0 (warm-up included). With the
default `x_axis: total_tokens`, n is the number of tokens trained on so far, of every
component (the same n for all, as in the official code); with `own_tokens`, the tokens of
that component. The learning speed is the negative slope at the current n,
alpha * beta * n^(-alpha-1). The preference of component k is

    rho_k  proportional to  prior_k * speed_k * credit_k,   credit_k = sqrt(h_k (1 - h_k))

where h_k is a moving average of k's share of the tokens (credit: a component that had a
large share is the one whose own data lowered its loss; the (1 - h_k), as in the official
code, keeps a component that has most of the mixture from taking all of it; `credit:
share` leaves it out). The preference is floored at
`preference_floor` (raised to it, then renormalized), then smoothed:

    weights = smoothing * base + (1 - smoothing) * rho

where `base` is, by default, the time average of the preferences so far (`smoothing_base:
time_average`: each preference weighted by the steps it stood for, the prior by the steps
before the first update, as the official code's running average is), or the previous
weights (`previous_weights`). With `fit_on: validation` the curves are fitted to the
validation losses the training loop gives `observe`, not to the training loss.

How this differs from the official code (yidingjiang/ado), even with the defaults: it
recomputes the mixture every step and refits every 1,000 steps, where here both happen every
`update_every` steps (each mixture change a logged, replayable event); it fits per-step
losses smoothed by a Savitzky-Golay filter (window 101) and subsampled every 10th step after
a warm-up it ignores, where here each update's mean loss is one point, from step 0; it fits
by L-BFGS from a grid of starting points, with penalties keeping alpha <= 0.8 and
log eps >= 0.5, where here a deterministic grid search fits alpha <= 1.5 and eps up to the
smallest loss (see `mixplane.mix.policy.power_law`); it floors alpha at 0.05 in the speed;
and it smooths h every step (gamma 0.9), where here `credit_smoothing` applies per update.

`x_axis: own_tokens, smoothing_base: previous_weights, preference_floor: 0, credit: share`
is the ADO of earlier mixplane versions: with the caller's floor `min_weight` m over K
components applied to weights that the next update smooths again, an abandoned component
settles near m / (1 - smoothing * (1 - K m)) (7.4 m for K = 4), not at m.

Example:
    >>> options = Ado.Options(smoothing=0.5, smoothing_base="previous_weights",
    ...                       preference_floor=0.0)
    >>> policy = Ado(["a", "b"], np.array([0.5, 0.5]), options)
    >>> tokens = np.array([1000.0, 1000.0])
    >>> for step in range(3):  # "a" is still learning, "b" is flat
    ...     seen = 2000.0 * (step + 1)
    ...     mean_loss = np.array([2.0 + 300.0 * seen**-0.5, 5.0])
    ...     policy.weights = policy.update(Observation(step, 1, mean_loss * tokens, tokens))
    >>> policy.weights.round(3).tolist()
    [0.75, 0.25]
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from mixplane.errors import ConfigError
from mixplane.mix.policy.base import Observation, Policy, PolicyOptions
from mixplane.mix.policy.power_law import PowerLawFit, fit_power_law

__all__ = ["Ado", "PowerLawFit", "fit_power_law"]

# The variant options, and the values that give the ADO of earlier mixplane versions (whose
# saved states carry no variant).
VARIANT = ("x_axis", "smoothing_base", "preference_floor", "credit", "fit_on")
EARLIER = {
    "x_axis": "own_tokens",
    "smoothing_base": "previous_weights",
    "preference_floor": 0.0,
    "credit": "share",
    "fit_on": "train",
}


class Ado(Policy):
    """ADO: weights toward the components whose fitted loss curves are still steep.

    Options (with their defaults):

    - `smoothing` (0.9): the share of `smoothing_base` kept at each update; the rest goes to
      the floored preference. In [0, 1).
    - `smoothing_base` (`time_average`): what is kept: the time average of the preferences
      so far (starting from the prior), or `previous_weights`.
    - `preference_floor` (0.01): each preference is raised to at least this, then
      renormalized, before smoothing (0: none). At most 1 / components.
    - `x_axis` (`total_tokens`): the n of each curve: tokens trained on so far, of every
      component, or `own_tokens`, the component's own.
    - `credit` (`share_times_rest`): sqrt(h (1 - h)), or `share`: sqrt(h).
    - `credit_smoothing` (0.9): the share of the old value kept in h_k, the moving average
      of each component's share of the tokens, at each update (h starts at the prior).
    - `fit_on` (`train`): fit the training loss, or `validation`: the validation losses
      given to `observe` (one point per component and validation).
    - `min_points` (3): a component's curve is fitted once it has this many points; until
      then it keeps its prior's preference. At least 3.
    - `huber_delta` (0.1): the Huber threshold on log-loss residuals. A point more than
      about 10% off the curve counts linearly, so a loss spike does not bend the fit.
    - `max_history` (200): points kept per component. Past it, every other point of the
      older half is dropped (the first point is kept), so the fit still spans the whole
      run with the recent points dense. At least `min_points`. The fit's cost grows with
      it: about 5 ms per component at 200 points, 40 ms at 1,000.

    Components without enough points (including those that never had a token) keep their
    prior's share of the preference; the fitted ones share the rest of it in proportion
    to their rho (all of it when every component is fitted). When every fitted rho is 0,
    they keep their prior's share too. Warm-up observations (`record`) add points and
    credit without deciding weights, so the curves start at step 0.
    """

    name = "ado"

    class Options(PolicyOptions):
        smoothing: float = Field(0.9, ge=0, lt=1)
        smoothing_base: Literal["time_average", "previous_weights"] = "time_average"
        preference_floor: float = Field(0.01, ge=0, lt=1)
        x_axis: Literal["total_tokens", "own_tokens"] = "total_tokens"
        credit: Literal["share_times_rest", "share"] = "share_times_rest"
        credit_smoothing: float = Field(0.9, ge=0, lt=1)
        fit_on: Literal["train", "validation"] = "train"
        min_points: int = Field(3, ge=3)
        huber_delta: float = Field(0.1, gt=0)
        max_history: int = Field(200, ge=3)

        @model_validator(mode="after")
        def _history_holds_a_fit(self) -> Ado.Options:
            if self.max_history < self.min_points:
                raise ValueError(
                    f"max_history ({self.max_history}) must be at least min_points "
                    f"({self.min_points})"
                )
            return self

    def __init__(self, names: list[str], prior: np.ndarray, options: PolicyOptions):
        super().__init__(names, prior, options)
        count = len(self.names)
        if self.options.preference_floor * count > 1:
            raise ConfigError(
                f"ado: preference_floor {self.options.preference_floor} x {count} components "
                f"is more than 1; use at most {1 / count:.4g}"
            )
        self.seen = np.zeros(count)  # tokens each component has had, since step 0
        self.total = 0.0  # tokens of every component, since step 0
        self.credit = self.prior.copy()  # h_k
        self.average = self.prior.copy()  # time average of the preferences
        self.history_tokens: list[list[float]] = [[] for _ in range(count)]  # n of the points
        self.history_loss: list[list[float]] = [[] for _ in range(count)]
        self.fits: list[PowerLawFit | None] = [None] * count  # of the latest update
        self.preference = self.prior.copy()  # floored rho of the latest update

    def record(self, observation: Observation) -> None:
        tokens = np.asarray(observation.tokens, dtype=np.float64)
        total = float(tokens.sum())
        if total > 0:
            keep = self.options.credit_smoothing
            self.credit = keep * self.credit + (1.0 - keep) * (tokens / total)
        if self.options.fit_on == "validation":
            for point in observation.validation:
                if self.options.x_axis == "own_tokens":
                    at = self.seen + point.tokens
                else:
                    at = np.full(len(self.names), self.total + float(point.tokens.sum()))
                for k in range(len(self.names)):
                    self._add_point(k, float(at[k]), float(point.loss[k]))
        mean = observation.mean_loss
        for k in range(len(self.names)):
            if not tokens[k] > 0:
                continue
            self.seen[k] += tokens[k]
            if self.options.fit_on == "train":
                at = self.seen[k] if self.options.x_axis == "own_tokens" else self.total + total
                self._add_point(k, float(at), float(mean[k]))
        self.total += total

    def _add_point(self, k: int, tokens: float, loss: float) -> None:
        if not (np.isfinite(loss) and loss > 0 and tokens > 0):
            return
        self.history_tokens[k].append(tokens)
        self.history_loss[k].append(loss)
        if len(self.history_tokens[k]) > self.options.max_history:
            half = len(self.history_tokens[k]) // 2
            keep = [i for i in range(len(self.history_tokens[k])) if i >= half or i % 2 == 0]
            self.history_tokens[k] = [self.history_tokens[k][i] for i in keep]
            self.history_loss[k] = [self.history_loss[k][i] for i in keep]

    def preferences(self) -> np.ndarray:
        """The floored, normalized preference from the points so far (refits every curve)."""
        rho = np.zeros(len(self.names))
        fitted = np.zeros(len(self.names), dtype=bool)
        for k in range(len(self.names)):
            self.fits[k] = None
            if len(self.history_tokens[k]) < self.options.min_points:
                continue
            fit = fit_power_law(
                np.array(self.history_tokens[k]),
                np.array(self.history_loss[k]),
                self.options.huber_delta,
            )
            self.fits[k] = fit
            if fit is not None:
                fitted[k] = True
                now = self.seen[k] if self.options.x_axis == "own_tokens" else self.total
                rho[k] = self.prior[k] * fit.speed(now) * self._credit(k)
        preference = self.prior.copy()
        mass, total = float(self.prior[fitted].sum()), float(rho[fitted].sum())
        if mass > 0 and total > 0 and np.isfinite(total):
            preference[fitted] = mass * rho[fitted] / total
        preference = preference / preference.sum()
        if self.options.preference_floor > 0:
            preference = np.maximum(preference, self.options.preference_floor)
            preference = preference / preference.sum()
        return preference

    def _credit(self, k: int) -> float:
        share = float(self.credit[k])
        if self.options.credit == "share_times_rest":
            return float(np.sqrt(share * (1.0 - share)))
        return float(np.sqrt(share))

    def update(self, observation: Observation) -> np.ndarray | None:
        self.record(observation)
        self.preference = self.preferences()
        keep = self.options.smoothing
        if self.options.smoothing_base == "previous_weights":
            return keep * self.weights + (1.0 - keep) * self.preference
        proposed = keep * self.average + (1.0 - keep) * self.preference
        # The preference stands for the steps of this observation, out of all so far.
        share = min(1.0, observation.steps / (observation.step + 1))
        self.average = (1.0 - share) * self.average + share * self.preference
        return proposed

    def state_dict(self) -> dict[str, Any]:
        return {
            "variant": {name: getattr(self.options, name) for name in VARIANT},
            "seen": self.seen.tolist(),
            "total": self.total,
            "credit": self.credit.tolist(),
            "average": self.average.tolist(),
            "history_tokens": [list(points) for points in self.history_tokens],
            "history_loss": [list(points) for points in self.history_loss],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = state.get("variant", EARLIER)  # no variant: saved by an earlier version
        wanted = {name: getattr(self.options, name) for name in VARIANT}
        if saved != wanted:
            differ = ", ".join(
                f"{name}: {saved.get(name)}" for name in VARIANT if saved.get(name) != wanted[name]
            )
            raise ConfigError(
                f"this ado state was saved with {differ}, which the mixture's policy does not "
                f"say; its history means something else under the current options: set {differ} "
                "in the policy to resume it"
            )
        self.seen = np.asarray(state["seen"], dtype=np.float64)
        self.total = float(state.get("total", self.seen.sum()))
        self.credit = np.asarray(state["credit"], dtype=np.float64)
        self.average = np.asarray(state.get("average", self.prior), dtype=np.float64)
        self.history_tokens = [[float(x) for x in points] for points in state["history_tokens"]]
        self.history_loss = [[float(x) for x in points] for points in state["history_loss"]]
