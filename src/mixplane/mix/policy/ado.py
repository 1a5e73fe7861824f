"""ADO (Adaptive Data Optimization, Jiang et al. 2024): mix toward what is still learning fast.

Each component's loss is modelled as a power law of the tokens it has had,
L(n) = eps + beta * n^-alpha, refitted at every update to the (tokens so far, mean loss)
points seen since step 0 (warm-up included). Its learning speed is the negative slope at
the tokens it has had, alpha * beta * n^(-alpha-1): how much one more token of it would
lower its loss. The preference of component k is

    rho_k  proportional to  prior_k * speed_k * sqrt(h_k)

where h_k is a moving average of k's share of the tokens (credit: a component that had a
large share is the one whose own data lowered its loss). The new weights move a step
toward the normalized preference: `smoothing * weights + (1 - smoothing) * rho`.

The fit is a deterministic grid search (see `fit_power_law`): no optimizer, no randomness.

Example:
    >>> n = np.array([625.0, 1250.0, 2500.0, 5000.0, 10000.0])
    >>> fit = fit_power_law(n, 2.0 + 300.0 * n**-0.5)
    >>> round(fit.eps, 9), round(fit.beta, 9), fit.alpha
    (2.0, 300.0, 0.5)
    >>> policy = Ado(["a", "b"], np.array([0.5, 0.5]), Ado.Options(smoothing=0.5))
    >>> tokens = np.array([1000.0, 1000.0])
    >>> for step in range(3):  # "a" is still learning, "b" is flat
    ...     seen = 1000.0 * (step + 1)
    ...     mean_loss = np.array([2.0 + 300.0 * seen**-0.5, 5.0])
    ...     policy.weights = policy.update(Observation(step, 1, mean_loss * tokens, tokens))
    >>> policy.weights.round(3).tolist()
    [0.75, 0.25]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from mixplane.mix.policy.base import Observation, Policy, PolicyOptions

# The fit's grid, in integer steps so that a coarse point is exactly a fine one:
# alpha = i / 500 for i in 1..750 (0.002 .. 1.5); eps = min loss * j / 500 for j in
# 0..499 (0 .. 0.998 of the smallest loss seen). The coarse pass takes every 10th step of
# each (eps to 0.98); a fine pass every step within 10 of the best point so far.
_GRID = 500.0
_ALPHA_STEPS = 750
_EPS_STEPS = 499
_COARSE = 10
_MAX_MOVES = 20  # fine windows, each centred on the previous one's best


@dataclass(frozen=True)
class PowerLawFit:
    """L(n) = eps + beta * n^-alpha, and the Huber loss (in log space) it was chosen by."""

    eps: float
    beta: float
    alpha: float
    huber: float

    def loss(self, tokens: float) -> float:
        """The fitted loss after `tokens` tokens."""
        return self.eps + self.beta * tokens ** (-self.alpha)

    def speed(self, tokens: float) -> float:
        """The learning speed after `tokens` tokens: -dL/dn = alpha * beta * n^(-alpha-1)."""
        return self.alpha * self.beta * tokens ** (-self.alpha - 1.0)


def _huber(residuals: np.ndarray, delta: float) -> np.ndarray:
    """0.5 r^2 where |r| <= delta, delta * (|r| - delta / 2) beyond (`residuals` is reused)."""
    size = np.abs(residuals, out=residuals)
    inner = np.minimum(size, delta)
    # 0.5 m^2 + delta * (|r| - m) with m = min(|r|, delta)
    size -= inner
    size *= delta
    inner *= inner
    inner *= 0.5
    size += inner
    return size


def _search(
    log_n: np.ndarray,
    losses: np.ndarray,
    smallest: float,
    alpha_steps: np.ndarray,
    eps_steps: np.ndarray,
    delta: float,
) -> tuple[float, int, int, float]:
    """The best (score, alpha step, eps step, log beta) over a grid of steps."""
    alphas = alpha_steps / _GRID
    log_losses = np.log(losses)
    # log(L - eps) = log(beta) - alpha * log(n): the least-squares log(beta) is
    # mean(log(L - eps)) + alpha * mean(log(n)), so beta * n^-alpha is
    # exp(mean(log(L - eps))) * shape, with shape independent of eps.
    shape = np.exp(alphas[:, None] * (log_n.mean() - log_n)[None, :])
    best: tuple[float, int, int, float] = (np.inf, 0, 0, 0.0)
    for j in eps_steps:
        eps = smallest * (j / _GRID)
        mean_log_gap = float(np.log(losses - eps).mean())
        predicted = np.log(eps + np.exp(mean_log_gap) * shape)
        scores = _huber(log_losses[None, :] - predicted, delta).sum(axis=1)
        index = int(np.argmin(scores))
        if scores[index] < best[0]:
            log_beta = mean_log_gap + float(alphas[index] * log_n.mean())
            best = (float(scores[index]), int(alpha_steps[index]), int(j), log_beta)
    return best


def fit_power_law(
    tokens: np.ndarray, losses: np.ndarray, huber_delta: float = 0.1
) -> PowerLawFit | None:
    """Fit L(n) = eps + beta * n^-alpha to points (tokens[i], losses[i]).

    The residuals are log L - log(eps + beta n^-alpha), scored with a Huber loss of
    threshold `huber_delta`. Over a grid of alpha in (0, 1.5] and eps in [0, 0.998 * the
    smallest loss], beta is the least-squares fit of log(L - eps) = log beta - alpha log n
    (closed form); the grid point of least Huber loss wins, first on a coarse grid (steps
    of 0.02 in alpha, and of 0.02 of the smallest loss in eps up to 0.98 of it), then on a
    grid ten times finer in a window around the best point, moving the window to each
    better point it finds (at most 20 times; a flat curve fits with a speed near 0).
    Points need tokens > 0 and a loss > 0; with fewer than two, or all at the same number
    of tokens, there is nothing to fit (None).
    """
    tokens = np.asarray(tokens, dtype=np.float64)
    losses = np.asarray(losses, dtype=np.float64)
    keep = (tokens > 0) & (losses > 0) & np.isfinite(tokens) & np.isfinite(losses)
    tokens, losses = tokens[keep], losses[keep]
    if tokens.size < 2 or np.all(tokens == tokens[0]):
        return None
    log_n = np.log(tokens)
    smallest = float(losses.min())
    coarse_alpha = np.arange(_COARSE, _ALPHA_STEPS + 1, _COARSE)
    coarse_eps = np.arange(0, _EPS_STEPS, _COARSE)
    score, i, j, log_beta = _search(log_n, losses, smallest, coarse_alpha, coarse_eps, huber_delta)
    for _ in range(_MAX_MOVES):
        fine_alpha = np.arange(max(i - _COARSE, 1), min(i + _COARSE, _ALPHA_STEPS) + 1)
        fine_eps = np.arange(max(j - _COARSE, 0), min(j + _COARSE, _EPS_STEPS) + 1)
        found = _search(log_n, losses, smallest, fine_alpha, fine_eps, huber_delta)
        if found[0] >= score:
            break
        score, i, j, log_beta = found
    return PowerLawFit(
        eps=smallest * (j / _GRID), beta=float(np.exp(log_beta)), alpha=i / _GRID, huber=score
    )


class Ado(Policy):
    """ADO: weights toward the components whose fitted loss curves are still steep.

    Options (with their defaults):

    - `smoothing` (0.9): the share of the current weights kept at each update; the rest
      goes to the normalized preference. In [0, 1).
    - `credit_smoothing` (0.9): the share of the old value kept in h_k, the moving average
      of each component's share of the tokens (h starts at the prior). In [0, 1).
    - `min_points` (3): a component's curve is fitted once it has this many points (one per
      observation with its tokens); until then it keeps its prior's preference. At least 3.
    - `huber_delta` (0.1): the Huber threshold on log-loss residuals. A point more than
      about 10% off the curve counts linearly, so a loss spike does not bend the fit;
      mean losses over an update are usually much closer than that.
    - `max_history` (200): points kept per component. Past it, every other point of the
      older half is dropped (the first point is kept), so the fit still spans the whole
      run with the recent points dense. At least `min_points`. The fit's cost grows with
      it: about 5 ms per component at 200 points, 40 ms at 1,000.

    Components without enough points (including those that never had a token) keep their
    prior's share of the preference; the fitted ones share the rest of it in proportion
    to their rho (all of it when every component is fitted). When every fitted rho is 0,
    they keep their prior's share too.

    Warm-up observations (`record`) add points and credit without deciding weights, so
    the curves start at step 0.

    The caller floors the weights at every update (`min_weight` m over K components), and
    the next update starts from those, so a component the policy no longer prefers settles
    near m / (1 - smoothing * (1 - K m)), not at m: 0.079 for m = 0.01, K = 3 and the
    default smoothing.
    """

    name = "ado"

    class Options(PolicyOptions):
        smoothing: float = Field(0.9, ge=0, lt=1)
        credit_smoothing: float = Field(0.9, ge=0, lt=1)
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
        self.seen = np.zeros(count)  # tokens each component has had, since step 0
        self.credit = self.prior.copy()  # h_k
        self.history_tokens: list[list[float]] = [[] for _ in range(count)]
        self.history_loss: list[list[float]] = [[] for _ in range(count)]
        self.fits: list[PowerLawFit | None] = [None] * count  # of the latest update
        self.preference = self.prior.copy()  # normalized rho of the latest update

    def record(self, observation: Observation) -> None:
        tokens = np.asarray(observation.tokens, dtype=np.float64)
        mean = observation.mean_loss
        total = float(tokens.sum())
        if total > 0:
            keep = self.options.credit_smoothing
            self.credit = keep * self.credit + (1.0 - keep) * (tokens / total)
        for k in range(len(self.names)):
            if not tokens[k] > 0:
                continue
            self.seen[k] += tokens[k]
            if np.isfinite(mean[k]) and mean[k] > 0:
                self.history_tokens[k].append(float(self.seen[k]))
                self.history_loss[k].append(float(mean[k]))
                if len(self.history_tokens[k]) > self.options.max_history:
                    self._thin(k)

    def _thin(self, k: int) -> None:
        half = len(self.history_tokens[k]) // 2
        keep = [i for i in range(len(self.history_tokens[k])) if i >= half or i % 2 == 0]
        self.history_tokens[k] = [self.history_tokens[k][i] for i in keep]
        self.history_loss[k] = [self.history_loss[k][i] for i in keep]

    def preferences(self) -> np.ndarray:
        """The normalized preference rho from the points so far (refits every curve)."""
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
                rho[k] = self.prior[k] * fit.speed(self.seen[k]) * np.sqrt(self.credit[k])
        preference = self.prior.copy()
        mass, total = float(self.prior[fitted].sum()), float(rho[fitted].sum())
        if mass > 0 and total > 0 and np.isfinite(total):
            preference[fitted] = mass * rho[fitted] / total
        return preference / preference.sum()

    def update(self, observation: Observation) -> np.ndarray | None:
        self.record(observation)
        self.preference = self.preferences()
        keep = self.options.smoothing
        return keep * self.weights + (1.0 - keep) * self.preference

    def state_dict(self) -> dict[str, Any]:
        return {
            "seen": self.seen.tolist(),
            "credit": self.credit.tolist(),
            "history_tokens": [list(points) for points in self.history_tokens],
            "history_loss": [list(points) for points in self.history_loss],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.seen = np.asarray(state["seen"], dtype=np.float64)
        self.credit = np.asarray(state["credit"], dtype=np.float64)
        self.history_tokens = [[float(x) for x in points] for points in state["history_tokens"]]
        self.history_loss = [[float(x) for x in points] for points in state["history_loss"]]
