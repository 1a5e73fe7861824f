"""Shared fixtures: small real corpora on disk and a real S3 server on loopback."""

from __future__ import annotations

import gzip
import json
import os
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


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a `mixplane` child process: it imports the same mixplane as the
    tests (a working copy's sources, not only the installed one) and the tests' own modules
    (custom stages)."""
    import mixplane

    paths = [str(Path(__file__).resolve().parent), str(Path(mixplane.__file__).parents[1])]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return os.environ | {"PYTHONPATH": os.pathsep.join(paths)} | extra


@pytest.fixture(autouse=True, scope="session")
def machine_cache(tmp_path_factory) -> Path:
    """The machine's cache for every test that does not name its own: a folder of this
    session, not the user's ~/.cache/mixplane."""
    folder = tmp_path_factory.mktemp("machine-cache")
    before = os.environ.get("MIXPLANE_CACHE")
    os.environ["MIXPLANE_CACHE"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("MIXPLANE_CACHE", None)
    else:
        os.environ["MIXPLANE_CACHE"] = before


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


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> tuple[Path, list[str], dict]:
    """The demo's text journey, run once for the session: its work folder, the steps it
    announced and its report (test_demo checks them; the service tests use the folder)."""
    from mixplane.demo import run_demo

    work = tmp_path_factory.mktemp("demo")
    steps: list[str] = []
    report = run_demo(
        work,
        docs=1500,
        workers=2,
        batches=25,
        on_step=lambda name, _: steps.append(name),
        images=0,
        audio=0,
    )
    return work, steps, report


@pytest.fixture(scope="session")
def demo_work(demo_run) -> Path:
    """The demo's work folder (corpus, processed parts, tokens, catalog), built once."""
    return demo_run[0]


class Service:
    """A `mixplane serve` process on loopback: its base URL, token and log."""

    def __init__(self, catalog: Path, *args: str, token: str | None = None, env=None, cwd=None):
        import os
        import subprocess
        import sys
        import time
        import urllib.request

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = token
        command = [sys.executable, "-m", "mixplane", "serve", "--catalog", str(catalog)]
        command += ["--port", str(self.port), *args]
        if token:
            command += ["--token", token]
        self.log = Path(cwd or Path(catalog).parent) / f"serve-{self.port}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=cwd,
            )
        deadline = time.monotonic() + 30
        while True:
            try:
                request = urllib.request.Request(f"{self.url}/api/health", headers=self.headers)
                urllib.request.urlopen(request, timeout=1).read()
                return
            except OSError as error:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    log = self.log.read_text()
                    raise RuntimeError(f"the service did not start: {log}") from error
                time.sleep(0.1)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def get(self, path: str, **params):
        import httpx

        return httpx.get(self.url + path, params=params, headers=self.headers, timeout=60)

    def post(self, path: str, body: dict):
        import httpx

        return httpx.post(self.url + path, json=body, headers=self.headers, timeout=120)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except Exception:
            self.process.kill()


@pytest.fixture(scope="session")
def demo_service(demo_work: Path, tmp_path_factory):
    """`mixplane serve` over the demo's catalog for the whole session."""
    cache = tmp_path_factory.mktemp("service-cache")
    service = Service(demo_work / "catalog.duckdb", "--cache-dir", str(cache))
    yield service
    service.stop()


@pytest.fixture(scope="session")
def site_work(demo_work: Path, tmp_path_factory) -> Path:
    """A folder with `catalog.duckdb`: the demo's datasets and `images`, image-caption data
    made by a real pipeline (12 pictures: JPEG, PNG, one PNG with transparency, one large),
    for the service's image routes and the dashboard. The demo's own catalog is untouched."""
    import io
    import shutil

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    from mixplane.catalog import Catalog
    from mixplane.process.pipeline import run_pipeline

    site = tmp_path_factory.mktemp("site")
    shutil.copy(demo_work / "catalog.duckdb", site / "catalog.duckdb")
    pictures, captions = [], []
    for i in range(12):
        size = (900, 600) if i == 11 else (48 + 8 * i, 40 + 4 * i)
        ramp = np.linspace(0, 255, size[0], dtype=np.uint8)
        pixels = np.zeros((size[1], size[0], 4), dtype=np.uint8)
        pixels[..., 0], pixels[..., 1], pixels[..., 2] = ramp, 255 - ramp, 20 * i
        pixels[..., 3] = 128 if i == 3 else 255
        picture = Image.fromarray(pixels, "RGBA" if i == 3 else None)
        buffer = io.BytesIO()
        if i == 3:
            picture.save(buffer, "PNG")
        else:
            picture.convert("RGB").save(buffer, "PNG" if i % 2 else "JPEG")
        pictures.append(buffer.getvalue())
        captions.append(f"a gradient picture number {i}")
    raw = site / "raw"
    raw.mkdir()
    table = pa.table(
        {
            "id": [f"pic-{i:02d}" for i in range(12)],
            "text": captions,
            "language": ["en" if i % 3 else "de" for i in range(12)],
            "image": pictures,
        }
    )
    pq.write_table(table, raw / "pictures.parquet")
    run_pipeline(
        {
            "input": [{"path": str(raw / "pictures.parquet"), "image_key": "image"}],
            "output": str(site / "images"),
            "output_format": "webdataset",
            "stages": [],
        }
    )
    Catalog(site / "catalog.duckdb").register(str(site / "images"), "images")
    return site


@pytest.fixture(scope="session")
def audio_site(site_work: Path, tmp_path_factory) -> Path:
    """A folder with `catalog.duckdb`: the site's datasets (text, `images`) and `speech`, an
    audio shard of 12 tones of 0.5 to 3.25 s at 16 kHz (FLAC, the last one WAV) with their
    transcripts, written by the store's audio writer; the site's own catalog is untouched."""
    import shutil

    import numpy as np

    from mixplane.catalog import Catalog
    from mixplane.document import Document
    from mixplane.io.audio_codec import encode
    from mixplane.manifest import write_manifest
    from mixplane.store.audio import AudioShardWriter

    site = tmp_path_factory.mktemp("audio-site")
    shutil.copy(site_work / "catalog.duckdb", site / "catalog.duckdb")
    folder = site / "speech"
    writer = AudioShardWriter(str(folder), "part-00000")
    for i in range(12):
        frames = int(16_000 * (0.5 + 0.25 * i))
        tone = 0.3 * np.sin(2 * np.pi * (220 + 40 * i) * np.arange(frames) / 16_000)
        fmt = "wav" if i == 11 else "flac"
        clip = encode(tone.astype(np.float32).reshape(-1, 1), 16_000, fmt)
        language = "en" if i % 3 else "de"
        transcript = f"tone number {i} at {220 + 40 * i} hertz"
        writer.write(
            Document(f"tone-{i:02d}", transcript, "tones", {"language": language}, {fmt: clip})
        )
    config = {"output_format": "webdataset", "output_media": "audio"}
    write_manifest(str(folder), {"kind": "process", "config": config, "outputs": writer.close()})
    Catalog(site / "catalog.duckdb").register(str(folder), "speech")
    return site
