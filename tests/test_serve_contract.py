"""The published OpenAPI spec says what the service does, checked by schemathesis (its
command line, as a CI job runs it) against a real `mixplane serve` process: requests the spec
calls valid are answered (2xx, or 404 for a name the catalog does not hold), requests it calls
invalid are refused (4xx), every answer has its documented status, content type, headers and
shape, and a method the spec does not list gets a 405 naming those it does.

Values that are valid or not by what the catalog holds (a predicate, a column, a dataset, a
mixture) are the catalog's own in the requests meant to be valid (`contract_hooks.py`);
settings (every check, a few examples per operation and phase) are in `contract.toml`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import Service

HERE = Path(__file__).parent


def existing_resources(service: Service) -> dict[str, list[dict]]:
    """Path parameters naming things the service holds, per operation, read from its API."""
    samples = service.get("/api/samples", k=3).json()["samples"]
    images = service.get("/api/samples", k=3, datasets="images").json()["samples"]
    place = [{"dataset": s["dataset"], "shard": s["shard"], "index": s["index"]} for s in samples]
    pictures = [{"dataset": s["dataset"], "shard": s["shard"], "index": s["index"]} for s in images]
    speech = service.get("/api/samples", k=3, datasets="speech").json()["samples"]
    clips = [{"dataset": s["dataset"], "shard": s["shard"], "index": s["index"]} for s in speech]
    runs = [{"run": run["id"]} for run in service.get("/api/runs").json()]
    return {
        "GET /api/documents/{dataset}/{shard}/{index}": place + pictures + clips,
        "GET /api/thumbnails/{dataset}/{shard}/{index}": pictures,
        "GET /api/audio/{dataset}/{shard}/{index}": clips,
        "HEAD /api/audio/{dataset}/{shard}/{index}": clips,
        "GET /api/lineage/{dataset}": [{"dataset": "demo@1"}, {"dataset": "images"}],
        "GET /api/datasets/{name}": [{"name": "demo"}, {"name": "images"}],
        "GET /api/runs/{run}": runs,
    }


def test_the_service_does_what_its_spec_says(audio_site, tmp_path):
    # A service of its own: the jobs and plans the run posts stay there. Its catalog holds
    # datasets of tokens, images and audio.
    service = Service(audio_site / "catalog.duckdb", "--cache-dir", str(tmp_path / "cache"))
    try:
        operations = sum(len(ops) for ops in service.get("/openapi.json").json()["paths"].values())
        env = os.environ | {
            "SCHEMATHESIS_HOOKS": str(HERE / "contract_hooks.py"),
            "CONTRACT_RESOURCES": json.dumps(existing_resources(service)),
        }
        command = [
            str(Path(sys.executable).parent / "schemathesis"),
            "--no-color",
            "--config-file",
            str(HERE / "contract.toml"),
            "run",
            f"{service.url}/openapi.json",
            "--checks",
            "all",
        ]
        run = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env)
    finally:
        service.stop()
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-12_000:]
    tested = re.search(r"Tested: (\d+)", report)
    assert tested and int(tested.group(1)) == operations, report[-3000:]
    assert "Missing test data" not in report, report[-3000:]
