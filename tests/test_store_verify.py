"""Checksums catch damaged shards; datasets on object storage read like local ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_tokenize_backends import corpus, trained_tokenizer, write_corpus

from mixplane.errors import MixplaneError
from mixplane.store import ShardReader, TokenizedDataset
from mixplane.tokenize import dataset_tokenizer, tokenize_dataset


@pytest.fixture(scope="module")
def tokenized(tmp_path_factory) -> tuple[Path, Path]:
    """(raw corpus folder, tokenizer path): two files of multilingual documents."""
    root = tmp_path_factory.mktemp("verify")
    for part in range(2):
        write_corpus(root / "raw" / f"part-{part}.jsonl", corpus(60, seed=10 + part))
    return root / "raw", trained_tokenizer(root)


def make_dataset(tokenized, out: Path, **options) -> Path:
    raw, tokenizer = tokenized
    config = {"input": str(raw), "output": str(out), "tokenizer": str(tokenizer)}
    tokenize_dataset(config | {"shard_size_mb": 0.002} | options)
    return out


def flip_byte(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("suffix", [".bin", ".idx", ".meta.parquet"])
def test_a_flipped_byte_is_detected_and_the_shard_named(tokenized, tmp_path: Path, suffix):
    out = make_dataset(tokenized, tmp_path / "tokens")
    dataset = TokenizedDataset(out)
    dataset.verify()
    victim = dataset.shard_names[2]
    path = out / f"{victim}{suffix}"
    # In the index, flip a byte of the last offset's high half: the layout stays readable.
    flip_byte(path, path.stat().st_size - 2 if suffix == ".idx" else path.stat().st_size // 2)
    with pytest.raises(MixplaneError, match=f"shard {victim}: {victim}{suffix} does not match"):
        TokenizedDataset(out).verify()
    other = ShardReader(out / dataset.shard_names[1])
    other.verify()
    # Opening the shard alone may already refuse a damaged index; either way it is named.
    with pytest.raises(MixplaneError, match=f"shard {victim}: "):
        ShardReader(out / victim).verify()


def test_verify_needs_the_manifest(tokenized, tmp_path: Path):
    out = make_dataset(tokenized, tmp_path / "tokens")
    (out / "_manifest.json").unlink()
    with pytest.raises(MixplaneError, match="no _manifest.json beside it"):
        ShardReader(out / "shard-00000-000").verify()
    with pytest.raises(MixplaneError, match="not a tokenized dataset"):
        TokenizedDataset(out)


def test_a_changed_tokenizer_copy_is_detected(tokenized, tmp_path: Path):
    out = make_dataset(tokenized, tmp_path / "tokens")
    saved = out / "_tokenizer.json"
    saved.write_text(saved.read_text().replace("<|pad|>", "<|pad2|>"))
    with pytest.raises(MixplaneError, match="_tokenizer.json does not match the manifest"):
        TokenizedDataset(out).verify()


def test_datasets_on_s3_are_cached_locally_and_identical(tokenized, s3_bucket, tmp_path: Path):
    bucket, options = s3_bucket
    url = f"s3://{bucket}/tokens"
    make_dataset(tokenized, url, storage_options=options, eos=True)
    local = TokenizedDataset(make_dataset(tokenized, tmp_path / "local", eos=True))
    remote = TokenizedDataset(url, options, cache_dir=str(tmp_path / "cache"))
    assert remote.shards == local.shards
    remote.verify()
    for index in (0, 17, 119):
        assert np.array_equal(remote.document(index), local.document(index))
    assert dataset_tokenizer(remote).decode(remote.document(5)) == dataset_tokenizer(local).decode(
        local.document(5)
    )
    cached = sorted(p.name for p in (tmp_path / "cache").rglob("shard-*"))
    assert "shard-00000-000.bin" in cached and "shard-00000-000.idx" in cached
