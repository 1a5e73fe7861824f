"""The compiled piece copier and the worker batch transfer, against plain numpy."""

from __future__ import annotations

import pickle
from multiprocessing.reduction import ForkingPickler
from unittest.mock import patch

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.load._pieces import copy_pieces, number_pieces
from mixplane.load.torch import transfer
from mixplane.load.torch.transfer import WorkerBatch

TOKEN_TYPES = [np.uint8, np.uint16, np.uint32]
OUT_TYPES = [np.uint16, np.int32, np.uint32, np.int64]


@st.composite
def pieces(draw):
    """Sources of several dtypes and disjoint pieces that tile an output in random order."""
    sources = []
    for _ in range(draw(st.integers(1, 4))):
        dtype = draw(st.sampled_from(TOKEN_TYPES))
        size = draw(st.integers(1, 300))
        values = draw(st.lists(st.integers(0, np.iinfo(dtype).max), min_size=size, max_size=size))
        sources.append(np.array(values, dtype=dtype))
    widest = max(s.dtype.itemsize for s in sources)
    out_type = draw(st.sampled_from([t for t in OUT_TYPES if np.dtype(t).itemsize >= widest]))
    rows = []
    target = 0
    for _ in range(draw(st.integers(0, 12))):
        shard = draw(st.integers(0, len(sources) - 1))
        first = draw(st.integers(0, len(sources[shard])))
        take = draw(st.integers(0, len(sources[shard]) - first))
        rows.append((shard, first, take, target))
        target += take
    order = draw(st.permutations(range(len(rows))))
    rows = [rows[i] for i in order]
    columns = [np.array([r[i] for r in rows], dtype=np.int64) for i in range(4)]
    return sources, out_type, target, columns


@settings(max_examples=200, deadline=None)
@given(case=pieces())
def test_copy_pieces_matches_slice_assignment(case):
    sources, out_type, size, (shard, first, take, target) = case
    out = np.full(size, 7, dtype=out_type)
    copy_pieces(out, sources, shard, first, take, target)
    expected = np.full(size, 7, dtype=out_type)
    for s, f, n, t in zip(shard, first, take, target, strict=True):
        expected[t : t + n] = sources[s][f : f + n]
    assert np.array_equal(out, expected)


@settings(max_examples=100, deadline=None)
@given(
    counts=st.lists(st.integers(0, 40), max_size=10),
    step=st.sampled_from([0, 1]),
    out_type=st.sampled_from([np.int32, np.int64, np.uint16]),
)
def test_number_pieces_counts_from_each_start(counts, step, out_type):
    count = np.array(counts, dtype=np.int64)
    target = np.cumsum(count) - count
    start = np.arange(len(counts), dtype=np.int64) * 3
    out = np.empty(int(count.sum()), dtype=out_type)
    number_pieces(out, target, count, start, step)
    expected = [s + k * step for s, n in zip(start, count, strict=True) for k in range(n)]
    assert out.tolist() == expected


def test_bad_pieces_are_refused_before_anything_is_written():
    source = np.arange(10, dtype=np.uint16)
    out = np.zeros(8, dtype=np.int64)
    index = [np.array([0, 0]), np.array([0, 5]), np.array([4, 6]), np.array([0, 4])]
    with pytest.raises(IndexError, match=r"piece 1: tokens \[5, 11\) of source 0 \(10 tokens\)"):
        copy_pieces(out, [source], *index)
    assert not out.any()
    with pytest.raises(IndexError, match="piece 0: shard 3 of 1"):
        copy_pieces(out, [source], np.array([3]), np.array([0]), np.array([1]), np.array([0]))
    with pytest.raises(TypeError, match="tokens may be widened, not narrowed"):
        copy_pieces(
            np.zeros(4, np.uint16), [source.astype(np.uint32)], *[np.zeros(1, np.int64)] * 4
        )
    with pytest.raises(TypeError, match="first must be a contiguous int64 array"):
        copy_pieces(out, [source], np.zeros(1, np.int64), np.zeros(1, np.int32), *index[2:])
    with pytest.raises(ValueError, match="take has 2 items, expected 1"):
        copy_pieces(out, [source], np.zeros(1, np.int64), np.zeros(1, np.int64), *index[2:])
    with pytest.raises(IndexError, match=r"piece 0: \[6, 10\) of out \(8\)"):
        number_pieces(out, np.array([6]), np.array([4]), np.array([0]), 1)


def test_copies_run_outside_the_interpreter_lock():
    """A thread copying a large block lets another thread run Python meanwhile."""
    import threading
    import time

    source = np.arange(1 << 24, dtype=np.uint32)
    out = np.empty(len(source), dtype=np.int64)
    index = [
        np.zeros(1, np.int64),
        np.zeros(1, np.int64),
        np.full(1, len(source)),
        np.zeros(1, np.int64),
    ]
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.perf_counter())

    counter = threading.Thread(target=count)
    counter.start()
    try:
        started = time.perf_counter()
        for _ in range(5):
            copy_pieces(out, [source], *index)
        finished = time.perf_counter()
    finally:
        done.set()
        counter.join()
    during = [t for t in ticks if started < t < finished]
    assert len(during) > 1000
    assert np.array_equal(out[-3:], source[-3:])


arrays = st.one_of(
    # Token ids, document numbers and positions as the loader makes them.
    st.tuples(
        st.integers(1, 6),
        st.integers(1, 300),
        st.sampled_from([np.uint16, np.uint32, np.int32, np.int64]),
    ).map(
        lambda a: (
            np.random.default_rng(a[1])
            .integers(0, np.iinfo(a[2]).max, (a[0], a[1]), endpoint=True)
            .astype(a[2])
        )
    ),
    # Runs of numbers ending at each narrower type's limit or one past it (narrowed when
    # large enough), or dipping below zero.
    st.tuples(
        st.integers(1, 30),
        st.integers(40, 200),
        st.sampled_from([255, 256, 65_535, 65_536, 2**31 - 1, 2**32 - 1, 2**32, 0]),
        st.sampled_from([np.int32, np.int64]),
    ).map(
        lambda a: np.repeat(np.arange(a[2] - a[0] + 1, a[2] + 1), a[1]).astype(
            a[3] if a[2] < 2**31 else np.int64
        )
    ),
    st.lists(st.integers(-5, 5), max_size=50).map(lambda v: np.array(v, dtype=np.int64)),
    # Rows of a larger block (what a worker hands out), every third column, and a scalar.
    st.integers(2, 9).map(lambda n: np.arange(n * 10, dtype=np.uint16).reshape(n, 10)[1:]),
    st.integers(2, 9).map(lambda n: np.arange(n * 10, dtype=np.int32).reshape(n, 10)[:, ::3]),
    st.integers(0, 10).map(np.int64).map(np.asarray),
)


@settings(max_examples=150, deadline=None)
@given(batch=st.dictionaries(st.sampled_from(["input_ids", "document_ids", "index"]), arrays))
def test_worker_batches_arrive_as_equal_tensors(batch):
    # Small arrays narrowed too, so that every example can take that path.
    with patch.object(transfer, "NARROW_FROM", 64):
        arrived = pickle.loads(ForkingPickler.dumps(WorkerBatch(batch)))
    assert list(arrived) == list(batch)
    for key, array in batch.items():
        assert isinstance(arrived[key], torch.Tensor)
        assert arrived[key].numpy().dtype == array.dtype
        assert arrived[key].shape == array.shape
        assert np.array_equal(arrived[key].numpy(), array)


def test_batches_travel_narrowed_and_arrive_writable():
    ids = np.random.default_rng(0).integers(0, 50_000, (16, 2048)).astype(np.uint16)
    documents = np.repeat(np.arange(4, dtype=np.int32), 2048 // 4)[None].repeat(16, 0)
    batch = {"input_ids": ids, "document_ids": documents, "index": np.arange(16)}
    data = ForkingPickler.dumps(WorkerBatch(batch))
    # Document numbers travel in one byte each, token ids as they are.
    assert len(data) < ids.nbytes + documents.size + 1024
    arrived = pickle.loads(data)
    for key, array in batch.items():
        tensor = arrived[key]
        assert np.array_equal(tensor.numpy(), array)
        tensor.fill_(7)  # the training loop owns its batch: it may change it in place
        assert (tensor.numpy() == 7).all()
