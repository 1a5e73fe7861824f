"""The service is safe to expose: a token off loopback, no paths or SQL from requests, a time
limit on queries, bounded answers (the spec itself: test_serve_contract.py)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time

import httpx
import pytest
from conftest import Service

from mixplane.serve import scans
from mixplane.serve.pool import ScanPool
from mixplane.serve.queries import QueryRunner, QueryTimeout
from mixplane.serve.scans import ScopeSpec

TOKEN = "s3cret-token-for-tests-only"


def test_binding_off_loopback_needs_a_token(demo_work):
    catalog = str(demo_work / "catalog.duckdb")
    command = [sys.executable, "-m", "mixplane", "serve", "--catalog", catalog]
    refused = subprocess.run(
        [*command, "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert refused.returncode != 0
    assert "give a token" in " ".join(refused.stderr.split())
    short = subprocess.run(
        [*command, "--host", "0.0.0.0", "--token", "short"], capture_output=True, text=True
    )
    assert short.returncode != 0 and "at least 16" in " ".join(short.stderr.split())


@pytest.fixture(scope="module")
def guarded(demo_work):
    service = Service(demo_work / "catalog.duckdb", token=TOKEN)
    yield service
    service.stop()


def test_requests_without_the_token_are_refused(guarded):
    for path in ("/api/datasets", "/api/count?where=TRUE", "/metrics", "/api/jobs"):
        assert httpx.get(guarded.url + path).status_code == 401, path
        wrong = {"Authorization": "Bearer " + "x" * len(TOKEN)}
        assert httpx.get(guarded.url + path, headers=wrong).status_code == 401, path
        assert guarded.get(path).status_code == 200, path
    header = {"X-Mixplane-Token": TOKEN}
    assert httpx.get(guarded.url + "/api/datasets", headers=header).status_code == 200
    pushed = httpx.post(guarded.url + "/api/jobs/j/metrics", json={"step": 1})
    assert pushed.status_code == 401
    # The dashboard's own files hold no data: they load, and the page asks for the token.
    page = httpx.get(guarded.url + "/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert "default-src 'self'" in page.headers["content-security-policy"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/documents/demo@1/..%2F..%2F..%2Fetc%2Fpasswd/0",
        "/api/documents/demo@1/%2Fetc%2Fpasswd/0",
        "/api/documents/demo@1/shard-00000-000/999999",
        "/api/documents/..%2Fcatalog/shard-00000-000/0",
        "/api/plans/0123456789abcdef0123456789abcdef/plan.json",
        "/api/plans/..%2F..%2F/passwd",
        "/static/..%2F..%2Fcatalog.duckdb",
        "/static/../../etc/passwd",
        "/api/lineage/%2Fetc",
        "/api/runs/..%2F..",
    ],
)
def test_paths_from_requests_never_reach_the_file_system(demo_service, path):
    answer = demo_service.get(path)
    assert answer.status_code in (404, 422), (path, answer.status_code, answer.text[:200])
    assert "root:" not in answer.text


@pytest.mark.parametrize(
    "where",
    [
        "1=1; DROP TABLE versions",
        "TRUE) UNION SELECT * FROM read_csv('/etc/passwd') --",
        "read_parquet('/etc/passwd') IS NULL",
        "source = 'wiki' -- comment",
        "getenv('HOME') = ''",
        "(SELECT 1) = 1",
    ],
)
def test_predicates_are_validated(demo_service, where):
    for path in ("/api/count", "/api/samples", "/api/composition"):
        answer = demo_service.get(path, where=where, by="source")
        assert answer.status_code == 400, (path, where, answer.text[:200])
        assert answer.json()["detail"]


def test_group_by_names_only_a_column(demo_service):
    for by in ('source" FROM x --', "read_csv('/etc/passwd')", "nope"):
        answer = demo_service.get("/api/composition", by=by)
        assert answer.status_code == 400 and "no property column" in answer.json()["detail"]


def test_limits_on_answers_and_bodies(demo_service):
    assert demo_service.get("/api/samples", k=51).status_code == 422
    assert demo_service.get("/api/histogram", column="n_tokens", bins=10_000).status_code == 422
    huge = {"mixture": {"seq_len": 8, "components": {"a": {"where": "x" * (2 << 20)}}}}
    assert demo_service.post("/api/plans", huge).status_code == 413


def test_a_scan_past_its_deadline_is_killed_and_its_process_replaced(demo_work):
    """The pool itself: a scan still running at its deadline ends with its process; the
    next scan gets a fresh process, and an answer is cached per catalog state."""
    catalog = str(demo_work / "catalog.duckdb")
    slow = f"regexp_matches({' || '.join(['url'] * 150)}, '\\w{{0,1000}}\\W{{0,1000}}x')"

    async def scenario() -> None:
        pool = ScanPool(ScopeSpec(catalog, cache_dir=None), size=1)
        runner = QueryRunner(catalog, timeout=0.2, pool=pool)
        await pool.start()
        try:
            later = time.monotonic() + 60
            quick = await runner.answer(later, scans.count, "source = 'wiki'", ())
            assert quick["documents"] > 0
            (first,) = pool._workers
            with pytest.raises(QueryTimeout, match="time limit of 0.2 s"):
                await runner.answer(time.monotonic() + 0.2, scans.count, slow, ())
            assert pool.timeouts == {"waiting": 0, "scanning": 1} and pool.replaced == 1
            first.process.join()
            assert first.process.exitcode == -signal.SIGKILL
            code = await runner.answer(later, scans.count, "source = 'code'", ())
            assert code["documents"] > 0 and pool._workers and first not in pool._workers
            assert await runner.answer(later, scans.count, "source = 'wiki'", ()) == quick
            assert (runner.hits, runner.misses) == (1, 3)
        finally:
            pool.close()

    asyncio.run(scenario())
