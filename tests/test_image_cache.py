"""Remote image shards through the node cache: a real S3 server on loopback behind a proxy
that injects faults, two ranks sharing one cache folder, corrupted bytes, a size limit, and
shards named directly (not cached)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
import s3fs
from conftest import create_bucket
from test_image_loader import BATCH, dataset, same, spec

from mixplane.catalog import Catalog
from mixplane.errors import ConfigError, MixplaneError
from mixplane.io.flaky_proxy import Faults, FlakyProxy
from mixplane.load.images.synthetic import write_image_catalog, write_image_dataset
from mixplane.load.images.torch import image_text_loader

DATASETS = {
    "photos": {"samples": 24, "seed": 1, "shards": 3, "size": (40, 56)},
    "art": {"samples": 16, "seed": 2, "shards": 2, "size": (40, 56)},
}
SHARD_FILES = r"\.(tar|idx)($|\?)"  # what the cache downloads (not the metadata)


@pytest.fixture(scope="module")
def stores(tmp_path_factory, s3_server):
    """The same image datasets on local disk and on the S3 server, each with a catalog, and
    the epoch the local one gives."""
    folder = tmp_path_factory.mktemp("image-stores")
    local = write_image_catalog(str(folder / "local"), DATASETS)
    bucket = create_bucket(s3_server, "image-cache")
    fs = s3fs.S3FileSystem(**s3_server)
    remote = Catalog(str(folder / "remote.duckdb"), storage_options=s3_server)
    for name, options in DATASETS.items():
        written = folder / "upload" / name
        write_image_dataset(str(written), **({"source": name} | options))
        fs.put(str(written) + "/", f"{bucket}/images/{name}/", recursive=True)
        remote.register(f"s3://{bucket}/images/{name}", name=name)
    files = sorted(f"/{p}" for p in fs.glob(f"{bucket}/images/*/*") if p.endswith((".tar", ".idx")))
    return {
        "local": local,
        "catalog": str(folder / "remote.duckdb"),
        "bucket": bucket,
        "fs": fs,
        "files": files,  # as the proxy sees their paths
        "bytes": sum(fs.size(path) for path in files),
        "expected": list(dataset(spec(local))),
    }


def rank_batches(batches: list[dict], rank: int, world: int) -> list[dict]:
    """Rank `rank`'s batches of a one-rank stream: samples rank, rank + world, ... regrouped
    in batches, whole global batches only."""
    rows = {key: np.concatenate([b[key] for b in batches])[rank::world] for key in batches[0]}
    count = len(batches) // world
    return [
        {key: value[n * BATCH : (n + 1) * BATCH] for key, value in rows.items()}
        for n in range(count)
    ]


def remote(stores: dict, folder: Path, options: dict, **fields) -> dict:
    return spec(stores["catalog"], cache_dir=str(folder), storage_options=options, **fields)


def through(url: str, s3_server: dict) -> dict:
    return dict(s3_server, endpoint_url=url)


def shard_gets(proxy: FlakyProxy, stores: dict) -> dict[str, int]:
    return {path: proxy.gets[path] for path in stores["files"]}


def test_faults_on_the_wire_give_the_local_batches_within_the_limit(stores, s3_server, tmp_path):
    limit = stores["bytes"]  # every shard's tar and index, and not a byte more
    proxy = FlakyProxy(s3_server["endpoint_url"], Faults(every=2, match=SHARD_FILES, burst=2))
    with proxy as url:
        data = dataset(
            remote(stores, tmp_path / "cache", through(url, s3_server), cache_limit=limit)
        )
        got = list(data)
    same(got, stores["expected"])  # byte for byte, whatever the wire did
    stats = data.cache_stats()
    assert stats["peak_bytes"] == limit
    assert stats["downloads"] == len(stores["files"])  # each file once, whatever the faults
    assert {"error", "reset", "cut", "slow", "flip"} <= set(proxy.counters)
    # Corrupted bodies were caught (by the client or by the manifest's hash) and refetched.
    assert stats["retry"]["retries"] + stats["hash_mismatches"] >= proxy.counters["flip"]
    # Pinned while its readers are open, let go when the dataset closes.
    assert data.files.cache.pinned_bytes() == limit
    data.close()
    assert data.files.cache.pinned_bytes() == 0


def test_two_ranks_on_one_cache_download_each_file_once(stores, s3_server, tmp_path):
    proxy = FlakyProxy(s3_server["endpoint_url"])
    with proxy as url:
        mixture = remote(stores, tmp_path / "cache", through(url, s3_server))
        ranks = [dataset(mixture, rank, 2) for rank in range(2)]
        got: list[list[dict] | None] = [None, None]

        def read(rank: int) -> None:
            got[rank] = list(ranks[rank])

        threads = [threading.Thread(target=read, args=(rank,)) for rank in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for rank in range(2):  # rank r's samples are every other sample of one rank's stream
        same(got[rank], rank_batches(stores["expected"], rank, 2))  # type: ignore[arg-type]
    assert set(shard_gets(proxy, stores).values()) == {1}  # every file once for the machine
    downloads = [r.cache_stats()["downloads"] for r in ranks]
    assert sum(downloads) == len(stores["files"])


def test_the_epoch_s_shards_download_ahead_in_the_order_it_first_reads_them(
    stores, s3_server, tmp_path
):
    data = dataset(remote(stores, tmp_path / "cache", s3_server))
    order = data.forecast()  # starts the downloads
    index = np.concatenate([batch["index"] for batch in stores["expected"]])
    reads = data.sources(index)[1].tolist()  # the shard of each sample, in reading order
    assert order == list(dict.fromkeys(reads))
    data.files.cache.finish_prefetch()
    same(list(data), stores["expected"])
    stats = data.cache_stats()
    assert stats["downloads"] == len(stores["files"])
    assert stats.get("misses", 0) == 0  # no read waited for a download


def test_dataloader_workers_share_the_machines_copies(stores, s3_server, tmp_path):
    proxy = FlakyProxy(s3_server["endpoint_url"])
    with proxy as url:
        data = dataset(remote(stores, tmp_path / "cache", through(url, s3_server)))
        got = [{k: v.numpy() for k, v in batch.items()} for batch in image_text_loader(data, 2)]
    same(got, stores["expected"])
    assert set(shard_gets(proxy, stores).values()) == {1}


def test_a_flipped_byte_on_the_wire_is_fetched_again(stores, s3_server, tmp_path):
    faults = Faults(every=2, kinds=("flip",), match=SHARD_FILES)
    proxy = FlakyProxy(s3_server["endpoint_url"], faults)
    with proxy as url:
        options = dict(through(url, s3_server), config_kwargs={"retries": {"max_attempts": 1}})
        data = dataset(remote(stores, tmp_path / "cache", options))
        got = list(data)
    same(got, stores["expected"])
    stats = data.cache_stats()
    # Every flipped body failed the registered hash, and the file was downloaded again.
    assert stats["hash_mismatches"] == proxy.counters["flip"] > 0
    assert stats["downloads"] == len(stores["files"])


def test_a_changed_remote_shard_is_refused_and_never_handed_out(stores, s3_server, tmp_path):
    # A tar's middle byte: inside an image, which read in place would decode to other pixels.
    fs = stores["fs"]
    path = next(name for name in stores["files"] if name.endswith(".tar")).lstrip("/")
    original = fs.cat_file(path)
    changed = bytearray(original)
    changed[len(changed) // 2] ^= 0x01  # same size: only the hash can tell
    fs.pipe_file(path, bytes(changed))
    try:
        data = dataset(remote(stores, tmp_path / "cache", s3_server))
        data.files.retry.base_seconds = 0.001
        with pytest.raises(MixplaneError, match=path.rsplit("/", 1)[-1] + ".*manifest"):
            list(data)
        assert data.cache_stats()["hash_mismatches"] == data.files.retry.attempts
        copy = Path(data.files.cache.path(f"s3://{path}"))
        assert copy.parent.exists() and not copy.exists()  # no copy under its name
        assert not list(copy.parent.glob("*.partial"))
    finally:
        fs.pipe_file(path, original)


def test_a_limit_below_the_mixtures_shards_is_refused_before_downloading(
    stores, s3_server, tmp_path
):
    with FlakyProxy(s3_server["endpoint_url"]) as url:
        limit = stores["bytes"] - 1
        data = dataset(
            remote(stores, tmp_path / "cache", through(url, s3_server), cache_limit=limit)
        )
        with pytest.raises(ConfigError, match=f"at least {stores['bytes']:,} bytes"):
            next(iter(data))
    assert not list((tmp_path / "cache").rglob("*.tar"))
    # With ranges the cache holds the indexes alone: the same limit is room enough.
    ranged = dataset(
        remote(stores, tmp_path / "cache", s3_server, cache="ranges", cache_limit=limit)
    )
    same([next(iter(ranged))], stores["expected"][:1])


def test_shards_named_directly_are_read_in_place_uncached(stores, s3_server, tmp_path, monkeypatch):
    """Without a catalog nothing registered says what the bytes must be: no cache."""
    monkeypatch.setenv("MIXPLANE_CACHE", str(tmp_path / "cache"))
    local = Path(stores["local"]).parent / "photos"
    url = f"s3://{stores['bucket']}/images/photos/"
    want = list(dataset(str(local), seed=3))
    with FlakyProxy(s3_server["endpoint_url"]) as proxy_url:
        data = dataset(url, seed=3, storage_options=through(proxy_url, s3_server))
        got = list(data)
    same(got, want)
    assert data.cache_stats() == {} and not any(data.files.cached)
    assert not (tmp_path / "cache").exists()
    assert len(got) == DATASETS["photos"]["samples"] // BATCH


def test_a_dropped_reader_lets_its_shard_go(stores, s3_server, tmp_path, monkeypatch):
    from mixplane.load.images import samples as samples_module

    monkeypatch.setattr(samples_module, "READERS_KEPT", 2)
    data = dataset(remote(stores, tmp_path / "cache", s3_server))
    got = list(data)
    same(got, stores["expected"])
    kept = list(data._readers)
    assert len(kept) == 2  # the others were dropped, and their pins with them
    held = sum(file.size for number in kept for file in data.files.files(number))
    assert data.files.cache.pinned_bytes() == held < stores["bytes"]


# -- cache: ranges ------------------------------------------------------------------------


def test_ranges_read_samples_from_storage_and_cache_only_the_indexes(stores, s3_server, tmp_path):
    """`cache: ranges` under every kind of fault on the wire: the local batches, byte for
    byte; the cache holds the indexes alone; flipped bytes were caught by the samples'
    digests (boto's own retries are off, so nothing else could) and read again."""
    faults = Faults(every=3, match=r"\.tar($|\?)", burst=2)
    proxy = FlakyProxy(s3_server["endpoint_url"], faults)
    with proxy as url:
        options = dict(through(url, s3_server), config_kwargs={"retries": {"max_attempts": 1}})
        data = dataset(remote(stores, tmp_path / "cache", options, cache="ranges"))
        data.files.retry.base_seconds = 0.001
        got = list(data)
    same(got, stores["expected"])
    stats = data.cache_stats()
    indexes = [name for name in stores["files"] if name.endswith(".idx")]
    assert stats["downloads"] == len(indexes)
    cached = sorted(p.name for p in (tmp_path / "cache").rglob("*") if p.suffix in (".tar", ".idx"))
    assert cached and all(name.endswith(".idx") for name in cached)
    assert stats["ranges"]["requests"] > 0 and {"flip", "cut", "error"} <= set(proxy.counters)
    assert stats["retry"]["retried"].get("CorruptRead", 0) >= proxy.counters["flip"]


def test_ranges_refuse_a_sample_that_never_matches_its_digest(stores, s3_server, tmp_path):
    from mixplane.store.images.format import decode_index

    fs = stores["fs"]
    data = dataset(remote(stores, tmp_path / "cache", s3_server, cache="ranges"))
    data.files.retry.base_seconds = 0.001
    where = data.locate(int(stores["expected"][0]["index"][0]))  # the first sample read
    tar = f"{where['folder']}/{where['shard']}.tar".removeprefix("s3://")
    offsets, _ = decode_index(fs.cat_file(tar.removesuffix(".tar") + ".idx"), "idx")
    original = fs.cat_file(tar)
    changed = bytearray(original)
    changed[int(offsets[where["sample"]]) + 600] ^= 0x01  # its image: same size, other bytes
    fs.pipe_file(tar, bytes(changed))
    try:
        name = f"{where['shard']}.tar"
        with pytest.raises(MixplaneError, match=rf"{name}: samples .* hash to .* the index says"):
            next(iter(data))
    finally:
        fs.pipe_file(tar, original)


def test_ranges_refuse_shards_whose_index_has_no_digests(s3_server, tmp_path):
    """A version 1 index (written before sample digests) cannot check a ranged read: the
    loader says so instead of reading unchecked bytes."""
    from mixplane.manifest import MANIFEST, file_digest
    from mixplane.store.images.format import decode_index, encode_index

    folder = tmp_path / "old"
    write_image_dataset(str(folder), source="old", **DATASETS["art"])
    manifest = json.loads((folder / MANIFEST).read_text())
    for entry in manifest["outputs"]:
        if entry["path"].endswith(".idx"):
            idx = folder / entry["path"]
            idx.write_bytes(encode_index(decode_index(idx.read_bytes(), entry["path"])[0], None))
            entry["size"], entry["hash"] = file_digest(str(idx))
    (folder / MANIFEST).write_text(json.dumps(manifest))
    bucket = create_bucket(s3_server, "image-v1")
    fs = s3fs.S3FileSystem(**s3_server)
    fs.put(str(folder) + "/", f"{bucket}/old/", recursive=True)
    catalog = Catalog(str(tmp_path / "catalog.duckdb"), storage_options=s3_server)
    catalog.register(f"s3://{bucket}/old", name="old")
    mixture = spec(
        str(tmp_path / "catalog.duckdb"),
        cache_dir=str(tmp_path / "cache"),
        storage_options=s3_server,
        cache="ranges",
        components={"old": {"datasets": ["old"]}},
    )
    with pytest.raises(ConfigError, match="version 1 image index.*cache: shards"):
        next(iter(dataset(mixture)))
