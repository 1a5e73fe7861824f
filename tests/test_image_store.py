"""Image shards: writer and reader round trip, byte-identical output, interop with the
`webdataset` library and `tarfile`, index checks."""

from __future__ import annotations

import io
import json
import tarfile

import numpy as np
import pyarrow.parquet as pq
import pytest
import webdataset as wds
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from mixplane.document import Document
from mixplane.errors import MixplaneError
from mixplane.manifest import file_digest
from mixplane.store.images import ImageShardReader, ImageShardWriter, MissingImageError
from mixplane.store.images.format import (
    HEADER_SIZE,
    decode_index,
    encode_index,
    parse_members,
    tar_member,
)


def encoded(fmt: str, size: tuple[int, int], seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, fmt)
    return buffer.getvalue()


def documents(n: int = 6) -> list[Document]:
    docs = []
    for i in range(n):
        fmt, ext = ("JPEG", "jpg") if i % 2 == 0 else ("PNG", "png")
        image = encoded(fmt, (32 + 8 * i, 40), i)
        metadata = {"language": "en" if i % 3 else "de", "score": i / 10, "key": f"in{i}"}
        docs.append(Document(f"doc-{i}", f"caption {i} ü", "web", metadata, {ext: image}))
    return docs


def write_shard(folder, stem: str = "part-00002", docs=None) -> list[dict]:
    writer = ImageShardWriter(str(folder), stem)
    for doc in docs if docs is not None else documents():
        writer.write(doc)
    return writer.close()


def test_roundtrip_index_members_and_metadata(tmp_path):
    docs = documents()
    entries = write_shard(tmp_path)
    assert [e["path"] for e in entries] == [
        "part-00002.tar",
        "part-00002.idx",
        "part-00002.meta.parquet",
    ]
    for entry in entries:
        assert entry["records"] == len(docs)
        assert file_digest(str(tmp_path / entry["path"])) == (entry["size"], entry["hash"])
    reader = ImageShardReader(str(tmp_path), "part-00002")
    assert len(reader) == len(docs)
    for i, doc in enumerate(docs):
        sample = reader.sample(i)
        ext, image = next(iter(doc.media.items()))
        assert sample["__key__"] == f"00002-{i:07d}"
        assert sample[ext] == image
        assert sample["txt"].decode() == doc.text
        record = json.loads(sample["json"])
        assert record["id"] == doc.id and record["caption"] == doc.text
        assert record["key"] == f"in{i}" and record["image_bytes"] == len(image)
        assert (record["width"], record["height"]) == Image.open(io.BytesIO(image)).size
    # Any order, repeats included, and the same answers as one by one.
    wanted = [5, 0, 3, 3, 1]
    assert reader.samples(wanted) == [reader.sample(i) for i in wanted]
    meta = pq.read_table(tmp_path / "part-00002.meta.parquet")
    assert meta.column_names[:9] == [
        "id",
        "key",
        "source",
        "caption",
        "n_tokens",
        "width",
        "height",
        "image_format",
        "image_bytes",
    ]
    rows = meta.to_pylist()
    assert [row["key"] for row in rows] == [f"00002-{i:07d}" for i in range(len(docs))]
    assert [row["input_key"] for row in rows] == [f"in{i}" for i in range(len(docs))]
    assert {row["n_tokens"] for row in rows} == {0}
    assert [row["image_format"] for row in rows] == ["jpeg", "png"] * 3
    assert rows[2]["width"] == 48 and rows[3]["language"] == "de"


def test_sample_is_exactly_its_tar_members(tmp_path):
    write_shard(tmp_path)
    reader = ImageShardReader(str(tmp_path), "part-00002")
    with tarfile.open(tmp_path / "part-00002.tar") as archive:
        members = archive.getmembers()
        assert all(m.isfile() and m.mode == 0o644 and m.mtime == 0 for m in members)
        assert all(m.uid == 0 and m.gid == 0 and m.uname == "" for m in members)
        by_key: dict[str, dict[str, bytes]] = {}
        for member in members:
            key, ext = member.name.split(".", 1)
            by_key.setdefault(key, {})[ext] = archive.extractfile(member).read()
    assert list(by_key) == [reader.sample(i)["__key__"] for i in range(len(reader))]
    for i, (key, files) in enumerate(by_key.items()):
        assert reader.sample(i) == {"__key__": key, **files}
        start, end = reader.byte_range(i)
        assert start % 512 == 0 and end % 512 == 0 and end > start
    assert (tmp_path / "part-00002.tar").stat().st_size == reader.byte_range(5)[1] + 1024


def test_webdataset_library_reads_the_same_samples(tmp_path):
    write_shard(tmp_path)
    reader = ImageShardReader(str(tmp_path), "part-00002")
    url = str(tmp_path / "part-00002.tar")
    seen = list(wds.WebDataset(url, shardshuffle=False))
    assert len(seen) == len(reader)
    for i, sample in enumerate(seen):
        ours = reader.sample(i)
        assert {k: v for k, v in sample.items() if not k.startswith("__")} == {
            k: v for k, v in ours.items() if k != "__key__"
        }
        assert sample["__key__"] == ours["__key__"]


def test_identical_input_gives_identical_bytes(tmp_path):
    first = write_shard(tmp_path / "a")
    second = write_shard(tmp_path / "b")
    assert [(e["size"], e["hash"]) for e in first] == [(e["size"], e["hash"]) for e in second]
    for name in ("part-00002.tar", "part-00002.idx", "part-00002.meta.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_empty_shard_and_missing_image(tmp_path):
    writer = ImageShardWriter(str(tmp_path), "part-00000")
    with pytest.raises(MissingImageError, match="document 'text-only' has no image"):
        writer.write(Document("text-only", "just text", "web"))
    entries = writer.close()
    assert [e["records"] for e in entries] == [0, 0, 0]
    reader = ImageShardReader(str(tmp_path), "part-00000")
    assert len(reader) == 0 and reader.samples([]) == []
    assert (tmp_path / "part-00000.tar").read_bytes() == b"\0" * 1024
    assert pq.read_table(tmp_path / "part-00000.meta.parquet").num_rows == 0
    with pytest.raises(IndexError):
        reader.sample(0)
    assert not list(tmp_path.glob(".*.tmp"))


def test_damaged_index_or_tar_is_reported(tmp_path):
    write_shard(tmp_path)
    idx = tmp_path / "part-00002.idx"
    good = idx.read_bytes()
    idx.write_bytes(good[:-8])
    with pytest.raises(MixplaneError, match="part-00002.idx: index has 120 bytes, expected 128"):
        ImageShardReader(str(tmp_path), "part-00002")
    idx.write_bytes(b"NOTANIDX" + good[8:])
    with pytest.raises(MixplaneError, match="not a mixplane image index"):
        ImageShardReader(str(tmp_path), "part-00002")
    # An offset moved into the middle of a member: the sample's digest catches it, and in
    # a version 1 index (no digests) the tar header's checksum does.
    offsets, digests = decode_index(good, "x")
    offsets = offsets.copy()
    offsets[2] += 512
    idx.write_bytes(encode_index(offsets, digests))
    reader = ImageShardReader(str(tmp_path), "part-00002")
    with pytest.raises(MixplaneError, match="sample 2: its bytes hash to .* the index says"):
        reader.sample(2)
    idx.write_bytes(encode_index(offsets, None))
    reader = ImageShardReader(str(tmp_path), "part-00002")
    with pytest.raises(MixplaneError, match="sample 2 .*checksum"):
        reader.sample(2)
    # Bytes of a sample changed in place: only the digest can tell.
    idx.write_bytes(good)
    tar = tmp_path / "part-00002.tar"
    intact = tar.read_bytes()
    start = int(decode_index(good, "x")[0][1]) + 600  # inside sample 1's image data
    tar.write_bytes(intact[:start] + bytes([intact[start] ^ 0xFF]) + intact[start + 1 :])
    with pytest.raises(MixplaneError, match="sample 1: its bytes hash to"):
        ImageShardReader(str(tmp_path), "part-00002").sample(1)
    tar.write_bytes(intact)
    idx.write_bytes(good)
    tar = tmp_path / "part-00002.tar"
    tar.write_bytes(tar.read_bytes()[:-1024])
    with pytest.raises(MixplaneError, match="truncated or does not match its index"):
        ImageShardReader(str(tmp_path), "part-00002")
    (tmp_path / "part-00002.tar").unlink()
    with pytest.raises(MixplaneError, match="part-00002.tar is missing"):
        ImageShardReader(str(tmp_path), "part-00002")


def test_parse_members_rejects_mixed_keys_and_repeats():
    with pytest.raises(MixplaneError, match="belongs to key 'b'"):
        parse_members(tar_member("a.jpg", b"x") + tar_member("b.txt", b"y"))
    with pytest.raises(MixplaneError, match="extension 'txt' appears twice"):
        parse_members(tar_member("a.txt", b"x") + tar_member("a.txt", b"y"))
    with pytest.raises(MixplaneError, match="needs 700 bytes"):
        parse_members(tar_member("a.jpg", b"z" * 700)[:1024])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 1 << 20), max_size=50))
def test_index_roundtrip_property(blocks):
    offsets = np.concatenate([[0], np.cumsum(np.asarray(blocks, dtype=np.int64) * 512)])
    digests = [hash(("sample", n)) % (1 << 64) for n in range(len(blocks))]
    for kept in (digests, None):  # version 2, and version 1 (no digests)
        data = encode_index(offsets, kept)
        digest_bytes = 0 if kept is None else 8 * len(blocks)
        assert len(data) == HEADER_SIZE + 8 * (len(blocks) + 1) + digest_bytes
        got_offsets, got_digests = decode_index(data, "x.idx")
        assert got_offsets.tolist() == offsets.tolist()
        assert (got_digests is None) == (kept is None)
        assert kept is None or got_digests.tolist() == kept
        for cut in {0, 1, HEADER_SIZE - 1, len(data) - 1}:
            with pytest.raises(MixplaneError):
                decode_index(data[:cut], "x.idx")


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8),
        st.binary(max_size=2000),
        min_size=1,
        max_size=5,
    )
)
def test_members_roundtrip_property(files):
    data = b"".join(tar_member(f"k.{ext}", content) for ext, content in files.items())
    assert len(data) % 512 == 0
    assert parse_members(data) == {"__key__": "k", **files}
    with tarfile.open(fileobj=io.BytesIO(data + b"\0" * 1024)) as archive:
        assert {m.name: archive.extractfile(m).read() for m in archive} == {
            f"k.{ext}": content for ext, content in files.items()
        }


def test_object_storage_write_and_ranged_reads(tmp_path, s3_bucket):
    bucket, options = s3_bucket
    folder = f"s3://{bucket}/images"
    writer = ImageShardWriter(folder, "part-00002", options)
    for doc in documents():
        writer.write(doc)
    remote = writer.close()
    local = write_shard(tmp_path)
    assert [(e["size"], e["hash"]) for e in remote] == [(e["size"], e["hash"]) for e in local]
    reader = ImageShardReader(folder, "part-00002", options)
    near = ImageShardReader(str(tmp_path), "part-00002")
    assert reader.samples([4, 1, 2]) == near.samples([4, 1, 2])
    assert reader.sample(5) == near.sample(5)
    assert reader.metadata(["id"]).column("id").to_pylist() == [f"doc-{i}" for i in range(6)]
