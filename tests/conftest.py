"""Shared fixtures: small real corpora on disk and a real S3 server on loopback."""

from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path

import pytest
import zstandard


def write_jsonl(path: Path, records: list[dict], compression: str | None = None) -> Path:
    """Write records as JSON Lines, compressed by `compression` ('gzip', 'zstd' or None)."""
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    if compression == "gzip":
        data = gzip.compress(data, mtime=0)
    elif compression == "zstd":
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def make_records(n: int, prefix: str = "doc", lang: str = "en") -> list[dict]:
    return [
        {
            "id": f"{prefix}-{i}",
            "text": f"{prefix} number {i} says hello " * (1 + i % 7),
            "lang": lang,
        }
        for i in range(n)
    ]


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    """A few hundred records over several files, formats and compressions."""
    raw = tmp_path / "raw"
    write_jsonl(raw / "wiki" / "a.jsonl", make_records(120, "wa"))
    write_jsonl(raw / "wiki" / "b.jsonl.gz", make_records(80, "wb", "de"), "gzip")
    write_jsonl(raw / "code" / "c.jsonl.zst", make_records(90, "cc", "py"), "zstd")
    return raw


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run `mixplane ARGS` in this process: (exit code, stdout, stderr)."""
    import sys

    from mixplane.cli import app
    from mixplane.cli.common import console, run_app, status

    # No line wrapping inside long names and paths.
    monkeypatch.setattr(console, "width", 500)
    monkeypatch.setattr(status, "width", 500)

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["mixplane", *args])
        code = run_app(app)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-compatible server (moto in server mode) on loopback for the whole session."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    yield {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
    }
    server.stop()


def create_bucket(s3_server: dict, name: str) -> str:
    """Make bucket `name` on the loopback S3 server; returns the name."""
    import boto3

    boto3.client(
        "s3",
        endpoint_url=s3_server["endpoint_url"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    ).create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_bucket(s3_server):
    """A fresh bucket on the loopback S3 server; yields (bucket name, storage options)."""
    import s3fs

    name = create_bucket(s3_server, f"bucket-{free_port()}")
    yield name, s3_server
    s3fs.S3FileSystem(**s3_server).rm(name, recursive=True)
