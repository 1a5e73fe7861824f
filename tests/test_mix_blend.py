"""The blend: exact prefixes for any weights, weight switches, and epoch caps."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mixplane.load.plan.samples import SamplePlan
from mixplane.mix import Blend, MixtureSpec, MixtureTree, exact_shares, period_table
from mixplane.mix.blend import NO_CAP
from mixplane.mix.split import TreeSplit, make_split


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
    shares = exact_shares(weights, 1 << 16)
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


def tree_bound(split: TreeSplit, c: int, n: int) -> float:
    """The documented bound: half a position per level of the tree, plus p's rounding."""
    depth = len(split.paths.get(c, []))
    return depth / 2 + n * depth * 2.0**-52 + 1e-9


irregular = st.lists(
    st.floats(1e-3, 1.0) | st.sampled_from([1e-6, 3e-7, 1 / 3, 0.1234567]),
    min_size=2,
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(irregular)
def test_any_weights_hold_every_prefix_within_half_a_position_per_tree_level(raw):
    weights = np.array(raw) / sum(raw)
    split = make_split(weights, 1 << 16)
    if not isinstance(split, TreeSplit):
        return  # simple fractions: the period table's test above
    blend = Blend([(0, weights)])
    length = 20_000
    components, indices = blend.lookup(np.arange(length))
    counts = prefix_counts(components, len(raw))
    n = np.arange(1, length + 1)[:, None]
    depth = np.array([len(split.paths[c]) for c in range(len(raw))])
    assert np.all(np.abs(counts - n * weights[None, :]) <= depth / 2 + 1e-9)
    for c in range(len(raw)):
        assert indices[components == c].tolist() == list(range(int((components == c).sum())))
    # Random access: a scattered slice and far positions agree with the counts.
    picked = np.array([19_999, 3, 12_345, 0, 7])
    again, again_indices = blend.lookup(picked)
    assert again.tolist() == components[picked].tolist()
    assert again_indices.tolist() == indices[picked].tolist()
    for far in (10**6 + 17, 10**9 + 3, 10**12 + 1):
        total = blend.counts_before(far)
        assert int(total.sum()) == far
        for c in range(len(raw)):
            assert abs(int(total[c]) - far * weights[c]) <= tree_bound(split, c, far)


def test_a_millionth_gets_its_millionth_of_a_billion():
    weights = np.array([1 - 1e-6, 1e-6])
    blend = Blend([(0, weights)])
    counts = blend.counts_before(10**9)
    assert counts.tolist() == [999_999_000, 1_000]
    ones = [n for n in (10**6, 2 * 10**6, 10**7) if blend.counts_before(n)[1] != n // 10**6]
    assert ones == []
    # Where its thousandth sequence is, by random access, and the counts around it.
    position = blend.segments[0].split.position_of_pick(1, 999)
    assert blend.lookup(np.array([position]))[0].tolist() == [1]
    assert blend.counts_before(position).tolist()[1] == 999


def test_many_tiny_temperature_weights_stay_within_two_positions():
    sizes = np.geomspace(1, 1e7, 50)
    weights = sizes**0.3 / (sizes**0.3).sum()  # temperature 1/0.3 over 50 sizes
    blend = Blend([(0, weights)])
    components, _ = blend.lookup(np.arange(50_000))
    counts = prefix_counts(components, 50)
    n = np.arange(1, 50_001)[:, None]
    assert np.abs(counts - n * weights[None, :]).max() <= 3.0  # depth 6: at most 3
    far = blend.counts_before(10**10)
    assert np.abs(far - 1e10 * weights).max() <= 3.0


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
    assert_exact_prefixes(components[:switch], exact_shares(np.array(first, float), 1 << 16))
    assert_exact_prefixes(components[switch:], exact_shares(np.array(second, float), 1 << 16))
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
    shares = exact_shares(np.array(weights, float), 1 << 16)
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


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 400), st.lists(st.floats(0.0, 1.0), min_size=3, max_size=3)),
        min_size=1,
        max_size=6,
    ),
    st.lists(st.sampled_from([NO_CAP, 40, 90]), min_size=3, max_size=3),
    st.booleans(),
)
@example(steps=[(1, [1e-308, 0.0, 1.0])], caps=[40, NO_CAP, NO_CAP], stop=True)
@example(
    steps=[(1, [1.0, 2.2250738585072014e-308, 0.015625])], caps=[NO_CAP, 40, NO_CAP], stop=True
)
def test_a_blend_grown_a_switch_at_a_time_equals_one_built_at_once(steps, caps, stop):
    """An adaptive mixture adds switches one by one, each blend reusing the last one's
    unchanged segments; the result is the blend built from all the switches."""
    switches = [(0, np.array([0.5, 0.3, 0.2]))]
    position = 0
    for gap, weights in steps:
        position += gap
        if sum(weights) > 0:
            switches.append((position, np.array(weights)))
    arguments = {"caps": np.array(caps), "stop": np.array([stop, False, False])}
    grown = Blend(switches[:1], **arguments)
    for count in range(2, len(switches) + 1):
        grown = Blend(switches[:count], reuse=grown, **arguments)
    whole = Blend(switches, **arguments)
    assert grown.length == whole.length and grown.exhausted == whole.exhausted
    assert [(s.start, s.end) for s in grown.segments] == [(s.start, s.end) for s in whole.segments]
    # Past the last switch the blend repeats; a tiny weight on a stopping component can put
    # its end ~2^52 sequences away, so compare up to the end or 500 past the last switch.
    end = min(whole.length or position + 500, position + 500)
    for got, want in zip(grown.lookup(np.arange(end)), whole.lookup(np.arange(end)), strict=True):
        assert got.tolist() == want.tolist()
    # A switch replaced (not appended) rebuilds from it.
    if len(switches) > 2:
        changed = switches[:1] + [(switches[1][0], np.array([0.1, 0.1, 0.8]))] + switches[2:]
        again = Blend(changed, reuse=whole, **arguments)
        fresh = Blend(changed, **arguments)
        end = min(fresh.length or position + 500, position + 500)
        assert again.lookup(np.arange(end))[0].tolist() == fresh.lookup(np.arange(end))[0].tolist()
