"""The token shard format: writer and memory-mapped reader agree on any documents."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.errors import MixplaneError
from mixplane.store import ShardReader, TaskShardWriter, token_dtype
from mixplane.store.format import (
    HEADER_SIZE,
    encode_header,
    encode_index,
    parse_stem,
    shard_stem,
    strip_suffix,
)


def write_documents(
    folder: str,
    documents: list[np.ndarray],
    dtype,
    target_bytes: int,
    batch_sizes: list[int],
    task: int = 0,
):
    """Write `documents` through the writer in batches of the given sizes (cycled)."""
    writer = TaskShardWriter(folder, task=task, dtype=dtype, target_bytes=target_bytes)
    start, turn = 0, 0
    while start < len(documents):
        size = batch_sizes[turn % len(batch_sizes)]
        batch = documents[start : start + size]
        tokens = np.concatenate(batch) if batch else np.zeros(0, dtype)
        meta = pa.table(
            {
                "id": [f"doc-{start + i}" for i in range(len(batch))],
                "source": ["web"] * len(batch),
                "quality": [float(start + i) / 10 for i in range(len(batch))],
            }
        )
        writer.add(tokens.astype(dtype), np.array([len(d) for d in batch]), meta)
        start += size
        turn += 1
    return writer.close()


documents_strategy = st.lists(
    st.lists(st.integers(0, 65_535), max_size=40).map(lambda ids: np.array(ids, np.uint16)),
    min_size=1,
    max_size=60,
)


@settings(max_examples=40, deadline=None)
@given(
    documents=documents_strategy,
    target_tokens=st.integers(1, 120),
    batch_sizes=st.lists(st.integers(1, 25), min_size=1, max_size=4),
)
def test_reader_returns_every_document_written(documents, target_tokens, batch_sizes):
    target = target_tokens * 2
    with tempfile.TemporaryDirectory() as folder:
        records = write_documents(folder, documents, np.uint16, target, batch_sizes)
        assert [r.name for r in records] == [shard_stem(0, k) for k in range(len(records))]
        read, ids = [], []
        for position, record in enumerate(records):
            shard = ShardReader(os.path.join(folder, record.name))
            assert (len(shard), shard.n_tokens) == (record.documents, record.tokens)
            lengths = shard.lengths()
            if position < len(records) - 1:
                # Full shards reach the target; without their last document they did not.
                assert shard.n_tokens * 2 >= target
                assert (shard.n_tokens - lengths[-1]) * 2 < target
            read.extend(shard.document(i).tolist() for i in range(len(shard)))
            meta = shard.metadata()
            assert meta.column_names == ["id", "n_tokens", "source", "quality"]
            assert meta.column("n_tokens").to_pylist() == lengths.tolist()
            ids.extend(meta.column("id").to_pylist())
        assert read == [d.tolist() for d in documents]
        assert ids == [f"doc-{i}" for i in range(len(documents))]


@settings(max_examples=15, deadline=None)
@given(
    documents=documents_strategy,
    first=st.lists(st.integers(1, 25), min_size=1, max_size=3),
    second=st.lists(st.integers(1, 25), min_size=1, max_size=3),
)
def test_bytes_do_not_depend_on_batching(documents, first, second):
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        write_documents(a, documents, np.uint16, 64, first)
        write_documents(b, documents, np.uint16, 64, second)
        names = sorted(os.listdir(a))
        assert names == sorted(os.listdir(b))
        for name in names:
            assert Path(a, name).read_bytes() == Path(b, name).read_bytes(), name


def test_dtype_follows_the_vocabulary_size():
    assert token_dtype(256) == np.uint16
    assert token_dtype(65_536) == np.uint16
    assert token_dtype(65_537) == np.uint32
    assert token_dtype(200_019) == np.uint32
    with pytest.raises(ValueError):
        token_dtype(0)


def test_uint32_shards_keep_large_ids(tmp_path: Path):
    documents = [np.array([70_000, 5, 4_000_000_000], np.uint32), np.array([65_536], np.uint32)]
    records = write_documents(str(tmp_path), documents, np.uint32, 1 << 20, [2])
    shard = ShardReader(tmp_path / records[0].name)
    assert shard.dtype == np.uint32
    assert os.path.getsize(shard.bin_path) == 4 * 4
    assert shard.document(0).tolist() == [70_000, 5, 4_000_000_000]
    assert shard.document(-1).tolist() == [65_536]


def test_on_disk_layout_is_the_documented_one(tmp_path: Path):
    documents = [np.array([1, 2, 3], np.uint16), np.array([], np.uint16), np.array([9], np.uint16)]
    write_documents(str(tmp_path), documents, np.uint16, 1 << 20, [3], task=7)
    stem = tmp_path / "shard-00007-000"
    assert (stem.with_suffix(".bin")).read_bytes() == np.array([1, 2, 3, 9], "<u2").tobytes()
    index = stem.with_suffix(".idx").read_bytes()
    assert index[:8] == b"MXTOKIDX"
    assert int.from_bytes(index[8:12], "little") == 1  # format version
    assert index[12] == 2  # dtype code: bytes per token
    assert int.from_bytes(index[16:24], "little") == 3  # documents
    assert np.frombuffer(index[24:], "<u8").tolist() == [0, 3, 3, 4]
    meta = pq.read_table(str(stem) + ".meta.parquet")
    assert meta.schema.field("n_tokens").type == pa.int64()
    assert meta.column("n_tokens").to_pylist() == [3, 0, 1]


def test_any_file_of_a_shard_names_it(tmp_path: Path):
    write_documents(str(tmp_path), [np.array([4, 5], np.uint16)], np.uint16, 100, [1])
    stem = str(tmp_path / "shard-00000-000")
    for path in (stem, stem + ".bin", stem + ".idx", stem + ".meta.parquet", Path(stem + ".bin")):
        assert ShardReader(path).document(0).tolist() == [4, 5]
    assert strip_suffix("a/shard-00001-002.meta.parquet") == "a/shard-00001-002"
    assert parse_stem("shard-00001-002") == (1, 2)
    assert parse_stem("shard-1-2") is None


def test_documents_are_views_of_the_mapped_file(tmp_path: Path):
    """O(1) access: a huge sparse shard opens at once, and a document is a slice of the map."""
    stem = tmp_path / "shard-00000-000"
    n_tokens = 1 << 29  # 1 GiB of uint16 tokens, never written except the last document
    last = np.array([11, 22, 33], "<u2")
    with open(str(stem) + ".bin", "wb") as handle:
        handle.truncate(n_tokens * 2)
        handle.seek((n_tokens - 3) * 2)
        handle.write(last.tobytes())
    offsets = np.array([0, n_tokens - 3, n_tokens], np.uint64)
    Path(str(stem) + ".idx").write_bytes(encode_index(np.uint16, offsets))
    shard = ShardReader(stem)
    assert shard.n_tokens == n_tokens
    document = shard.document(1)
    assert document.tolist() == [11, 22, 33]
    assert isinstance(document, np.memmap) and np.shares_memory(document, shard.tokens)
    assert shard.document(0).shape == (n_tokens - 3,)


def test_shards_of_empty_documents(tmp_path: Path):
    documents = [np.array([], np.uint16)] * 3
    records = write_documents(str(tmp_path), documents, np.uint16, 10, [2])
    shard = ShardReader(tmp_path / records[0].name)
    assert (len(shard), shard.n_tokens) == (3, 0)
    assert shard.document(2).tolist() == []
    with pytest.raises(IndexError):
        shard.document(3)


def test_damaged_indexes_are_refused_with_the_shard_named(tmp_path: Path):
    write_documents(str(tmp_path), [np.array([1, 2, 3], np.uint16)], np.uint16, 100, [1])
    stem = tmp_path / "shard-00000-000"
    idx = Path(str(stem) + ".idx")
    good = idx.read_bytes()

    idx.write_bytes(b"NOTMAGIC" + good[8:])
    with pytest.raises(MixplaneError, match="shard-00000-000.idx: not a mixplane token index"):
        ShardReader(stem)
    idx.write_bytes(good[:8] + (3).to_bytes(4, "little") + good[12:])
    with pytest.raises(MixplaneError, match="format version 3"):
        ShardReader(stem)
    # Version 2 is a fine-tuning shard: its tokens are not read without their loss mask.
    idx.write_bytes(good[:8] + (2).to_bytes(4, "little") + good[12:])
    with pytest.raises(MixplaneError, match="version 2 but shard-00000-000.mask is missing"):
        ShardReader(stem)
    idx.write_bytes(good[:HEADER_SIZE])
    with pytest.raises(MixplaneError, match="expected 40 for 1 documents"):
        ShardReader(stem)
    idx.write_bytes(good)
    Path(str(stem) + ".bin").write_bytes(b"\x01\x00")
    with pytest.raises(MixplaneError, match="shard-00000-000: .bin holds 2 bytes"):
        ShardReader(stem)
    os.remove(str(stem) + ".bin")
    with pytest.raises(MixplaneError, match="shard-00000-000: .*missing"):
        ShardReader(stem)
    assert len(encode_header(np.uint32, 5)) == HEADER_SIZE


def write_grouped(folder: str, documents, groups, target_bytes: int, batch_sizes: list[int]):
    """Write `documents` labelled `groups` (one language each) through a grouping writer."""
    writer = TaskShardWriter(
        folder, task=2, dtype=np.uint16, target_bytes=target_bytes, group_by="language"
    )
    start, turn = 0, 0
    while start < len(documents):
        size = batch_sizes[turn % len(batch_sizes)]
        batch = documents[start : start + size]
        meta = pa.table(
            {
                "id": [f"doc-{start + i}" for i in range(len(batch))],
                "language": pa.array(groups[start : start + size], pa.string()),
            }
        )
        tokens = np.concatenate(batch) if batch else np.zeros(0, np.uint16)
        writer.add(tokens, np.array([len(d) for d in batch]), meta)
        start += size
        turn += 1
    return writer.close()


@settings(max_examples=40, deadline=None)
@given(
    labelled=st.lists(
        st.tuples(
            st.lists(st.integers(0, 65_535), max_size=30).map(lambda i: np.array(i, np.uint16)),
            st.sampled_from(["en", "de", "fr", None]),
        ),
        min_size=1,
        max_size=60,
    ),
    target_tokens=st.integers(1, 80),
    first=st.lists(st.integers(1, 25), min_size=1, max_size=3),
    second=st.lists(st.integers(1, 25), min_size=1, max_size=3),
)
def test_grouped_shards_hold_one_value_each_in_order(labelled, target_tokens, first, second):
    documents = [document for document, _ in labelled]
    groups = [group for _, group in labelled]
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        records = write_grouped(a, documents, groups, target_tokens * 2, first)
        assert [r.name for r in records] == [shard_stem(2, k) for k in range(len(records))]
        read: dict[object, list] = {}
        for record in records:
            shard = ShardReader(os.path.join(a, record.name))
            values = set(shard.metadata().column("language").to_pylist())
            assert len(values) == 1, (record.name, values)
            value = values.pop()
            ids = shard.metadata().column("id").to_pylist()
            for i, doc_id in enumerate(ids):
                read.setdefault(value, []).append((doc_id, shard.document(i).tolist()))
        for value in set(groups):
            expected = [
                (f"doc-{i}", documents[i].tolist()) for i, g in enumerate(groups) if g == value
            ]
            assert read[value] == expected
        # The bytes depend on the documents and their values, not on the batching.
        write_grouped(b, documents, groups, target_tokens * 2, second)
        assert sorted(os.listdir(a)) == sorted(os.listdir(b))
        for name in os.listdir(a):
            assert Path(a, name).read_bytes() == Path(b, name).read_bytes(), name


def test_grouping_by_a_missing_or_nested_property_is_refused(tmp_path: Path):
    writer = TaskShardWriter(str(tmp_path), 4, np.uint16, 100, group_by="language")
    tokens, lengths = np.array([1, 2], np.uint16), np.array([2])
    with pytest.raises(MixplaneError, match="'language': task 4's documents have no such"):
        writer.add(tokens, lengths, pa.table({"id": ["a"], "source": ["web"]}))
    nested = pa.table({"id": ["a"], "language": [["en", "de"]]})
    with pytest.raises(MixplaneError, match="is a list<item: string>, not a single value"):
        writer.add(tokens, lengths, nested)
    writer.abort()
    assert not list(tmp_path.iterdir())
