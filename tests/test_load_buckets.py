"""Bucketing math and the document stream of unpacked mixtures, as pure functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.errors import ConfigError
from mixplane.load.plan.buckets import (
    BatchPlan,
    bucket_batches,
    greedy_cuts,
    padded,
    split_to_multiple,
)
from mixplane.load.plan.documents import DocumentStream
from mixplane.mix import MixtureSpec, MixtureTree


@st.composite
def windows(draw):
    world = draw(st.integers(1, 5))
    multiple = draw(st.sampled_from([1, 2, 8, 64]))
    longest = draw(st.integers(1, 600))
    budget = draw(st.integers(int(padded(longest, multiple)), 4 * int(padded(longest, multiple))))
    steps = draw(st.integers(0, 30))
    lengths = draw(
        st.lists(st.integers(1, longest), min_size=steps * world, max_size=steps * world)
    )
    return np.array(lengths, dtype=np.int64), budget, multiple, world


@settings(max_examples=200, deadline=None)
@given(windows(), st.integers(0, 2**32 - 1))
def test_bucketed_batches_cover_the_window_once_within_the_budget(case, seed):
    lengths, budget, multiple, world = case
    batches = bucket_batches(lengths, budget, multiple, world, [seed])
    assert len(batches) % world == 0
    taken = np.concatenate(batches) if batches else np.zeros(0, dtype=np.int64)
    assert sorted(taken.tolist()) == list(range(len(lengths)))  # each document once
    for batch in batches:
        assert len(batch) >= 1
        width = int(padded(lengths[batch].max(), multiple))
        assert width % multiple == 0 and width >= lengths[batch].max()
        assert len(batch) * width <= budget
    again = bucket_batches(lengths, budget, multiple, world, [seed])
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 64), min_size=1, max_size=200), st.integers(64, 1000))
def test_greedy_batches_are_full_each_takes_all_that_fits(lengths, budget):
    rounded = np.sort(np.array(lengths, dtype=np.int64))
    cuts = greedy_cuts(rounded, budget)
    ends = [*cuts[1:].tolist(), len(rounded)]
    for start, end in zip(cuts.tolist(), ends, strict=True):
        assert (end - start) * rounded[end - 1] <= budget
        if end < len(rounded):  # one more sample would not have fitted
            assert (end - start + 1) * rounded[end] > budget


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 40), st.data())
def test_splitting_reaches_a_multiple_of_the_world_size(world, steps, data):
    n = world * steps
    cuts = (
        sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=n)) + [0])) if n > 1 else [0]
    )
    split = split_to_multiple(np.array(cuts), n, world)
    assert len(split) % world == 0 and set(cuts) <= set(split.tolist())
    assert np.all(np.diff([*split.tolist(), n]) >= 1)


def test_similar_lengths_share_a_batch():
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.lognormal(np.log(300), 0.8, 4096), 1, 4096).astype(np.int64)
    batches = bucket_batches(lengths, 16384, 8, 2, [1])
    pads = sum(len(b) * int(padded(lengths[b].max(), 8)) - int(lengths[b].sum()) for b in batches)
    assert pads / sum(len(b) * int(padded(lengths[b].max(), 8)) for b in batches) < 0.05
    # Naive batches of the same documents in stream order pad far more.
    naive = np.arange(4096).reshape(-1, 32)
    naive_pads = sum(len(b) * lengths[b].max() - lengths[b].sum() for b in naive)
    assert naive_pads > 10 * pads


def test_a_window_is_whole_steps_and_the_stream_end_is_cut_to_them():
    plan = BatchPlan(world_size=3, window=10, seed=0, budget=100, length=25)
    assert plan.window_size == 12
    assert plan.window_positions(0).tolist() == list(range(12))
    assert plan.window_positions(1).tolist() == list(range(12, 24))  # 24 is left out
    assert len(plan.window_positions(2)) == 0
    fixed = BatchPlan(world_size=2, window=10, seed=0, batch_size=4, base=5, length=40)
    assert fixed.window_size == 16 and fixed.window_positions(1).tolist() == list(range(21, 37))
    window = fixed.plan_window(1, np.ones(16, dtype=np.int64))
    assert window.steps == 2 and window.batch(1, 1).tolist() == [33, 34, 35, 36]
    with pytest.raises(ValueError, match="not both"):
        BatchPlan(world_size=1, window=4, seed=0, batch_size=2, budget=10)


def spec(weights: dict, **fields) -> MixtureSpec:
    components = {name: {"weight": w} for name, w in weights.items()}
    return MixtureSpec.parse({"seq_len": 100, "packing": "none", "components": components} | fields)


def test_token_weights_become_document_weights_by_mean_length():
    mixture = spec({"short": 0.5, "long": 0.5})
    stream = DocumentStream(mixture, MixtureTree(mixture), [np.full(50, 10), np.full(50, 400)])
    # Long documents are cut to seq_len 100: 10x the short ones, so 1/10 as many of them.
    assert np.allclose(stream.document_weights, [10 / 11, 1 / 11])
    components, _, lengths = stream.lookup(np.arange(1100))
    tokens = np.bincount(components, weights=lengths)
    assert np.allclose(tokens / tokens.sum(), [0.5, 0.5], atol=0.01)
    assert lengths.max() == 100


def test_each_epoch_hands_out_every_document_once_in_a_new_order():
    mixture = spec({"a": 1.0}, seed=4)
    rng = np.random.default_rng(1)
    stream = DocumentStream(mixture, MixtureTree(mixture), [rng.integers(1, 90, 37)])
    _, documents, _ = stream.lookup(np.arange(74))
    assert sorted(documents[:37].tolist()) == sorted(documents[37:].tolist()) == list(range(37))
    assert documents[:37].tolist() != documents[37:].tolist()
    with pytest.raises(ConfigError, match="without tokens"):
        DocumentStream(mixture, MixtureTree(mixture), [np.array([3, 0])])
