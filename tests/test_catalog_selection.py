"""Selections as ranges: compression of matches into maximal ranges, and the loader-facing API."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.catalog.sample import locate, spread_positions
from mixplane.catalog.selection import DatasetSelection, merge_runs, runs_of


@st.composite
def matches(draw) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """A random set of (shard, row) pairs with token counts, shuffled, and batch cut points."""
    pairs = draw(
        st.sets(st.tuples(st.integers(0, 4), st.integers(0, 60)), min_size=0, max_size=120)
    )
    pairs = draw(st.permutations(sorted(pairs)))
    tokens = draw(st.lists(st.integers(0, 1000), min_size=len(pairs), max_size=len(pairs)))
    cuts = sorted(draw(st.lists(st.integers(0, len(pairs)), max_size=4)))
    shard = np.array([p[0] for p in pairs], dtype=np.int64)
    row = np.array([p[1] for p in pairs], dtype=np.int64)
    return shard, row, np.array(tokens, dtype=np.int64), cuts


def part_from(runs, shards: int = 5) -> DatasetSelection:
    names = [f"shard-00000-{i:03d}" for i in range(shards)]
    return DatasetSelection.from_runs("d@1", "/data/d", names, *runs)


@settings(max_examples=200, deadline=None)
@given(matches())
def test_ranges_hold_exactly_the_matches_whatever_the_batching(data):
    shard, row, tokens, cuts = data
    bounds = [0, *cuts, len(row)]
    pieces = [
        runs_of(shard[a:b], row[a:b], tokens[a:b])
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    part = part_from(merge_runs(pieces))

    got_shard, got_row = part.document_indices()
    expected = sorted(zip(shard.tolist(), row.tolist(), strict=True))
    assert list(zip(got_shard.tolist(), got_row.tolist(), strict=True)) == expected
    assert part.documents == len(expected)
    assert part.tokens == int(tokens.sum())
    per_range = {}
    for s, r, t in zip(shard.tolist(), row.tolist(), tokens.tolist(), strict=True):
        per_range[(s, r)] = t
    for s, start, end, t in zip(
        part.shard, part.start, part.end, part.tokens_per_range, strict=True
    ):
        assert t == sum(per_range[(int(s), r)] for r in range(int(start), int(end)))
    # Maximal: consecutive ranges of one shard leave a gap.
    same = part.shard[1:] == part.shard[:-1]
    assert np.all(part.start[1:][same] > part.end[:-1][same])


def test_one_range_per_fully_selected_shard_and_small_memory():
    rows = np.arange(1_000_000)
    runs = runs_of(np.repeat(np.arange(4), 250_000), rows % 250_000, np.ones(1_000_000))
    part = part_from(runs, shards=4)
    assert part.ranges == 4
    assert part.documents == 1_000_000
    assert part.nbytes == 4 * (4 + 8 + 8 + 8)
    documents, tokens = part.per_shard()
    assert documents.tolist() == tokens.tolist() == [250_000] * 4


def test_loader_api_ranges_paths_and_pickling():
    part = DatasetSelection.from_runs(
        "web@2",
        "s3://bucket/tokens",
        ("shard-00000-000", "shard-00001-000"),
        shard=[0, 1, 1],
        start=[3, 0, 7],
        end=[5, 2, 8],
        tokens=[10, 4, 9],
        total_documents=100,
        total_tokens=1000,
    )
    assert list(part.iter_ranges()) == [
        ("s3://bucket/tokens/shard-00000-000", 3, 5, 10),
        ("s3://bucket/tokens/shard-00001-000", 0, 2, 4),
        ("s3://bucket/tokens/shard-00001-000", 7, 8, 9),
    ]
    assert part.document_counts().tolist() == [2, 2, 1]
    assert part.summary()["shards_touched"] == 2
    copy = pickle.loads(pickle.dumps(part))
    assert copy.dataset == "web@2" and copy.documents == 5 and copy.tokens == 23
    assert np.array_equal(copy.start, part.start)
    assert not part.start.flags.writeable


def test_sample_positions_spread_and_locate():
    assert spread_positions(5, 10).tolist() == [0, 1, 2, 3, 4]
    assert spread_positions(100, 4).tolist() == [12, 37, 62, 87]
    part = part_from((np.array([0, 2]), np.array([10, 4]), np.array([13, 6]), np.array([3, 2])))
    shard, index = locate(part, np.arange(5))
    assert list(zip(shard.tolist(), index.tolist(), strict=True)) == [
        (0, 10),
        (0, 11),
        (0, 12),
        (2, 4),
        (2, 5),
    ]
