"""Reading inputs from and writing outputs to a real S3-compatible server on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import s3fs
from conftest import make_records, write_jsonl
from test_pipeline import part_hashes

from mixplane import run_pipeline
from mixplane.demo_images import serve_folder
from mixplane.errors import InputError
from mixplane.io.urls import expand_inputs
from mixplane.lineage import trace, verify
from mixplane.manifest import file_digest, read_json


def upload_corpus(fs: s3fs.S3FileSystem, bucket: str, local: Path) -> None:
    for path in sorted(local.rglob("*")):
        if path.is_file():
            fs.put_file(str(path), f"{bucket}/{path.relative_to(local)}")


def test_braces_and_globs_expand_on_s3(s3_bucket, tmp_path: Path):
    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    for i in range(4):
        write_jsonl(tmp_path / "raw" / f"shard-{i:03d}.jsonl.zst", make_records(5), "zstd")
    upload_corpus(fs, bucket, tmp_path)
    urls = [
        url for url, _ in expand_inputs(f"s3://{bucket}/raw/shard-{{001..002}}.jsonl.zst", options)
    ]
    assert urls == [
        f"s3://{bucket}/raw/shard-001.jsonl.zst",
        f"s3://{bucket}/raw/shard-002.jsonl.zst",
    ]
    assert len(expand_inputs(f"s3://{bucket}/raw/*.zst", options)) == 4


def test_pipeline_reads_s3_and_writes_s3_like_local(s3_bucket, small_corpus: Path, tmp_path: Path):
    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    upload_corpus(fs, bucket, small_corpus.parent)
    config = {
        "input": [f"s3://{bucket}/raw/wiki/*", f"s3://{bucket}/raw/code/*.jsonl.zst"],
        "stages": ["custom_stages:Shout"],
        "storage_options": options,
        "task_size_mb": 0.002,
    }
    remote = run_pipeline(config | {"output": f"s3://{bucket}/clean"})
    local = run_pipeline(config | {"output": str(tmp_path / "clean")})
    assert remote.stats["kept"] == local.stats["kept"] == 290 - remote.stats["excluded"]
    fs.get(f"{bucket}/clean", str(tmp_path / "downloaded"), recursive=True)
    assert part_hashes(tmp_path / "downloaded") == part_hashes(tmp_path / "clean")
    manifest = read_json(f"s3://{bucket}/clean/_manifest.json", options)
    assert all(i["url"].startswith(f"s3://{bucket}/raw/") for i in manifest["inputs"])
    ids = pq.read_table(tmp_path / "downloaded", columns=["id"]).column("id").to_pylist()
    assert {"wa-0", "wb-79", "cc-89"} <= set(ids)


def test_pipeline_reads_http_urls(tmp_path: Path, small_corpus: Path):
    """Inputs served over HTTP by a real server on loopback."""
    with serve_folder(small_corpus) as base:
        result = run_pipeline(
            {
                "input": [f"{base}wiki/b.jsonl.gz", f"{base}code/c.jsonl.zst"],
                "output": str(tmp_path / "o"),
            }
        )
    assert result.stats["kept"] == 170
    ids = pq.read_table(tmp_path / "o", columns=["id"]).column("id").to_pylist()
    assert ids[0] == "wb-0" and ids[-1] == "cc-89"


def test_a_server_without_range_requests_is_read_and_fingerprinted_by_streamed_gets(
    tmp_path: Path,
):
    """`python -m http.server` answers every GET with the whole file: a file larger than a
    read block (and than the manifest's hashing chunk) is read, split into no byte ranges,
    and fingerprinted all the same; Parquet, which needs ranges, is refused in one line."""
    raw = tmp_path / "raw"
    # Three records of 3 MiB: past fsspec's 5 MiB block and the 8 MiB hashing chunk.
    records = [{"id": f"big-{i}", "text": f"line {i} of a long page. " * 120_000} for i in range(3)]
    big = write_jsonl(raw / "big.jsonl", records)
    # Parquet over 5 MiB (a small file comes whole with the first GET).
    blob = pa.table({"text": ["a row"], "blob": [bytes(range(256)) * (24 << 10)]})
    pq.write_table(blob, raw / "rows.parquet", compression="none")
    with serve_folder(raw) as base:
        config = {"input": f"{base}big.jsonl", "output": str(tmp_path / "o"), "task_size_mb": 1}
        result = run_pipeline(config)
        with pytest.raises(InputError, match=r"rows.parquet: the server does not answer range"):
            run_pipeline({"input": f"{base}rows.parquet", "output": str(tmp_path / "p")})
    assert (result.stats["kept"], result.stats["quarantined"], result.stats["tasks"]) == (3, 0, 1)
    (entry,) = read_json(str(tmp_path / "o" / "_manifest.json"))["inputs"]
    assert (entry["url"], entry["size"]) == (f"{base}big.jsonl", big.stat().st_size)
    assert entry["fingerprint"] == file_digest(str(big))[1]


def test_s3_lineage_uses_the_stores_checksums_and_catches_a_changed_input(
    s3_bucket, small_corpus: Path, cli
):
    """Inputs on S3 are fingerprinted by their ETag (no second download); outputs by the
    hash computed while writing them; `verify` recomputes each the way it was recorded."""
    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    upload_corpus(fs, bucket, small_corpus.parent)
    output = f"s3://{bucket}/lineage-out"
    run_pipeline(
        {
            "input": f"s3://{bucket}/raw/wiki/*",
            "output": output,
            "storage_options": options,
        }
    )
    manifest = read_json(f"{output}/_manifest.json", options)
    for item in manifest["inputs"]:
        etag = fs.info(item["url"])["ETag"].strip('"')
        assert item["fingerprint"] == f"etag:{etag}"
    for item in manifest["outputs"]:
        assert (item["size"], item["hash"]) == file_digest(f"{output}/{item['path']}", options)
    steps = trace(output, options)
    assert all(check.ok for check in verify(steps, options))
    flag = ["--storage-options", json.dumps(options)]
    code, out, _ = cli("lineage", output, "--verify", "--json", *flag)
    assert code == 0 and json.loads(out)["failures"] == []
    # Rewriting an input gives it a new ETag: verify names it.
    changed = manifest["inputs"][0]["url"]
    fs.pipe_file(changed, fs.cat_file(changed) + b"\n")
    problems = [check for check in verify(steps, options) if not check.ok]
    assert [(check.url, check.role) for check in problems] == [(changed, "input")]
    code, _, err = cli("lineage", output, "--verify", *flag)
    assert code == 2 and "verification failed for 1 of" in err and changed in err
    code, _, err = cli("lineage", output, "--storage-options", "{not json")
    assert code == 2 and "--storage-options is not valid JSON" in err


def test_processing_and_tokenizing_on_s3_survive_a_flaky_link(
    s3_bucket, small_corpus: Path, tmp_path: Path
):
    """Inputs read and outputs written through a proxy that fails one request in three
    (503 bursts, resets, bodies cut or slowed, on reads and uploads alike), with the S3
    client's own retries off: the outputs are those of a run without the proxy."""
    from test_tokenize_backends import trained_tokenizer

    from mixplane.io.flaky_proxy import Faults, FlakyProxy
    from mixplane.store import TokenizedDataset
    from mixplane.tokenize import tokenize_dataset

    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    upload_corpus(fs, bucket, small_corpus.parent)
    tokenizer = str(trained_tokenizer(tmp_path))
    process = {"input": [f"s3://{bucket}/raw/*/*"], "stages": ["custom_stages:Shout"],
               "task_size_mb": 0.002}  # fmt: skip
    tokenize = {"tokenizer": tokenizer, "eos": True, "shard_size_mb": 0.004}
    # fmt: off
    steady = tmp_path / "steady"
    run_pipeline(process | {"output": str(steady / "clean"), "storage_options": options})
    tokenize_dataset(tokenize | {"input": str(steady / "clean"), "output": str(steady / "tokens")})
    faults = Faults(every=3, kinds=("error", "reset", "cut", "slow"), burst=2,
                    methods=("GET", "PUT", "POST"), match=rf"/{bucket}/(raw|clean|tokens)/")
    proxy = FlakyProxy(options["endpoint_url"], faults)
    with proxy as url:
        flaky = dict(options, endpoint_url=url, config_kwargs={"retries": {"max_attempts": 1}})
        remote = f"s3://{bucket}"
        run_pipeline(process | {"output": f"{remote}/clean", "storage_options": flaky})
        tokenize_dataset(tokenize | {"input": f"{remote}/clean", "output": f"{remote}/tokens",
                                     "storage_options": flaky})
    # fmt: on
    assert {"error", "reset", "cut", "slow"} <= set(proxy.counters)
    fs.get(f"{bucket}/clean", str(tmp_path / "clean"), recursive=True)
    assert part_hashes(tmp_path / "clean") == part_hashes(steady / "clean")
    tokens = TokenizedDataset(f"s3://{bucket}/tokens", options, cache_dir=str(tmp_path / "c"))
    tokens.verify()  # every shard file is as its manifest says
    expected = TokenizedDataset(str(steady / "tokens"))
    assert [s["files"] for s in tokens.shards] == [s["files"] for s in expected.shards]
