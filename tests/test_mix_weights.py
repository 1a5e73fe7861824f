"""Weight math: temperature, UniMax (against the published numbers) and epoch caps."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.errors import ConfigError
from mixplane.mix import cap_by_epochs, normalize, temperature_weights, unimax_weights
from mixplane.mix.weights import unimax_allotments

sizes_strategy = st.lists(st.integers(1, 10**12), min_size=1, max_size=12)
# Any finite weights >= 0, from subnormal to the largest float, at least one of them > 0.
finite_weights = st.lists(
    st.floats(0.0, 1.7976931348623157e308, allow_subnormal=True),
    min_size=1,
    max_size=8,
).filter(lambda weights: max(weights) > 0)


@settings(max_examples=300, deadline=None)
@given(weights=finite_weights)
def test_normalize_keeps_any_finite_weights_in_proportion(weights):
    """The result is what exact arithmetic gives, rounded: no overflow near the float
    range's end (whose sum is inf), no underflow of tiny weights beside large ones."""
    result = normalize(weights)
    exact_total = sum(Fraction(w) for w in weights)
    expected = [float(Fraction(w) / exact_total) for w in weights]
    assert np.all(np.isfinite(result)) and np.all(result >= 0)
    assert math.fsum(result) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-300)


def test_normalize_huge_weights_is_not_uniform():
    assert normalize([1e308, 1e308, 1, 1]).tolist() == [0.5, 0.5, 5e-309, 5e-309]
    assert normalize([1.7976931348623157e308] * 3) == pytest.approx([1 / 3] * 3)


def test_unimax_matches_the_reference_allotments():
    sizes = np.array([179955884499, 184595788282, 42541080893, 10027573389, 549707867], float)
    allotted = unimax_allotments(sizes, budget=250e9, max_epochs=4)
    assert allotted[4] == pytest.approx(2198831468)
    assert allotted[3] == pytest.approx(40110293556)
    assert allotted[:3] == pytest.approx([69230291658.67] * 3)
    weights = unimax_weights(sizes, budget=250e9, max_epochs=4)
    assert weights == pytest.approx(allotted / 250e9)


def test_temperature_one_is_natural_and_large_is_uniform():
    sizes = np.array([500.0, 300.0, 200.0])
    assert temperature_weights(sizes, 1.0) == pytest.approx([0.5, 0.3, 0.2])
    assert temperature_weights(sizes, 1e9) == pytest.approx([1 / 3] * 3)
    # mT5-style tau = 3.3: p_i proportional to q_i^(1/3.3).
    expected = (sizes / sizes.sum()) ** (1 / 3.3)
    assert temperature_weights(sizes, 3.3) == pytest.approx(expected / expected.sum())


@settings(max_examples=200, deadline=None)
@given(sizes=sizes_strategy, temperature=st.floats(0.05, 100))
def test_temperature_weights_are_a_distribution_ordered_like_sizes(sizes, temperature):
    weights = temperature_weights(sizes, temperature)
    assert weights.sum() == pytest.approx(1.0)
    assert np.all(weights > 0)
    order = np.argsort(sizes, kind="stable")
    assert np.all(np.diff(weights[order]) >= -1e-12)


@settings(max_examples=200, deadline=None)
@given(sizes=sizes_strategy, epochs=st.floats(0.5, 10), share=st.floats(0.01, 1.0))
def test_unimax_never_exceeds_the_cap_and_spends_the_budget(sizes, epochs, share):
    sizes = np.array(sizes, dtype=float)
    budget = share * epochs * sizes.sum()
    allotted = unimax_allotments(sizes, budget, epochs)
    assert np.all(allotted <= epochs * sizes * (1 + 1e-9))
    assert allotted.sum() == pytest.approx(budget, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    weights=st.lists(st.floats(0.01, 1), min_size=1, max_size=8),
    data=st.data(),
    epochs=st.floats(0.5, 4),
)
def test_capped_weights_respect_every_cap(weights, data, epochs):
    sizes = np.array(
        data.draw(st.lists(st.integers(1, 10**6), min_size=len(weights), max_size=len(weights))),
        dtype=float,
    )
    budget = epochs * sizes.sum() * data.draw(st.floats(0.05, 1.0))
    capped = cap_by_epochs(weights, sizes, budget, epochs)
    assert capped.sum() == pytest.approx(1.0)
    assert np.all(capped * budget <= epochs * sizes * (1 + 1e-6))


def test_caps_redistribute_to_the_others_in_proportion():
    assert cap_by_epochs([0.5, 0.25, 0.25], [10, 1000, 1000], 100, 1.0) == pytest.approx(
        [0.1, 0.45, 0.45]
    )


def test_impossible_budgets_and_bad_weights_are_clear():
    with pytest.raises(ConfigError, match="less than total_tokens"):
        unimax_weights([10, 10], budget=100, max_epochs=2)
    with pytest.raises(ConfigError, match="must sum to a positive number"):
        normalize([0, 0], ["a", "b"])
    with pytest.raises(ConfigError, match=r"finite numbers >= 0, got a=-1, b=2"):
        normalize([-1, 2], ["a", "b"])
    with pytest.raises(ConfigError, match="finite"):
        normalize([float("nan"), 1])
