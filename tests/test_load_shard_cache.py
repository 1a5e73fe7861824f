"""Remote shards through the node cache: a real S3 server on loopback behind a proxy that
injects faults, a size limit, several processes, kill -9 mid-download, corrupted objects."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import s3fs
import yaml
from conftest import create_bucket
from test_load_remote import upload_catalog

from mixplane.errors import ConfigError, MixplaneError
from mixplane.io.flaky_proxy import Faults, FlakyProxy, Gate
from mixplane.load import MixtureDataset
from mixplane.load.read import source as source_module
from mixplane.load.read.forecast import block_shards
from mixplane.load.tools.synthetic import write_catalog

DATASETS = {
    "wiki": {"documents": 240, "seed": 1, "source": "wiki", "mean_tokens": 40},
    "code": {"documents": 160, "seed": 2, "source": "code", "mean_tokens": 50},
    "web": {"documents": 200, "seed": 3, "source": "web", "mean_tokens": 30},
}
SHARD_BYTES = 6_000  # about 3,000 tokens: several shards per dataset
SEQUENCES = 400
STEPS = {"global_batch_size": 8}  # for set_weights
SCRIPT = Path(__file__).parent / "scripts" / "read_remote.py"
BIN = r"\.bin($|\?)"  # token files, read by s3fs or by presigned plain GETs


def mixture(catalog: str, cache: Path, options: dict, limit: int | str | None = None) -> dict:
    return {
        "catalog": catalog,
        "cache_dir": str(cache),
        "cache_limit": limit,
        "storage_options": options,
        "seq_len": 32,
        "eos_id": 0,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.5},
            "code": {"where": "source = 'code'", "weight": 0.3},
            "web": {"where": "source = 'web'", "weight": 0.2},
        },
    }


@pytest.fixture(scope="module")
def stores(tmp_path_factory, s3_server):
    """The same datasets on local disk and on the S3 server, each with its own catalog."""
    folder = tmp_path_factory.mktemp("stores")
    bucket = create_bucket(s3_server, "shard-cache")
    settings = {name: dict(s, shard_bytes=SHARD_BYTES) for name, s in DATASETS.items()}
    local = write_catalog(str(folder / "local"), settings)
    catalog = upload_catalog(settings, bucket, s3_server, folder)
    fs = s3fs.S3FileSystem(**s3_server)
    shards = sorted(fs.glob(f"{bucket}/tokens/*/*.bin"))
    expected = MixtureDataset(mixture(local, folder / "local-cache", {})).read_positions(
        np.arange(SEQUENCES)
    )
    return {
        "local": local,
        "bucket": bucket,
        "catalog": catalog,
        "shards": shards,
        "shard_bytes": {path: fs.size(path) for path in shards},
        "expected": expected,
        "fs": fs,
    }


def through(proxy_url: str, s3_server: dict) -> dict:
    return dict(s3_server, endpoint_url=proxy_url)


def read_stream(spec: dict, count: int = SEQUENCES) -> tuple[np.ndarray, MixtureDataset]:
    """The first `count` sequences by iterating, one sequence a block (few shards pinned)."""
    dataset = MixtureDataset(spec, read_ahead=1, prefetch=1)
    rows = [batch["input_ids"] for _, batch in zip(range(count), dataset, strict=False)]
    dataset.close()
    return np.stack(rows), dataset


def cache_bytes(cache: Path) -> int:
    folder = cache / "shards"
    if not folder.exists():
        return 0
    # A listing is not a snapshot: a download renamed while it is read can show up under
    # both names (NAME.partial, then NAME), and must be counted once.
    entries = {e.name: e for e in os.scandir(folder)
               if not e.name.endswith(".lock") and not e.name.startswith(".")}  # fmt: skip
    total = 0
    for name, entry in entries.items():
        if name.endswith(".partial") and name.removesuffix(".partial") in entries:
            continue
        with contextlib.suppress(FileNotFoundError):  # removed while we looked
            total += entry.stat().st_size
    return total


def test_faults_on_the_wire_give_the_local_stream_within_the_limit(stores, s3_server, tmp_path):
    limit = sum(stores["shard_bytes"].values())  # every shard, and not a byte more
    cache = tmp_path / "cache"
    proxy = FlakyProxy(s3_server["endpoint_url"], Faults(every=2, match=BIN, burst=2))
    with proxy as proxy_url:
        spec = mixture(stores["catalog"], cache, through(proxy_url, s3_server), limit)
        got, dataset = read_stream(spec)
    assert np.array_equal(got, stores["expected"]["input_ids"])
    stats = dataset.source.cache.stats()
    assert stats["peak_bytes"] == limit  # every shard by the last download, and never more
    assert stats["downloads"] == len(stores["shards"])  # each shard once, whatever the faults
    assert {"error", "reset", "cut", "slow", "flip"} <= set(proxy.counters)
    # Corrupted bodies were caught (by the client's checksum or by ours) and fetched again.
    assert stats["retry"]["retries"] + stats["hash_mismatches"] >= proxy.counters["flip"]


def test_shards_of_other_mixtures_make_room_farthest_first(stores, s3_server, tmp_path):
    cache = tmp_path / "cache"
    wiki_only = dict(mixture(stores["catalog"], cache, s3_server))
    wiki_only["components"] = {"wiki": {"where": "source = 'wiki'", "weight": 1}}
    read_stream(wiki_only, 200)
    wiki = sum(size for path, size in stores["shard_bytes"].items() if "/wiki/" in path)
    assert cache_bytes(cache) == wiki
    # A mixture of the other datasets, with room for its own shards and nothing else: the
    # wiki shards, which it never reads (the farthest next use), make room.
    others = dict(mixture(stores["catalog"], cache, s3_server))
    others["components"] = {
        "code": {"where": "source = 'code'", "weight": 0.6},
        "web": {"where": "source = 'web'", "weight": 0.4},
    }
    limit = sum(stores["shard_bytes"].values()) - wiki
    others["cache_limit"] = limit
    _, dataset = read_stream(others, 200)
    stats = dataset.source.cache.stats()
    assert 0 < stats["peak_bytes"] <= limit
    own = [dataset.source.cache.path(f"s3://{path}") for path in stores["shards"]
           if "/wiki/" not in path]  # fmt: skip
    # Only wiki shards made room: every shard of its own that it downloaded is still there.
    assert stats["evictions"] > 0
    assert stats["downloads"] == sum(os.path.exists(copy) for copy in own) > 0


def test_a_shuffle_window_lets_a_small_cache_stream_without_thrashing(stores, s3_server, tmp_path):
    """Shards shuffled a window at a time: the cache holds two windows per component, well
    below the data, prefetches what comes next and evicts what comes last."""
    windowed = {"shuffle_window": 1}
    sizes: dict[str, list[int]] = {}
    for path, size in stores["shard_bytes"].items():
        sizes.setdefault(path.split("/")[-2], []).append(size)
    limit = sum(sum(sorted(group)[-2:]) for group in sizes.values())
    assert limit < 0.9 * sum(stores["shard_bytes"].values())
    local = dict(mixture(stores["local"], tmp_path / "local-cache", {}), **windowed)
    expected = MixtureDataset(local).read_positions(np.arange(1000))["input_ids"]
    cache = tmp_path / "cache"
    spec = dict(mixture(stores["catalog"], cache, s3_server, limit), **windowed)
    got, dataset = read_stream(spec, 1000)
    assert np.array_equal(got, expected)
    assert not np.array_equal(expected[:400], stores["expected"]["input_ids"])  # another order
    stats = dataset.source.cache.stats()
    assert 0 < stats["peak_bytes"] <= limit
    assert stats["evictions"] > 0
    # Shards come again only when a later epoch's windows need them (13 downloads of 10
    # shards here; a shuffle of all documents together would need hundreds).
    assert stats["downloads"] <= 2 * len(stores["shards"])
    assert stats["hits"] > stats["misses"]  # most shards were there before the reader asked


def test_a_stream_pins_a_shard_once_for_the_blocks_in_a_row_that_read_it(
    stores, s3_server, tmp_path
):
    """Consecutive blocks often read the same shards: a stream keeps those pinned from one
    block to the next, rather than letting go and pinning again, and lets go as it ends."""
    limit = sum(stores["shard_bytes"].values())  # with a limit, blocks pin what they read
    cache = tmp_path / "cache"
    # A shard at a time per component: consecutive blocks share shards.
    spec = dict(mixture(stores["catalog"], cache, s3_server, limit), shuffle_window=1)
    local = dict(mixture(stores["local"], tmp_path / "local-cache", {}), shuffle_window=1)
    expected = MixtureDataset(local).read_positions(np.arange(SEQUENCES))["input_ids"]
    dataset = MixtureDataset(spec, read_ahead=4, prefetch=1)  # blocks of 4 sequences
    stream = iter(dataset)
    rows = [next(stream)["input_ids"] for _ in range(SEQUENCES)]
    assert np.array_equal(np.stack(rows), expected)
    # The blocks planned so far: those handed out, and the one read ahead.
    blocks = np.arange(SEQUENCES + 4).reshape(-1, 4)
    shards = [set(block_shards(dataset.context, block).tolist()) for block in blocks]
    runs = sum(len(now - before) for before, now in zip([set()] + shards, shards, strict=False))
    counters = dataset.source.cache.counters
    assert counters["hits"] + counters["misses"] == runs
    assert runs < sum(len(numbers) for numbers in shards) / 2  # what pinning each block took
    assert dataset.source.cache.pinned_bytes() > 0
    stream.close()
    assert dataset.source.cache.pinned_bytes() == 0  # nothing held once the stream ends


def test_every_kind_of_fault_is_survived(stores, s3_server, tmp_path):
    # Each kind of fault on every other shard request, with botocore's retries off (s3fs
    # and our own still retry).
    for kind in ("error", "reset", "cut", "slow", "flip"):
        proxy = FlakyProxy(s3_server["endpoint_url"], Faults(every=2, kinds=(kind,), match=BIN))
        with proxy as url:
            options = dict(through(url, s3_server), config_kwargs={"retries": {"max_attempts": 1}})
            spec = mixture(stores["catalog"], tmp_path / kind, options)
            got, dataset = read_stream(spec, 120)
        assert np.array_equal(got, stores["expected"]["input_ids"][:120]), kind
        assert proxy.counters[kind] > 0, kind


def test_processes_sharing_a_cache_download_each_shard_once(stores, s3_server, tmp_path):
    spec = mixture(stores["catalog"], tmp_path / "cache", s3_server)
    (tmp_path / "mixture.json").write_text(json.dumps(spec))
    runs = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), str(tmp_path / "mixture.json"), str(rank), "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(2)
    ]
    reports = []
    for run in runs:
        out, err = run.communicate(timeout=240)
        assert run.returncode == 0, err
        reports.append(json.loads(out))
    expected = stores["expected"]["input_ids"]
    for rank, report in enumerate(reports):
        assert np.array_equal(np.array(report["input_ids"]), expected[rank::2][:100])
    downloaded = sum(report["stats"]["downloads"] for report in reports)
    touched = {name for report in reports for name in report["cached"]}
    assert downloaded == len(touched) > 0


def test_a_download_killed_midway_is_never_read(stores, s3_server, tmp_path):
    cache = tmp_path / "cache"
    spec = mixture(stores["catalog"], cache, s3_server)
    MixtureDataset(spec)  # the catalog and the plan cached: the reader below starts at once
    gate = Gate(BIN)  # shard bodies held halfway: the reader is mid-download until killed
    with FlakyProxy(s3_server["endpoint_url"], gate=gate) as url:
        (tmp_path / "mixture.json").write_text(
            json.dumps(dict(spec, storage_options=through(url, s3_server)))
        )
        command = [sys.executable, str(SCRIPT), str(tmp_path / "mixture.json"), "0", "1"]
        run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        gate.wait_held(1)
        run.send_signal(signal.SIGKILL)
        run.wait()
    partials = list((cache / "shards").glob("*.partial"))
    assert partials, "the reader was killed before it began a download"
    # Nothing holds the dead process's partial file: the next reader removes it and fetches
    # the whole shard again.
    got, dataset = read_stream(spec, 100)
    assert np.array_equal(got, stores["expected"]["input_ids"][:100])
    assert not any(p.exists() for p in partials)
    assert dataset.source.cache.stats()["stale_partials_removed"] >= 1


@contextmanager
def one_byte_changed(stores: dict):
    """The first remote shard with its middle byte flipped, restored afterwards; yields its
    path."""
    fs, path = stores["fs"], stores["shards"][0]
    original = fs.cat_file(path)
    changed = bytearray(original)
    changed[len(changed) // 2] ^= 0x01
    fs.pipe_file(path, bytes(changed))
    try:
        yield path
    finally:
        fs.pipe_file(path, original)


def test_a_changed_remote_shard_is_named_after_the_retries(stores, s3_server, tmp_path):
    with one_byte_changed(stores) as path:
        spec = mixture(stores["catalog"], tmp_path / "cache", s3_server)
        dataset = MixtureDataset(spec, read_ahead=1, prefetch=0)
        dataset.source.retry.base_seconds = 0.01
        with pytest.raises(MixplaneError, match=path.rsplit("/", 1)[-1]) as caught:
            for _ in dataset:
                pass
        assert "manifest" in str(caught.value)
        assert dataset.source.cache.stats()["hash_mismatches"] == dataset.source.retry.attempts
        assert not list((tmp_path / "cache" / "shards").glob("*.partial"))


def test_a_prefetch_does_not_wait_for_a_reader_of_the_file_it_wanted(stores, s3_server, tmp_path):
    """A prefetch that found a shard missing, while a reader downloaded and pinned it in the
    meantime, sees the shard complete and returns: it does not wait for an exclusive lock
    that the reader's pin holds until the reader is done (which deadlocked `close()`,
    waiting for that prefetch, with the pin still held)."""
    from mixplane.io.locks import close_lock, open_lock
    from mixplane.load.remote.shard_cache import RemoteFile, ShardCache

    path = stores["shards"][0]
    body = stores["fs"].cat_file(path)
    file = RemoteFile(f"s3://{path}", len(body), "xxh3_128:unused")  # never downloaded here
    cache = ShardCache(str(tmp_path / "cache"), None, s3_server)
    target = cache.path(file.url)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    reader = open_lock(target + ".lock")
    fcntl.flock(reader, fcntl.LOCK_SH)  # a reader holds the shard's lock while it is missing
    prefetch = threading.Thread(target=cache._prefetch_one, args=(file,))
    prefetch.start()
    while cache.stats()["waited"] == 0 and prefetch.is_alive():
        time.sleep(0.001)  # until the prefetch has seen it missing and found the lock taken
    Path(target).write_bytes(body)  # the reader's download lands; it keeps its pin
    prefetch.join(timeout=10)
    finished = not prefetch.is_alive()
    fcntl.flock(reader, fcntl.LOCK_UN)
    close_lock(reader)
    prefetch.join()
    assert finished, "the prefetch waited for the reader's pin to go"
    assert cache.stats()["downloads"] == 0 and cache.stats()["waited"] > 0


def test_a_limit_below_the_mixtures_shards_is_refused_before_reading(stores, s3_server, tmp_path):
    needed = sum(stores["shard_bytes"].values())
    spec = mixture(stores["catalog"], tmp_path / "cache", s3_server, limit=needed - 1)
    count = len(stores["shards"])
    with pytest.raises(
        ConfigError, match=rf"smaller than the {count} remote shards .* {needed:,} bytes"
    ):
        next(iter(MixtureDataset(spec, read_ahead=1)))
    assert not list((tmp_path / "cache").rglob("*.bin"))


def test_the_limit_comes_from_the_environment(stores, s3_server, tmp_path, monkeypatch):
    monkeypatch.setenv("MIXPLANE_CACHE_LIMIT", "2KB")
    spec = mixture(stores["catalog"], tmp_path / "cache", s3_server)
    with pytest.raises(ConfigError, match="cache_limit 2.0 KB"):
        next(iter(MixtureDataset(spec, read_ahead=1)))
    monkeypatch.setenv("MIXPLANE_CACHE_LIMIT", "lots")
    with pytest.raises(ConfigError, match="'lots' is not a size"):
        MixtureDataset(spec, read_ahead=1)


def test_the_readme_remote_mixture_as_written(stores, s3_server, tmp_path):
    """The README's object-storage lines, with this bucket, this server and a small limit."""
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", readme, flags=re.S)
    snippet = next(block for block in blocks if "cache_limit" in block)
    text = snippet.replace("s3://my-bucket/catalog.duckdb", stores["catalog"])
    text = text.replace("https://s3.example.com", s3_server["endpoint_url"])
    text = text.replace("200GB", "36400B").replace("shuffle_window: 8", "shuffle_window: 1")
    spec = yaml.safe_load(text)
    assert spec["storage_options"] == {"endpoint_url": s3_server["endpoint_url"]}
    spec["storage_options"] = s3_server  # with this server's credentials
    spec |= {k: v for k, v in mixture("", tmp_path, {}).items() if k not in spec}
    got, dataset = read_stream(spec, 200)
    local = dict(mixture(stores["local"], tmp_path / "local", {}), shuffle_window=1)
    assert np.array_equal(got, MixtureDataset(local).read_positions(np.arange(200))["input_ids"])
    assert dataset.source.cache.stats()["downloads"] > 0


def test_the_proxy_passes_object_sizes_on_head(stores, s3_server):
    """Clients that size an object by HEAD (boto3's downloads, s3fs without a listing) see
    its real size through the proxy, and the same bytes."""
    path = stores["shards"][0]
    with FlakyProxy(s3_server["endpoint_url"], Faults(latency=0.001)) as url:
        fs = s3fs.S3FileSystem(**through(url, s3_server), skip_instance_cache=True)
        assert fs.info(path)["size"] == stores["shard_bytes"][path]
        with fs.open(path, "rb") as handle:
            assert handle.read() == stores["fs"].cat_file(path)


def test_blocks_needing_more_than_the_limit_are_refused_before_downloading(
    stores, s3_server, tmp_path
):
    """Two shuffle windows per component fit, but each block reads more shards than that:
    refused at the first block, naming what to lower, before anything is downloaded.
    (Blocks of one sequence fit: the shuffle-window test streams under such a limit.)"""
    sizes = sorted(stores["shard_bytes"].values())
    limit = 2 * sum(sizes[-3:])  # two windows of one shard for each of the 3 components
    spec = mixture(stores["catalog"], tmp_path / "cache", s3_server, limit=limit)
    spec["shuffle_window"] = 1
    with pytest.raises(ConfigError, match=r"blocks read together .* need \d+ shards .*read_ahead"):
        next(iter(MixtureDataset(spec, read_ahead=SEQUENCES)))
    assert not list((tmp_path / "cache").rglob("*.bin"))


def test_the_first_batch_does_not_wait_for_large_shards(s3_bucket, tmp_path, monkeypatch):
    """A cold reader whose first block would wait for large shards reads that block's pieces
    by ranges; later blocks read the cached shards. (Large: over `RANGED_OPENING_BYTES`,
    lowered here to 400 KB shards on a link of 200 KB/s.)"""
    monkeypatch.setattr(source_module, "RANGED_OPENING_BYTES", 300_000)
    bucket, options = s3_bucket
    settings = {"web": {"documents": 3000, "seed": 5, "source": "web", "mean_tokens": 200}}
    settings["web"]["shard_bytes"] = 400_000  # 3 shards; one takes 2 s over the link below
    local = write_catalog(str(tmp_path / "local"), settings)
    catalog = upload_catalog(settings, bucket, options, tmp_path)
    spec = mixture(catalog, tmp_path / "cache", options, limit="2MB")
    spec["components"] = {"web": {"where": "source = 'web'", "weight": 1}}
    local_spec = dict(spec, catalog=local, cache_dir=str(tmp_path / "local-cache"))
    expected = MixtureDataset(local_spec).read_positions(np.arange(300))["input_ids"]
    MixtureDataset(spec)  # the catalog and the plan cached: only the tokens are left to fetch
    shards = tmp_path / "cache" / "shards"
    with FlakyProxy(options["endpoint_url"], Faults(bandwidth=200_000, match=BIN)) as url:
        remote = dict(spec, storage_options=through(url, options))
        dataset = MixtureDataset(remote, read_ahead=16)  # blocks far smaller than a shard
        stream = iter(dataset)
        first = next(stream)["input_ids"]
        whole = [p.name for p in shards.glob("*.bin")]
        rest = [next(stream)["input_ids"] for _ in range(299)]
        dataset.close()
    assert whole == [], "the first batch waited for a whole shard"
    assert np.array_equal(np.stack([first, *rest]), expected)
    stats = dataset.source.stats()
    assert 0 < stats["ranges"]["bytes"] < 100_000  # the first blocks' units, no more
    assert stats["ranges"]["checksum_files"] > 0
    assert stats["downloads"] >= 1  # then whole shards
    assert "downloaded_per_consumed" not in stats  # a figure of `cache: ranges` only


def test_a_first_batch_from_small_shards_reads_them_whole(stores, s3_server, tmp_path):
    """Small shards come whole even for the first batch (a few large requests beat dozens
    of small ones), all of them at once, and nothing is read by ranges."""
    spec = mixture(stores["catalog"], tmp_path / "cache", s3_server)
    got, dataset = read_stream(spec)
    assert np.array_equal(got, stores["expected"]["input_ids"])
    stats = dataset.source.stats()
    assert "ranges" not in stats and stats["downloads"] > 0


def test_workers_take_their_first_batches_from_the_training_process(
    stores, s3_server, tmp_path, monkeypatch
):
    """With DataLoader workers (the README's `torch_loader`), the training process reads the
    workers' first batches itself, by ranges over large shards (`RANGED_OPENING_BYTES`,
    lowered here), then downloads the shards after them: the batches are the local run's,
    and each shard crosses the wire once for the three processes."""
    from mixplane.load.torch import torch_loader

    monkeypatch.setattr(source_module, "RANGED_OPENING_BYTES", 0)
    proxy = FlakyProxy(s3_server["endpoint_url"], Faults(match=BIN))
    cache = tmp_path / "cache"
    with proxy as proxy_url:
        spec = mixture(stores["catalog"], cache, through(proxy_url, s3_server))
        dataset = MixtureDataset(spec)
        loader = torch_loader(dataset, batch_size=8, num_workers=2)
        batches = zip(range(SEQUENCES // 8), loader, strict=False)
        rows = [batch["input_ids"].numpy() for _, batch in batches]
    assert np.array_equal(np.concatenate(rows), stores["expected"]["input_ids"])
    stats = dataset.source.stats()
    assert 0 < stats["ranges"]["bytes"] < 10_000  # two batches' units
    assert stats["downloads"] > 0  # the shards after them, for the workers
    # One GET per shard (each fits in one request) beside the ranged ones, for 3 processes.
    shards = len(list((cache / "shards").glob("*.bin")))
    assert proxy.counters["matched"] == shards + stats["ranges"]["requests"]


def test_a_worker_hands_out_its_first_batch_without_a_request(stores, s3_server, tmp_path):
    """A worker's copy of the dataset (as a spawned DataLoader worker gets it) carries its
    first batch: it hands it out before making any request. A weight change reaching the
    worker first drops it, and the batch is read again under the new weights."""
    from mixplane.load.plan.partition import Layout
    from mixplane.load.torch.adapter import TorchMixtureDataset

    proxy = FlakyProxy(s3_server["endpoint_url"])
    with proxy as proxy_url:
        spec = mixture(stores["catalog"], tmp_path / "cache", through(proxy_url, s3_server))
        dataset = MixtureDataset(dict(spec, **STEPS))
        TorchMixtureDataset(dataset, batch_size=8)  # connects the workers' channel
        dataset.begin_worker_pass(2, 8)
        dataset.open_for_workers(2, 8)
        workers = [pickle.loads(pickle.dumps(dataset)) for _ in range(2)]
        dataset.close()  # its downloads for the workers are over
        before = proxy.counters["requests"]
        firsts = []
        for number, worker in enumerate(workers):
            layout = Layout(workers=2, worker=number, block=8)
            firsts.append(next(worker.iterate(layout, batched=True, prefetch=0)))
        assert proxy.counters["requests"] == before
        expected = stores["expected"]["input_ids"]
        assert np.array_equal(firsts[0]["input_ids"], expected[:8])
        assert np.array_equal(firsts[1]["input_ids"], expected[8:16])

        # Another worker 1, which hears of a weight change before its first batch.
        worker = pickle.loads(pickle.dumps(dataset))
        weights = {"wiki": 0.2, "code": 0.2, "web": 0.6}
        worker.set_weights(0, weights)
        layout = Layout(workers=2, worker=1, block=8)
        changed = next(worker.iterate(layout, batched=True, prefetch=0))["input_ids"]
    local = MixtureDataset(dict(mixture(stores["local"], tmp_path / "local", {}), **STEPS))
    local.set_weights(0, weights)
    assert np.array_equal(changed, local.read_positions(np.arange(8, 16))["input_ids"])
    assert not np.array_equal(changed, expected[8:16])


def test_a_forked_reader_starts_over(stores, s3_server, tmp_path):
    """A process forked while reading (as DataLoader workers are) shares no thread, lock or
    pin with its parent: its sources start over and read the same stream on their own."""
    spec = mixture(stores["catalog"], tmp_path / "cache", s3_server, limit=10**9)
    dataset = MixtureDataset(spec, read_ahead=8)
    stream = iter(dataset)
    first = [next(stream)["input_ids"] for _ in range(8)]  # prefetch threads are running
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 if it read the rest of the stream right
        try:
            fresh = dataset.source._cache is None and not dataset.source._opened.any()
            rest = dataset.read_positions(np.arange(8, SEQUENCES))["input_ids"]
            same = np.array_equal(rest, stores["expected"]["input_ids"][8:])
            os._exit(0 if fresh and same else 1)
        except BaseException:  # noqa: BLE001 - reported by the exit status
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    dataset.close()
    assert os.waitstatus_to_exitcode(status) == 0
    assert np.array_equal(np.stack(first), stores["expected"]["input_ids"][:8])
