"""A catalog and shards on object storage (a real S3 server on loopback), read via a cache."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
import s3fs
from conftest import create_bucket
from processes import finish, hold_until_one_waits, start, wait_until

from mixplane.catalog import Catalog
from mixplane.catalog.mirror import mirror_folder
from mixplane.io.flaky_proxy import FlakyProxy, Gate
from mixplane.load import MixtureDataset, resolve_mixture
from mixplane.load.tools.synthetic import write_catalog, write_token_dataset
from mixplane.manifest import file_digest
from mixplane.mix.spec import MixtureSpec

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


# Several shards per dataset: a cold start copies many metadata files.
SHARDED = {name: dict(settings, shard_bytes=3_000) for name, settings in DATASETS.items()}
SEQUENCES = 12  # per rank


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, s3_server):
    """SHARDED on the S3 server with its catalog there too, and the stream a local copy of
    the same datasets gives."""
    folder = tmp_path_factory.mktemp("sharded")
    bucket = create_bucket(s3_server, "cold-starts")
    catalog = upload_catalog(SHARDED, bucket, s3_server, folder)
    local = write_catalog(str(folder / "local"), SHARDED)
    spec = mixture(local, folder / "local-cache")
    expected = MixtureDataset(spec).read_positions(np.arange(2 * SEQUENCES))["input_ids"]
    fs = s3fs.S3FileSystem(**s3_server)
    metadata = sorted(f"/{path}" for path in fs.glob(f"{bucket}/tokens/*/*.meta.parquet"))
    return {"catalog": catalog, "expected": expected, "metadata": metadata, "bucket": bucket}


def through(proxy: FlakyProxy, options: dict) -> dict:
    return dict(options, endpoint_url=proxy.start())


def test_ranks_starting_cold_fetch_each_remote_file_once_per_machine(sharded, s3_server, tmp_path):
    """Two ranks of one machine start together on a remote catalog: one copies the catalog
    while the other waits for its copy, one plan is made, and every file is fetched once."""
    gate = Gate(r"/catalog\.duckdb$")
    proxy = FlakyProxy(s3_server["endpoint_url"], gate=gate)
    spec = mixture(sharded["catalog"], tmp_path / "cache", through(proxy, s3_server))
    (tmp_path / "mixture.json").write_text(json.dumps(spec))
    try:
        ranks = [start("rank_start.py", tmp_path / "mixture.json", r, 2, SEQUENCES) for r in (0, 1)]
        hold_until_one_waits(gate, ranks)
        streams = [np.array(json.loads(finish(rank))) for rank in ranks]
    finally:
        proxy.stop()
    for rank, stream in enumerate(streams):
        assert np.array_equal(stream, sharded["expected"][rank::2])
    bucket = f"/{sharded['bucket']}"
    objects = {path: count for path, count in proxy.gets.items() if path.startswith(bucket + "/")}
    assert {path: n for path, n in objects.items() if n != 1} == {}  # nothing fetched twice
    assert {f"{bucket}/catalog.duckdb", *sharded["metadata"]} <= set(objects)
    assert any(path.endswith(".bin") for path in objects)
    assert len(list((tmp_path / "cache" / "plans").iterdir())) == 1


def kill_while_held(held: str, sharded: dict, s3_server: dict, folder: Path) -> None:
    """Start a rank on `folder/cache` and kill -9 it once half of a file matching `held` has
    reached it."""
    gate = Gate(held)
    proxy = FlakyProxy(s3_server["endpoint_url"], gate=gate)
    spec = mixture(sharded["catalog"], folder / "cache", through(proxy, s3_server))
    (folder / "mixture.json").write_text(json.dumps(spec))
    try:
        run = start("rank_start.py", folder / "mixture.json", 0, 1, SEQUENCES)
        wait_until(lambda: gate.held >= 1, [run])
        run.send_signal(signal.SIGKILL)
        run.wait()
    finally:
        proxy.stop()


def test_a_copy_killed_midway_is_never_read(sharded, s3_server, tmp_path):
    """kill -9 while the catalog, then the metadata, is being copied: nothing of it is taken
    for a copy, and the next start makes them again and streams as it should."""
    cache = tmp_path / "cache"
    kill_while_held(r"/catalog\.duckdb$", sharded, s3_server, tmp_path)
    (folder,) = (cache / "catalogs").iterdir()
    assert [p.name for p in folder.iterdir() if not p.name.endswith(".partial")] == [".lock"]

    kill_while_held(r"/shard-00000-000\.meta\.parquet$", sharded, s3_server, tmp_path)
    record = json.loads((folder / "source.json").read_text())  # the second run's copy
    assert [p.name for p in folder.iterdir() if p.is_dir()] == [record["hash"].split(":")[1]]
    with Catalog(str(folder / record["copy"])).session() as session:
        registered = {
            (mirror_folder(str(cache), version.uri), shard.stem): session.files(version)[
                shard.stem + ".meta.parquet"
            ]["hash"]
            for version in session.resolve()
            for shard in version.shards
        }
    copies = list((cache / "metadata").rglob("*.meta.parquet"))
    for copy in copies:  # whatever is there under a copy's name is whole
        assert file_digest(str(copy))[1] == registered[(str(copy.parent), copy.name.split(".")[0])]
    assert len(copies) < len(registered)
    assert not list((cache / "plans").glob("*/plan.json"))

    spec = mixture(sharded["catalog"], cache, s3_server)
    streamed = MixtureDataset(spec).read_positions(np.arange(2 * SEQUENCES))["input_ids"]
    assert np.array_equal(streamed, sharded["expected"])
    leftovers = [p for p in cache.rglob("*") if p.name.endswith((".partial", ".tmp"))]
    assert leftovers == []


def test_the_plan_follows_the_remote_catalogs_content_not_its_copy(s3_bucket, tmp_path):
    bucket, options = s3_bucket
    catalog = upload_catalog(DATASETS, bucket, options, tmp_path)
    spec = MixtureSpec.parse(mixture(catalog, tmp_path / "cache", options))
    first = resolve_mixture(spec)
    shutil.rmtree(tmp_path / "cache" / "catalogs")  # the same catalog, copied again
    again = resolve_mixture(spec)
    assert again.folder == first.folder
    assert len(list((tmp_path / "cache" / "plans").iterdir())) == 1

    # New data registered as code@2 and the catalog uploaded again: the next start sees it.
    changed = dict(DATASETS["code"], seed=7)
    write_token_dataset(f"s3://{bucket}/tokens/code", storage_options=options, **changed)
    registry = Catalog(str(tmp_path / "remote.duckdb"), storage_options=options)
    assert registry.register(f"s3://{bucket}/tokens/code", name="code").ref == "code@2"
    s3fs.S3FileSystem(**options).put_file(str(tmp_path / "remote.duckdb"), catalog[5:])
    later = resolve_mixture(spec)
    assert later.folder != first.folder
    assert sorted(info["dataset"] for info in later.datasets) == ["code@2", "wiki@1"]
    local = write_catalog(str(tmp_path / "local"), {"wiki": DATASETS["wiki"], "code": changed})
    expected = MixtureDataset(mixture(local, tmp_path / "local-cache")).read_positions(
        np.arange(40)
    )
    got = MixtureDataset(mixture(catalog, tmp_path / "cache", options)).read_positions(
        np.arange(40)
    )
    assert np.array_equal(got["input_ids"], expected["input_ids"])
