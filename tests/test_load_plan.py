"""The pure sample plan: packing, partitions over ranks and workers, and a pinned stream."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mixplane.errors import ConfigError
from mixplane.load import Layout
from mixplane.load.plan.packing import PackedComponent, windowed_permutation
from mixplane.load.plan.ranges import (
    DocumentRanges,
    difference,
    intersection_size,
    merge,
    overlaps,
    union,
)
from mixplane.mix import Blend


def digest(array: np.ndarray, dtype: str) -> str:
    return hashlib.sha256(np.asarray(array).astype(dtype).tobytes()).hexdigest()[:16]


def test_the_stream_is_pinned_across_machines_and_versions():
    """Same seed, same stream anywhere: these digests must never change silently."""
    components, _ = Blend([(0, np.array([0.5, 0.3, 0.2]))]).lookup(np.arange(1000))
    assert digest(components, "<i4") == "eef1dbabefc5f49c"
    uneven = np.array([1 / 3, 0.123456, 1 - 1 / 3 - 0.123456])
    components, _ = Blend([(0, uneven)]).lookup(np.arange(100_000))
    assert digest(components, "<i4") == "4046d4c7bf19312c"
    packed = PackedComponent(np.arange(1, 1001), seq_len=64, seed=1234, key="wiki")
    assert digest(packed.order(0)[0], "<i8") == "bcf711dc2b1c1149"
    assert digest(packed.order(3)[0], "<i8") == "12853547c6c0a66c"
    spans = packed.spans(np.arange(50))
    pieces = np.concatenate([spans.document, spans.begin, spans.stop])
    assert digest(pieces, "<i8") == "8e8aac93bb585f53"


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 300), min_size=1, max_size=80).filter(lambda x: sum(x) >= 16),
    seq_len=st.integers(1, 64),
    seed=st.integers(0, 2**32),
    epoch=st.integers(0, 3),
)
def test_packing_cuts_the_shuffled_concatenation_exactly(lengths, seq_len, seed, epoch):
    assume(sum(lengths) >= seq_len)
    packed = PackedComponent(np.array(lengths), seq_len, seed, "c")
    per_epoch = packed.sequences_per_epoch
    assert per_epoch == sum(lengths) // seq_len
    order, _ = packed.order(epoch)
    # Reference: token (document, position) pairs laid end to end in the epoch's order.
    stream = [(d, t) for d in order.tolist() for t in range(lengths[d])]
    indices = np.arange(epoch * per_epoch, (epoch + 1) * per_epoch)
    spans = packed.spans(indices)
    for row in range(per_epoch):
        mine = spans.row == row
        got = [
            (d, t)
            for d, b, e in zip(
                spans.document[mine], spans.begin[mine], spans.stop[mine], strict=True
            )
            for t in range(b, e)
        ]
        assert got == stream[row * seq_len : (row + 1) * seq_len]
        assert (
            spans.column[mine].tolist()
            == np.cumsum(np.concatenate([[0], (spans.stop - spans.begin)[mine][:-1]])).tolist()
        )


def test_each_epoch_and_seed_shuffles_differently():
    lengths = np.full(200, 10)
    a = PackedComponent(lengths, 32, seed=1, key="wiki")
    b = PackedComponent(lengths, 32, seed=2, key="wiki")
    c = PackedComponent(lengths, 32, seed=1, key="code")
    orders = [a.order(0)[0], a.order(1)[0], b.order(0)[0], c.order(0)[0]]
    for i in range(len(orders)):
        assert sorted(orders[i].tolist()) == list(range(200))
        for j in range(i + 1, len(orders)):
            assert not np.array_equal(orders[i], orders[j])
    assert np.array_equal(PackedComponent(lengths, 32, 1, "wiki").order(1)[0], orders[1])


@settings(max_examples=200, deadline=None)
@given(
    world=st.integers(1, 6),
    workers=st.integers(1, 4),
    block=st.integers(1, 5),
    start=st.integers(0, 40),
    base=st.integers(0, 100),
)
def test_ranks_and_workers_split_the_stream_exactly(world, workers, block, start, base):
    taken = []
    for rank in range(world):
        for worker in range(workers):
            layout = Layout(rank, world, workers, worker, block)
            local = layout.owned(start, 30)
            assert np.all(np.diff(local) > 0) and local[0] >= start
            taken.append(layout.positions(base, local))
    positions = np.concatenate(taken)
    assert len(np.unique(positions)) == len(positions)
    # Everything from the start up to the shortest reader's reach is covered.
    reach = min(int(t.max()) for t in taken)
    expected = np.arange(base + start * world, reach + 1)
    assert np.isin(expected, positions).all()


def test_workers_take_whole_batches_in_turn():
    rank_stream = [Layout(0, 1, 3, w, 4).owned(0, 8).tolist() for w in range(3)]
    assert rank_stream == [
        [0, 1, 2, 3, 12, 13, 14, 15],
        [4, 5, 6, 7, 16, 17, 18, 19],
        [8, 9, 10, 11, 20, 21, 22, 23],
    ]
    assert Layout(0, 4).local_limit(base=10, length=30) == 5
    with pytest.raises(ConfigError, match="worker 2 of 2"):
        Layout(0, 1, 2, 2)


intervals = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=25).map(
    lambda pairs: merge(
        np.array([lo for lo, _ in pairs], dtype=np.int64),
        np.array([lo + size for lo, size in pairs], dtype=np.int64),
    )
)


@settings(max_examples=300, deadline=None)
@given(a=intervals, b=intervals)
def test_overlap_test_agrees_with_the_exact_intersection(a, b):
    points_a = {p for lo, hi in zip(*a, strict=True) for p in range(lo, hi)}
    points_b = {p for lo, hi in zip(*b, strict=True) for p in range(lo, hi)}
    assert intersection_size(a, b) == len(points_a & points_b)
    assert overlaps(a, b) == overlaps(b, a) == bool(points_a & points_b)


def test_range_sets():
    keys = [("/d", "s0"), ("/d", "s1")]
    numbering = {k: i for i, k in enumerate(keys)}
    a = DocumentRanges.build(keys, [0, 1], [0, 5], [10, 8]).line(numbering)
    b = DocumentRanges.build(keys, [0, 1], [8, 0], [20, 6]).line(numbering)
    assert intersection_size(a, b) == 2 + 1
    rest = DocumentRanges.from_line(*difference(a, b), numbering)
    assert (rest.shard.tolist(), rest.start.tolist(), rest.end.tolist()) == ([0, 1], [0, 6], [8, 8])
    both = union(a, b)
    assert int((both[1] - both[0]).sum()) == 10 + 3 + 12 + 6 - 3
    lengths = DocumentRanges.build(keys, [1, 0], [2, 0], [4, 2]).gather(
        lambda shard: np.arange(100) * (10 if shard else 1)
    )
    assert lengths.tolist() == [20, 30, 0, 1]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(1, 12)), min_size=1, max_size=20),
    st.integers(1, 4),
    st.integers(0, 2**32 - 1),
)
def test_a_shuffle_window_visits_shards_a_window_at_a_time(runs, window, seed):
    """Runs of documents by shard (a shard may have several runs): the order is a
    permutation, each window of the order holds documents of at most `window` shards, and
    every shard's documents are read within one window."""
    groups = np.array([g for g, _ in runs])
    counts = np.array([c for _, c in runs])
    shard_of = np.repeat(groups, counts)
    order = windowed_permutation(np.random.default_rng(seed), groups, counts, window)
    assert sorted(order.tolist()) == list(range(counts.sum()))
    visited = shard_of[order]
    # Cut the order where a new shard appears for the (window+1)-th time in a window.
    seen: list[int] = []
    windows: list[set[int]] = [set()]
    for shard in visited.tolist():
        if shard not in windows[-1] and len(windows[-1]) == window:
            windows.append(set())
        windows[-1].add(shard)
        seen.append(len(windows) - 1)
    for shard in set(groups.tolist()):
        assert len({w for w, s in zip(seen, visited.tolist(), strict=True) if s == shard}) == 1


def test_a_shuffle_window_is_seeded_and_differs_by_epoch():
    runs = (np.array([0, 1, 2, 3]), np.array([5, 5, 5, 5]))
    one = PackedComponent(np.full(20, 7), 4, seed=3, key="web", runs=runs, window=2)
    two = PackedComponent(np.full(20, 7), 4, seed=3, key="web", runs=runs, window=2)
    assert np.array_equal(one.order(0)[0], two.order(0)[0])
    assert not np.array_equal(one.order(0)[0], one.order(1)[0])
    first = set((one.order(0)[0][:10] // 5).tolist())
    assert len(first) == 2  # the first window: two shards' documents, all of them
    with pytest.raises(ValueError, match="runs of shards"):
        PackedComponent(np.full(20, 7), 4, seed=3, key="web", window=2)


def test_an_epoch_cap_beyond_any_stream_is_no_cap():
    """A cap of 4.75e307 epochs overflowed to a 500 in the service's preview."""
    from mixplane.load.plan.samples import SamplePlan
    from mixplane.mix import MixtureSpec, MixtureTree
    from mixplane.mix.blend import NO_CAP

    spec = MixtureSpec.parse(
        {"seq_len": 4, "components": {"a": {"weight": 1.0, "max_epochs": 4.75e307}}}
    )
    plan = SamplePlan(spec, MixtureTree(spec), [np.full(10, 3)])
    assert plan.caps.tolist() == [NO_CAP]
