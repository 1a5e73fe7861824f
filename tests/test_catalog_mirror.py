"""Queries over remote datasets on local copies of their metadata (`Catalog(metadata_cache=)`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import s3fs

from mixplane.catalog import Catalog
from mixplane.errors import MixplaneError
from mixplane.load.synthetic import write_token_dataset

DATASETS = {
    "wiki": {"documents": 400, "seed": 1, "source": "wiki", "mean_tokens": 30, "shard_bytes": 4000},
    "web": {"documents": 300, "seed": 2, "source": "web", "mean_tokens": 30, "shard_bytes": 4000},
}
WHERE = "source = 'web' OR n_tokens > 40"


def register_remote(bucket: str, options: dict, folder: Path) -> str:
    registry = str(folder / "catalog.duckdb")
    for name, settings in DATASETS.items():
        url = f"s3://{bucket}/tokens/{name}"
        write_token_dataset(url, storage_options=options, **settings)
        Catalog(registry, storage_options=options).register(url, name=name)
    return registry


def ranges(selection) -> list[tuple]:
    return [
        (part.dataset, part.shard.tolist(), part.start.tolist(), part.end.tolist())
        for part in sorted(selection, key=lambda p: p.dataset)
    ]


def test_mirrored_queries_answer_as_remote_ones_and_copy_once(s3_bucket, tmp_path: Path):
    bucket, options = s3_bucket
    registry = register_remote(bucket, options, tmp_path)
    remote = Catalog(registry, storage_options=options).select(WHERE)
    cache = tmp_path / "cache"
    mirrored = Catalog(registry, storage_options=options, metadata_cache=str(cache))

    with mirrored.session() as session:  # components query side by side, as a mixture does
        first, second = session.select(WHERE), session.select("source = 'wiki'")
    assert ranges(first) == ranges(remote) and first.documents > 0
    assert second.documents == 400
    copies = sorted(cache.rglob("*.meta.parquet"))
    shards = sum(len(version.shards) for version in mirrored.latest())
    assert len(copies) == shards > 2  # every shard's metadata, once
    assert not [p for p in cache.rglob("*") if p.name.startswith(".")]  # no temporaries

    stamps = {path: path.stat().st_mtime_ns for path in copies}
    assert ranges(mirrored.select(WHERE)) == ranges(remote)
    assert {path: path.stat().st_mtime_ns for path in copies} == stamps  # reused, not copied


def test_metadata_rewritten_since_registration_is_refused(s3_bucket, tmp_path: Path):
    bucket, options = s3_bucket
    registry = register_remote(bucket, options, tmp_path)
    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    target = sorted(fs.glob(f"{bucket}/tokens/web/*.meta.parquet"))[0]
    fs.pipe_file(target, fs.cat_file(target) + b"rewritten")
    mirrored = Catalog(registry, storage_options=options, metadata_cache=str(tmp_path / "c"))
    stem = target.rsplit("/", 1)[-1].split(".")[0]
    with pytest.raises(MixplaneError, match=rf"(?s){stem}.*register"):
        mirrored.select(WHERE)
    # Nothing half-copied or wrong is left for a later query to trust.
    wrong = [p for p in (tmp_path / "c").rglob(f"{stem}.meta.parquet")]
    assert all(p.stat().st_size != fs.size(target) for p in wrong)


def test_loader_reads_token_counts_from_the_copies(s3_bucket, tmp_path: Path):
    """A remote mixture resolves from the mirrored metadata: the same stream as with none."""
    from mixplane.load import MixtureDataset

    bucket, options = s3_bucket
    registry = register_remote(bucket, options, tmp_path)
    spec = {
        "catalog": registry,
        "storage_options": options,
        "cache_dir": str(tmp_path / "cache"),
        "seq_len": 16,
        "eos_id": 0,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 1},
            "web": {"where": "source = 'web'", "weight": 1},
        },  # fmt: skip
    }
    streamed = MixtureDataset(spec).read_positions(np.arange(40))["input_ids"]
    assert list((tmp_path / "cache").rglob("*.meta.parquet"))
    local = {name: str(tmp_path / name) for name in DATASETS}
    for name, settings in DATASETS.items():
        write_token_dataset(local[name], **settings)
        Catalog(str(tmp_path / "local.duckdb")).register(local[name], name=name)
    spec_local = spec | {"catalog": str(tmp_path / "local.duckdb"), "storage_options": {}}
    spec_local["cache_dir"] = str(tmp_path / "local-cache")
    expected = MixtureDataset(spec_local).read_positions(np.arange(40))["input_ids"]
    assert np.array_equal(streamed, expected)
