"""Power-law fits of a learning curve, L(n) = eps + beta * n^-alpha, as ADO uses them.

The fit is a deterministic grid search (see `fit_power_law`): no optimizer, no randomness,
so every rank fits the same bits from the same points.

Example:
    >>> n = np.array([625.0, 1250.0, 2500.0, 5000.0, 10000.0])
    >>> fit = fit_power_law(n, 2.0 + 300.0 * n**-0.5)
    >>> round(fit.eps, 9), round(fit.beta, 9), fit.alpha
    (2.0, 300.0, 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
