"""A catalog and shards on object storage (a real S3 server on loopback), read via a cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import s3fs

from mixplane.catalog import Catalog
from mixplane.load import MixtureDataset
from mixplane.load.synthetic import write_catalog, write_token_dataset

DATASETS = {
    "wiki": {"documents": 300, "seed": 1, "source": "wiki", "mean_tokens": 40},
    "code": {"documents": 200, "seed": 2, "source": "code", "mean_tokens": 50},
}


def mixture(catalog: str, cache: Path, options: dict | None = None) -> dict:
    return {
        "catalog": catalog,
        "cache_dir": str(cache),
        "storage_options": options or {},
        "seq_len": 32,
        "eos_id": 0,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 2},
            "code": {"where": "source = 'code'", "weight": 1},
        },
    }


def upload_catalog(datasets: dict, bucket: str, options: dict, folder: Path) -> str:
    """Write `datasets` under s3://BUCKET/tokens/, register them in a catalog made in
    `folder`, and put the catalog at s3://BUCKET/catalog.duckdb (returned)."""
    remote = Catalog(str(folder / "remote.duckdb"), storage_options=options)
    for name, settings in datasets.items():
        url = f"s3://{bucket}/tokens/{name}"
        write_token_dataset(url, storage_options=options, **settings)
        remote.register(url, name=name)
    s3fs.S3FileSystem(**options).put_file(str(folder / "remote.duckdb"), f"{bucket}/catalog.duckdb")
    return f"s3://{bucket}/catalog.duckdb"


def test_remote_catalog_streams_like_the_local_one(s3_bucket, tmp_path: Path):
    bucket, options = s3_bucket
    local_catalog = write_catalog(str(tmp_path / "local"), DATASETS)
    catalog = upload_catalog(DATASETS, bucket, options, tmp_path)

    cache = tmp_path / "cache"
    spec = mixture(catalog, cache, options)
    streamed = MixtureDataset(spec).read_positions(np.arange(60))
    expected = MixtureDataset(mixture(local_catalog, tmp_path / "local-cache")).read_positions(
        np.arange(60)
    )
    assert np.array_equal(streamed["input_ids"], expected["input_ids"])
    assert np.array_equal(streamed["component"], expected["component"])
    # The catalog and every shard read were copied once into the cache directory.
    cached = {p.name for p in cache.rglob("*") if p.is_file()}
    assert "catalog.duckdb" in cached
    assert any(name.endswith(".bin") for name in cached)
    # A second loader starts from the cache: same stream, nothing fetched again.
    before = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
    again = MixtureDataset(spec).read_positions(np.arange(60))
    assert np.array_equal(again["input_ids"], streamed["input_ids"])
    after = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
    assert all(after[p] == stamp for p, stamp in before.items())
