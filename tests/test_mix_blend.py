"""The blend: exact prefixes for any weights, weight switches, and epoch caps."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.load.plan import SamplePlan
from mixplane.mix import Blend, MixtureSpec, MixtureTree, period_table, quantize
from mixplane.mix.blend import NO_CAP


def prefix_counts(components: np.ndarray, k: int) -> np.ndarray:
    """counts[n, c] = how often c appears among the first n+1 positions."""
    return np.cumsum(np.eye(k, dtype=np.int64)[components], axis=0)


def assert_exact_prefixes(components: np.ndarray, shares: np.ndarray) -> None:
    """Every prefix of N holds each component within one of N * share (exactly, in integers)."""
    period = int(shares.sum())
    counts = prefix_counts(components, len(shares))
    n = np.arange(1, len(components) + 1)[:, None]
    # |count - n * share / period| < 1  <=>  |count * period - n * share| < period
    assert np.all(np.abs(counts * period - n * shares[None, :]) < period)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, 400), min_size=1, max_size=9).filter(lambda s: sum(s) > 0))
def test_every_prefix_is_within_one_sequence_for_integer_weights(raw):
    weights = np.array(raw, dtype=float)
    shares = quantize(weights, 1 << 16)
    # Integer weights are simple fractions: the blend uses them exactly.
    assert [Fraction(int(s), int(shares.sum())) for s in shares] == [
        Fraction(r, sum(raw)) for r in raw
    ]
    blend = Blend([(0, weights)])
    length = 3 * int(shares.sum()) + 17
    components, indices = blend.lookup(np.arange(length))
    assert_exact_prefixes(components, shares)
    # Each component's sequences are taken in order 0, 1, 2...
    for c in range(len(raw)):
        assert indices[components == c].tolist() == list(range(int((components == c).sum())))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(1e-4, 1.0), min_size=1, max_size=7),
    st.sampled_from([1 << 8, 1 << 12, 1 << 14]),
)
def test_float_weights_round_to_the_resolution_and_stay_exact(raw, resolution):
    weights = np.array(raw) / sum(raw)
    shares = quantize(weights, resolution)
    period = int(shares.sum())
    assert period <= resolution
    assert np.all(shares >= 1)
    # Within one unit of the period, plus what tiny weights (floored at one share) took.
    assert np.all(np.abs(shares / period - weights) <= len(raw) / period + 1e-12)
    components, _ = Blend([(0, weights)], resolution=resolution).lookup(np.arange(period + 50))
    assert_exact_prefixes(components, shares)


def test_table_repeats_and_matches_random_access():
    shares = np.array([5, 3, 2])
    table, rank = period_table(shares)
    blend = Blend([(0, np.array([0.5, 0.3, 0.2]))])
    components, indices = blend.lookup(np.arange(40))
    assert components.tolist() == np.tile(table, 4).tolist()
    scattered = np.array([39, 0, 17, 3])
    again, again_indices = blend.lookup(scattered)
    assert again.tolist() == components[scattered].tolist()
    assert again_indices.tolist() == indices[scattered].tolist()
    assert blend.counts_before(40).tolist() == [20, 12, 8]
    assert blend.counts_before(13).tolist() == prefix_counts(components, 3)[12].tolist()


@settings(max_examples=100, deadline=None)
@given(
    first=st.lists(st.integers(1, 50), min_size=3, max_size=3),
    second=st.lists(st.integers(0, 50), min_size=3, max_size=3).filter(lambda s: sum(s) > 0),
    switch=st.integers(1, 300),
)
def test_a_weight_switch_holds_exactly_from_its_position_on(first, second, switch):
    blend = Blend([(0, np.array(first, float)), (switch, np.array(second, float))])
    components, indices = blend.lookup(np.arange(switch + 400))
    assert_exact_prefixes(components[:switch], quantize(np.array(first, float), 1 << 16))
    assert_exact_prefixes(components[switch:], quantize(np.array(second, float), 1 << 16))
    for c in range(3):
        assert indices[components == c].tolist() == list(range(int((components == c).sum())))


def test_capped_component_is_dropped_then_the_rest_renormalize():
    caps = np.array([10, NO_CAP, NO_CAP])
    blend = Blend([(0, np.array([0.5, 0.25, 0.25]))], caps=caps)
    components, _ = blend.lookup(np.arange(200))
    ran_out = blend.exhausted[0]
    assert (components == 0).sum() == 10
    assert components[ran_out - 1] == 0 or (components[:ran_out] == 0).sum() == 10
    assert np.all(components[ran_out:] != 0)
    assert_exact_prefixes(components[ran_out:], np.array([0, 1, 1]))


def test_capped_component_that_stops_ends_the_stream():
    stop = np.array([True, False])
    blend = Blend([(0, np.array([0.5, 0.5]))], caps=np.array([6, NO_CAP]), stop=stop)
    assert blend.length == 12  # the 7th sequence of component 0 would be at position 12
    components, _ = blend.lookup(np.arange(12))
    assert (components == 0).sum() == 6
    with pytest.raises(IndexError):
        blend.lookup(np.array([12]))


def plan_for(lengths, weights, seq_len=8, **fields):
    components = {f"c{i}": {"weight": w} | fields.get("extra", {}) for i, w in enumerate(weights)}
    spec = MixtureSpec.parse({"seq_len": seq_len, "components": components} | fields.get("top", {}))
    return SamplePlan(spec, MixtureTree(spec), [np.asarray(x) for x in lengths])


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    k=st.integers(1, 5),
)
def test_realized_token_shares_track_weights_for_random_component_sizes(data, k):
    weights = data.draw(st.lists(st.integers(1, 20), min_size=k, max_size=k))
    lengths = [
        data.draw(
            st.lists(st.integers(1, 40), min_size=1, max_size=60).filter(lambda x: sum(x) >= 8)
        )
        for _ in range(k)
    ]
    plan = plan_for(lengths, weights)
    positions = np.arange(500)
    components, indices = plan.blend.lookup(positions)
    shares = quantize(np.array(weights, float), 1 << 16)
    assert_exact_prefixes(components, shares)
    # Token shares equal sequence shares: every sequence holds seq_len tokens of one component.
    block = plan.block(positions[:64])
    lengths_per_row = np.bincount(block.spans.row, block.spans.stop - block.spans.begin)
    assert lengths_per_row.tolist() == [8] * 64
    assert np.all(block.span_component == block.components[block.spans.row])


def test_schedule_steps_count_global_batches():
    plan = plan_for(
        [[5] * 50, [5] * 50],
        [1, 1],
        top={
            "global_batch_size": 4,
            "schedule": [{"step": 10, "weights": {"c0": 0, "c1": 1}}],
        },
    )
    components, _ = plan.blend.lookup(np.arange(80))
    assert set(components[40:].tolist()) == {1}
    assert (components[:40] == 0).sum() == 20


def test_epoch_cap_on_a_component_drops_it_and_epochs_are_reported():
    plan = plan_for(
        [[8] * 10, [8] * 100],
        [1, 1],
        extra={"max_epochs": 2, "on_exhausted": "drop"},
    )
    assert plan.components[0].sequences_per_epoch == 10
    components, indices = plan.blend.lookup(np.arange(150))
    assert (components == 0).sum() == 20
    assert plan.epochs_at(150)[0] == pytest.approx(2.0)
    assert indices[components == 0].tolist() == list(range(20))
