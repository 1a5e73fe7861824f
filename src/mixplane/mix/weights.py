"""Weight math over token counts: normalizing, temperature, UniMax and epoch caps.

All functions are pure and take numpy arrays of per-component token counts (`sizes`).

Example:
    >>> temperature_weights([900, 100], temperature=1.0).round(2).tolist()
    [0.9, 0.1]
    >>> temperature_weights([900, 100], temperature=1e9).round(2).tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mixplane.errors import ConfigError


def normalize(weights: Sequence[float] | np.ndarray, names: Sequence[str] = ()) -> np.ndarray:
    """Weights scaled to sum to 1; negative, non-finite or all-zero weights are an error.

    Any finite weights work, however large or small: `normalize([1e308, 1e308, 1, 1])` is
    [0.5, 0.5, 5e-309, 5e-309].

    Example:
        >>> normalize([5, 3, 2]).tolist()
        [0.5, 0.3, 0.2]
    """
    values = np.asarray(weights, dtype=np.float64)
    label = (
        ", ".join(f"{n}={w:g}" for n, w in zip(names, values, strict=True))
        if names
        else str(values)
    )
    if values.size == 0:
        raise ConfigError("no weights to normalize")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ConfigError(f"weights must be finite numbers >= 0, got {label}")
    largest = values.max()
    if largest <= 0:
        raise ConfigError(f"weights must sum to a positive number, got {label}")
    # Scaled by the largest first, so that finite weights near the float range's end do not
    # overflow their sum (1e308 + 1e308 is inf); the scaled ones sum to at most their count.
    scaled = values / largest
    return scaled / scaled.sum()


def temperature_weights(sizes: Sequence[float] | np.ndarray, temperature: float) -> np.ndarray:
    """p_i = q_i^(1/T) / sum_j q_j^(1/T) with q the token shares; T = 1 is natural."""
    if temperature <= 0:
        raise ConfigError(f"temperature must be > 0, got {temperature}")
    shares = normalize(sizes)
    # Work in logs so tiny shares and large exponents neither underflow nor overflow.
    with np.errstate(divide="ignore"):
        logits = np.log(shares) / temperature
    logits -= logits[np.isfinite(logits)].max()
    return normalize(np.exp(logits))


def unimax_weights(
    sizes: Sequence[float] | np.ndarray, budget: float, max_epochs: float
) -> np.ndarray:
    """UniMax: spread `budget` tokens uniformly, no component beyond `max_epochs` passes.

    Smallest components first: each takes min(remaining budget / components left,
    max_epochs * its size); weights are the allotments, normalized.

    Example:
        >>> unimax_weights([100, 1000, 1000], budget=1500, max_epochs=2).round(4).tolist()
        [0.1333, 0.4333, 0.4333]
    """
    tokens = np.asarray(sizes, dtype=np.float64)
    _check_budget(tokens, budget, max_epochs)
    return normalize(unimax_allotments(tokens, budget, max_epochs))


def unimax_allotments(sizes: np.ndarray, budget: float, max_epochs: float) -> np.ndarray:
    """Tokens each component gets under UniMax (before normalizing)."""
    allotted = np.zeros(len(sizes), dtype=np.float64)
    remaining = float(budget)
    # A stable sort keeps ties in declaration order, so equal sizes get equal treatment.
    order = np.argsort(sizes, kind="stable")
    for left, index in zip(range(len(order), 0, -1), order, strict=True):
        share = min(remaining / left, max_epochs * float(sizes[index]))
        allotted[index] = share
        remaining -= share
    return allotted


def cap_by_epochs(
    weights: Sequence[float] | np.ndarray,
    sizes: Sequence[float] | np.ndarray,
    budget: float,
    max_epochs: float,
) -> np.ndarray:
    """Lower any weight whose tokens would exceed `max_epochs` passes over `budget` tokens.

    What a capped component gives up goes to the others in proportion to their weights.

    Example:
        >>> cap_by_epochs([0.5, 0.5], [100, 1000], budget=1000, max_epochs=2).tolist()
        [0.2, 0.8]
    """
    wanted = normalize(weights)
    tokens = np.asarray(sizes, dtype=np.float64)
    _check_budget(tokens, budget, max_epochs)
    limits = max_epochs * tokens / budget
    capped = np.zeros(len(wanted), dtype=bool)
    result = wanted.copy()
    while True:
        over = ~capped & (result > limits * (1 + 1e-12))
        if not over.any():
            return normalize(result)
        capped |= over
        result[capped] = limits[capped]
        free = ~capped
        if wanted[free].sum() <= 0:
            raise ConfigError(
                f"weights cannot respect max_epochs {max_epochs:g}: every component with "
                "weight left is capped; raise max_epochs or lower total_tokens"
            )
        rest = 1.0 - result[capped].sum()
        result[free] = wanted[free] / wanted[free].sum() * rest


def _check_budget(sizes: np.ndarray, budget: float, max_epochs: float) -> None:
    if budget <= 0:
        raise ConfigError(f"total_tokens must be > 0, got {budget:g}")
    if max_epochs <= 0:
        raise ConfigError(f"max_epochs must be > 0, got {max_epochs:g}")
    supply = max_epochs * float(sizes.sum())
    if supply < budget:
        raise ConfigError(
            f"the components hold {sizes.sum():,.0f} tokens; at {max_epochs:g} epochs they "
            f"supply {supply:,.0f}, less than total_tokens {budget:,.0f}: raise max_epochs "
            "or lower total_tokens"
        )
