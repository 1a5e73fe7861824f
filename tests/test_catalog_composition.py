"""Numeric compositions and histograms: which bucket a value is counted in, and what the
bucket's label says, checked against the numbers themselves."""

from __future__ import annotations

import bisect
import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.catalog import Catalog
from mixplane.catalog.composition import (
    NONPOSITIVE,
    _bucket,
    bucket_edges,
    composition,
    exact,
    histogram,
)
from mixplane.catalog.predicate import PredicateError
from mixplane.catalog.synthetic import write_metadata_shards


def expected_bucket(edges: list[float], value: float) -> int:
    """The bucket whose label holds `value`: `[low, high)`, the last one `[low, high]`."""
    if value == edges[-1]:
        return len(edges) - 2
    return bisect.bisect_right(edges, value) - 1


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    """A catalog of 21 documents scored 0, 0.05, ..., 1 (every other one on a tenth), plus
    two with no score; `n_tokens` is the document's number, so sums tell which ones."""
    folder = tmp_path_factory.mktemp("scores")
    values = [i / 20 for i in range(21)] + [None, None]
    table = pa.table(
        {
            "id": [f"d{i}" for i in range(len(values))],
            "n_tokens": pa.array(range(1, len(values) + 1), pa.int64()),
            "score": pa.array(values, pa.float64()),
            "size": pa.array([0, 0, 1, 10, 100, 1000, 5] * 3 + [7, 70], pa.int64()),
        }
    )
    write_metadata_shards(str(folder / "data"), [table])
    catalog = Catalog(folder / "catalog.duckdb")
    catalog.register(str(folder / "data"), "scores")
    return catalog


def test_the_last_bucket_is_closed_and_edge_values_start_their_bucket(scores):
    with scores.session() as session:
        answer = composition(session, "score", bins=10)
    labels = [group["value"] for group in answer["groups"]]
    tenths = ["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"]
    assert labels == [f"[{a}, {b})" for a, b in zip(tenths[:-2], tenths[1:-1], strict=True)] + [
        "[0.9, 1]",
        "(null)",
    ]
    counts = [group["documents"] for group in answer["groups"]]
    # 0 and 0.05 in the first; ...; 0.9, 0.95 and 1 in the last; the two without a score.
    assert counts == [2] * 9 + [3, 2]
    last = answer["groups"][-2]
    assert (last["low"], last["high"], last["tokens"]) == (0.9, 1.0, 19 + 20 + 21)


def test_histogram_buckets_hold_what_their_edges_say(scores):
    with scores.session() as session:
        answer = histogram(session, "score", bins=7)
    values = [i / 20 for i in range(21)]
    edges = [b["low"] for b in answer["bins"]] + [answer["bins"][-1]["high"]]
    assert edges[0] == 0 and edges[-1] == 1
    counts = [0] * 7
    for value in values:
        counts[expected_bucket(edges, value)] += 1
    assert [b["documents"] for b in answer["bins"]] == counts
    assert answer["nulls"] == {"documents": 2, "tokens": 22 + 23}


def test_log_scale_buckets_positive_values_and_counts_the_rest(scores):
    with scores.session() as session:
        answer = composition(session, "size", bins=3, scale="log")
        linear = histogram(session, "size", bins=3)
        by_value = composition(session, "id", where="size = 7", scale="log")
        with pytest.raises(PredicateError, match="scale must be one of"):
            histogram(session, "size", scale="sqrt")
    groups = {group["value"]: group["documents"] for group in answer["groups"]}
    # sizes: 0 x6, 1 x3, 5 x3, 7, 10 x3, 70, 100 x3, 1000 x3
    assert groups == {NONPOSITIVE: 6, "[1, 10)": 7, "[10, 100)": 4, "[100, 1000]": 6}
    assert answer["groups"][0]["value"] == NONPOSITIVE
    assert [b["documents"] for b in linear["bins"]] == [20, 0, 3]
    assert [g["value"] for g in by_value["groups"]] == ["d21"]  # words: grouped by value


def test_one_value_is_one_closed_bucket(scores):
    with scores.session() as session:
        answer = composition(session, "score", where="score = 0.5", bins=10)
    assert [(g["value"], g["documents"]) for g in answer["groups"]] == [("[0.5, 0.5]", 1)]


finite = st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False)


@pytest.fixture(scope="module")
def engine():
    with duckdb.connect() as connection:
        yield connection


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(finite, min_size=1, max_size=40),
    bins=st.integers(1, 60),
    on_edges=st.lists(st.integers(0, 60), max_size=10),
    log=st.booleans(),
)
def test_every_value_is_counted_where_its_bucket_label_says(engine, values, bins, on_edges, log):
    """The SQL the histogram runs, on DuckDB, against the edges compared in Python; values
    exactly on edges included, where a division alone rounds them into the wrong bucket."""
    if log:
        values = [abs(value) + 1e-3 for value in values]
    low, high = min(values), max(values)
    edges = bucket_edges(low, high, bins, "log" if log else "linear")
    assert edges[0] == low and edges[-1] == high
    assert all(a < b for a, b in zip(edges[:-1], edges[1:], strict=True)) or edges == [low, high]
    values += [edges[i % len(edges)] for i in on_edges]
    bucket = _bucket("v", edges, log)
    sql = f"SELECT {bucket} FROM (SELECT unnest(?::DOUBLE[]) AS v)"
    found = engine.execute(sql, [values]).fetchall()
    assert [bucket for (bucket,) in found] == [expected_bucket(edges, v) for v in values]


def test_edges_print_as_they_compare():
    assert bucket_edges(0.0, 1.0, 10)[3] == 0.3  # not 0.30000000000000004
    assert bucket_edges(5.0, 5.0, 10) == [5.0, 5.0]
    assert len(bucket_edges(1.0, math.nextafter(1.0, 2.0), 10)) == 2  # too narrow to cut
    assert bucket_edges(1e-300, 1e300, 2, "log") == [1e-300, 1.0, 1e300]
    # Inner edges are short decimals: a label says exactly where its bucket starts.
    for low, high, bins, scale in [(8, 2135, 5, "log"), (0.013, 7.9, 7, "linear")]:
        edges = bucket_edges(low, high, bins, scale)
        assert all(float(exact(edge)) == edge and len(exact(edge)) <= 5 for edge in edges[1:-1])
        widths = np.diff(np.log10(edges) if scale == "log" else edges)
        assert np.allclose(widths, widths[0], rtol=0.02)
