"""Whole-shard downloads by plain HTTP: the options it honours, faults survived, and the
s3fs path taken when the store refuses it (a real S3 server on loopback, behind our proxy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import s3fs
import xxhash
from conftest import create_bucket

from mixplane.io.flaky_proxy import Faults, FlakyProxy
from mixplane.io.plain_get import plain_http_possible
from mixplane.io.retry import Retry
from mixplane.load.remote.shard_cache import RemoteFile, ShardCache

PLAIN = {"key": "k", "secret": "s", "endpoint_url": "http://127.0.0.1:9000",
         "client_kwargs": {"region_name": "eu-west-1"},
         "config_kwargs": {"max_pool_connections": 64}}  # fmt: skip
PRESIGNED = r"[?&](X-Amz-)?Signature="  # in the query of a plain GET, of no s3fs request


def test_plain_http_only_where_it_reads_as_s3fs_would(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert plain_http_possible("s3://bucket/a.bin", PLAIN)
    assert plain_http_possible("s3://bucket/a.bin", {"anon": True})
    assert not plain_http_possible("gs://bucket/a.bin", {})
    assert not plain_http_possible("/data/a.bin", {})
    # Options that change the request: extra headers, requester pays, TLS, a session.
    for extra in ({"s3_additional_kwargs": {"SSECustomerKey": "x"}}, {"requester_pays": True},
                  {"client_kwargs": {"verify": False}}, {"profile": "dev"},
                  {"config_kwargs": {"s3": {"addressing_style": "virtual"}}}):  # fmt: skip
        assert not plain_http_possible("s3://bucket/a.bin", PLAIN | extra), extra
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert not plain_http_possible("s3://bucket/a.bin", PLAIN)


@pytest.fixture(scope="module")
def blob(s3_server) -> tuple[RemoteFile, bytes]:
    bucket = create_bucket(s3_server, "plain-get")
    data = np.random.default_rng(0).integers(0, 256, 3_000_000, dtype=np.uint8).tobytes()
    s3fs.S3FileSystem(**s3_server, skip_instance_cache=True).pipe(f"{bucket}/blob.bin", data)
    digest = f"xxh3_128:{xxhash.xxh3_128_hexdigest(data)}"
    return RemoteFile(f"s3://{bucket}/blob.bin", len(data), digest), data


def download(file: RemoteFile, options: dict, root: Path) -> bytes:
    """The file as the shard cache downloads it, in ranged GETs of 1 MiB."""
    retry = Retry(attempts=8, base_seconds=0.01)
    cache = ShardCache(str(root), None, options, retry, chunk_bytes=2**20)
    try:
        return Path(cache.acquire(file)).read_bytes()
    finally:
        cache.close()


def test_plain_gets_survive_transport_faults(blob, s3_server, tmp_path):
    file, data = blob
    # Each ranged GET fails three ways, then arrives slowly. (A flipped byte fails the
    # file's hash and the whole file comes again: see test_load_shard_cache.)
    faults = Faults(every=1, kinds=("error", "reset", "cut", "slow"), match=PRESIGNED)
    proxy = FlakyProxy(s3_server["endpoint_url"], faults)
    with proxy as endpoint:
        assert download(file, dict(s3_server, endpoint_url=endpoint), tmp_path) == data
    # The faults hit presigned GETs only: the cache read by plain HTTP, and came through.
    assert proxy.counters["slow"] == 3  # the file's three ranges
    assert proxy.counters["error"] == proxy.counters["reset"] == proxy.counters["cut"] == 3


def test_a_refused_plain_get_falls_back_to_s3fs(blob, s3_server, tmp_path):
    file, data = blob
    refuse = Faults(every=1, kinds=("refuse",), match=PRESIGNED)
    proxy = FlakyProxy(s3_server["endpoint_url"], refuse)
    with proxy as endpoint:
        assert download(file, dict(s3_server, endpoint_url=endpoint), tmp_path) == data
    # Refused once, then read through s3fs (whose requests the proxy lets by).
    assert 1 <= proxy.counters["refuse"] <= 4  # the ranged GETs already under way
