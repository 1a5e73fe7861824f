"""Queries over remote datasets on local copies of their metadata (`Catalog(metadata_cache=)`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import s3fs
from conftest import create_bucket
from processes import finish, hold_until_one_waits, start

from mixplane.catalog import Catalog
from mixplane.errors import MixplaneError
from mixplane.io.flaky_proxy import Faults, FlakyProxy, Gate
from mixplane.load.tools.synthetic import write_token_dataset

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


@pytest.fixture(scope="module")
def remote(tmp_path_factory, s3_server):
    """DATASETS on the S3 server, registered once for the module (tests that change a
    remote file put it back): `(bucket, storage options, catalog path, the ranges WHERE
    selects when queried where the files are)`."""
    bucket = create_bucket(s3_server, "mirrored")
    registry = register_remote(bucket, s3_server, tmp_path_factory.mktemp("c"))
    unmirrored = ranges(Catalog(registry, storage_options=s3_server).select(WHERE))
    return bucket, s3_server, registry, unmirrored


@contextmanager
def rewritten(options: dict, path: str, change: Callable[[bytes], bytes]) -> Iterator[bytes]:
    """The remote file `path` rewritten as `change` makes it (yielded), put back afterwards."""
    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    original = fs.cat_file(path)
    fs.pipe_file(path, change(original))
    try:
        yield change(original)
    finally:
        fs.pipe_file(path, original)


def web_metadata(bucket: str, options: dict) -> list[str]:
    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    return sorted(fs.glob(f"{bucket}/tokens/web/*.meta.parquet"))


def ranges(selection) -> list[tuple]:
    return [
        (part.dataset, part.shard.tolist(), part.start.tolist(), part.end.tolist())
        for part in sorted(selection, key=lambda p: p.dataset)
    ]


def test_mirrored_queries_answer_as_remote_ones_and_copy_once(remote, tmp_path: Path):
    bucket, options, registry, unmirrored = remote
    cache = tmp_path / "cache"
    mirrored = Catalog(registry, storage_options=options, metadata_cache=str(cache))

    with mirrored.session() as session:  # components query side by side, as a mixture does
        first, second = session.select(WHERE), session.select("source = 'wiki'")
    assert ranges(first) == unmirrored and first.documents > 0
    assert second.documents == 400
    copies = sorted(cache.rglob("*.meta.parquet"))
    shards = sum(len(version.shards) for version in mirrored.latest())
    assert len(copies) == shards > 2  # every shard's metadata, once
    assert not [p for p in cache.rglob("*.tmp")]  # no temporaries

    stamps = {path: path.stat().st_mtime_ns for path in copies}
    assert ranges(mirrored.select(WHERE)) == unmirrored
    assert {path: path.stat().st_mtime_ns for path in copies} == stamps  # reused, not copied


def test_metadata_rewritten_since_registration_is_refused(remote, tmp_path: Path):
    bucket, options, registry, _ = remote
    target = web_metadata(bucket, options)[0]
    with rewritten(options, target, lambda data: data + b"rewritten") as changed:
        mirrored = Catalog(registry, storage_options=options, metadata_cache=str(tmp_path / "c"))
        stem = target.rsplit("/", 1)[-1].split(".")[0]
        with (
            mirrored.session() as session,
            pytest.raises(MixplaneError, match=rf"{stem}.*register"),
        ):
            session.mirror.retry.base_seconds = 0.001
            session.select(WHERE)
    # Nothing half-copied or wrong is left for a later query to trust.
    assert all(p.stat().st_size != len(changed) for p in (tmp_path / "c").rglob("*.parquet"))


def test_loader_reads_token_counts_from_the_copies(remote, tmp_path: Path):
    """A remote mixture resolves from the mirrored metadata: the same stream as with none."""
    from mixplane.load import MixtureDataset

    bucket, options, registry, _ = remote
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


def test_processes_querying_together_copy_each_file_once(remote, tmp_path: Path):
    """Two processes query the same remote datasets at once (two mixtures resolving on one
    machine): one copies a folder's metadata while the other waits for its copies."""
    bucket, options, registry, expected = remote
    gate = Gate(r"/web/shard-00000-000\.meta\.parquet$")
    proxy = FlakyProxy(options["endpoint_url"], gate=gate)
    (tmp_path / "options.json").write_text(json.dumps(dict(options, endpoint_url=proxy.start())))
    try:
        args = (registry, tmp_path / "options.json", tmp_path / "cache", WHERE)
        runs = [start("query_mirrored.py", *args) for _ in range(2)]
        hold_until_one_waits(gate, runs)
        answers = [json.loads(finish(run)) for run in runs]
    finally:
        proxy.stop()
    assert [[tuple(part) for part in answer] for answer in answers] == [expected, expected]
    copied = {path: n for path, n in proxy.gets.items() if path.endswith(".meta.parquet")}
    shards = sum(len(version.shards) for version in Catalog(registry).latest())
    assert len(copied) == shards and set(copied.values()) == {1}


def test_a_copy_corrupted_on_the_way_is_fetched_again(remote, tmp_path: Path):
    """Bytes flipped in transit keep the file's size: the registered hash catches them, also
    from a store or client that checks no checksum of its own (as here)."""
    bucket, options, registry, expected = remote
    flips = Faults(every=2, kinds=("flip",), match=r"\.meta\.parquet$")
    proxy = FlakyProxy(options["endpoint_url"], flips)
    with proxy as url:
        cache = tmp_path / "cache"
        unchecked = {"response_checksum_validation": "when_required"}
        flaky = dict(options, endpoint_url=url, config_kwargs=unchecked)
        mirrored = Catalog(registry, flaky, metadata_cache=str(cache))
        assert ranges(mirrored.select(WHERE)) == expected
    assert proxy.counters["flip"] > 0
    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    stored = sorted(fs.cat_file(path) for path in fs.glob(f"{bucket}/tokens/*/*.meta.parquet"))
    assert sorted(copy.read_bytes() for copy in cache.rglob("*.meta.parquet")) == stored


def test_metadata_rewritten_with_the_same_size_is_named(remote, tmp_path: Path):
    """A file rewritten with one byte changed keeps its size: the registered hash names it
    after the retries (corruption in transit and a rewrite look the same)."""
    bucket, options, registry, _ = remote
    target = web_metadata(bucket, options)[1]
    name = target.rsplit("/", 1)[-1]
    mirrored = Catalog(registry, storage_options=options, metadata_cache=str(tmp_path / "c"))
    with rewritten(options, target, flip_middle_byte) as changed, mirrored.session() as session:
        session.mirror.retry.base_seconds = 0.001
        with pytest.raises(MixplaneError, match=rf"{name}: the bytes hash to .* register"):
            session.select(WHERE)
    # Nothing of the rewritten file is kept for a later query to trust.
    assert all(p.read_bytes() != changed for p in (tmp_path / "c").rglob("*.meta.parquet"))


def flip_middle_byte(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1 :]
