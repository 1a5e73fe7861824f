"""The service's limits, tried as a hostile client would on loopback, against real
`mixplane serve` processes: nothing imported because a request names it, bodies counted as
they arrive, every scan (queries, previews, plans) answered or refused by its request's
deadline, a bounded metrics store, fixed Prometheus labels, Host headers checked, SIGTERM.

The catalog is the demo's plus `slow@1`, 200,000 metadata-only documents on which
`SLOW` costs minutes whatever the machine: a regular expression over 300 copies of the id,
whose vectors of 2,048 rows each take seconds (DuckDB looks for a stop only between them).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import threading
import tracemalloc
import urllib.parse
from pathlib import Path

import httpx
import numpy as np
import pytest
from conftest import Service

from mixplane.catalog import Catalog
from mixplane.catalog.synthetic import random_properties, write_metadata_shards
from mixplane.load.remote.catalog_copy import open_catalog
from mixplane.load.resolve.plan_cache import entry_folder, load_resolved
from mixplane.load.resolve.query import resolve_mixture
from mixplane.mix.spec import MixtureSpec
from mixplane.serve.app import MAX_DETAIL
from mixplane.serve.guard import allowed_hosts, host_allowed
from mixplane.serve.jobs import JobStore

TOKEN = "limits-token-for-tests-only"
TIMEOUT = 2  # the service's --query-timeout, seconds
METRICS_BYTES = 2 << 20
MIXTURE = {
    "seq_len": 64,
    "global_batch_size": 4,
    "datasets": ["demo@1"],
    "components": {
        "wiki": {"where": "source = 'wiki'", "weight": 0.5},
        "code": {"where": "source = 'code'", "weight": 0.5},
    },
}


def concatenated(column: str, copies: int) -> str:
    """`column || column || ...` as a balanced tree (shallow enough to be allowed)."""
    if copies == 1:
        return column
    half = copies // 2
    return f"({concatenated(column, half)} || {concatenated(column, copies - half)})"


def slow(number: int = 0) -> str:
    """A predicate the validation allows that takes minutes on `slow@1`; `number` makes
    each one a different query (not one shared scan)."""
    text = concatenated("id", 300)
    return (
        rf"regexp_matches({text}, '\w{{0,1000}}\w{{0,1000}}\W{{0,1000}}x') OR n_tokens = -{number}"
    )


@pytest.fixture(scope="module")
def catalog(demo_work, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("limits")
    path = folder / "catalog.duckdb"
    shutil.copy(demo_work / "catalog.duckdb", path)
    tables = [random_properties(100_000, seed=seed) for seed in range(2)]
    write_metadata_shards(str(folder / "slow"), tables)
    Catalog(path).register(str(folder / "slow"), "slow")
    return path


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Path:
    """A folder on the service's import path with a module that leaves a mark if imported."""
    folder = tmp_path_factory.mktemp("probe")
    (folder / "probe_policy.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('imported').touch()\n"
    )
    return folder


@pytest.fixture(scope="module")
def limited(catalog, probe):
    tests = Path(__file__).parent
    path = os.pathsep.join([str(probe), str(tests), os.environ.get("PYTHONPATH", "")])
    service = Service(
        catalog,
        *("--query-timeout", str(TIMEOUT), "--max-metrics-bytes", f"{METRICS_BYTES}"),
        *("--allowed-host", "data.example.org", "--allow-policy", "custom_policies:Greedy"),
        *("--cache-dir", str(catalog.parent / "cache")),
        token=TOKEN,
        env={"PYTHONPATH": path},
    )
    yield service
    service.stop()


def catalog_answers(service: Service) -> int:
    """How many scans the service has started (answers it did not have cached)."""
    exposition = service.get("/metrics").text
    found = re.search(r'mixplane_query_answers_total\{source="catalog"\} ([0-9.]+)', exposition)
    return int(float(found.group(1))) if found else 0


# 1. Nothing is imported because a request names it.


@pytest.mark.parametrize("path", ["/api/mixtures/preview", "/api/plans"])
def test_a_posted_mixture_imports_no_module_it_names(limited, probe, path):
    details = []
    for name in ("probe_policy:Probe", "no_such_module_anywhere:Probe", "os:system"):
        mixture = MIXTURE | {"policy": {"name": name}}
        answer = limited.post(path, {"mixture": mixture})
        assert answer.status_code == 400, (name, answer.text)
        details.append(answer.json()["detail"].replace(name, "NAME"))
    # One message whether the module exists or not, and nothing imported.
    assert len(set(details)) == 1 and "is not allowed here" in details[0], details
    assert not (probe / "imported").exists()
    allowed = MIXTURE | {"policy": {"name": "custom_policies:Greedy", "step_size": 0.5}}
    assert limited.post(path, {"mixture": allowed}).status_code == 200


def test_fields_that_name_files_or_services_are_the_services_own(limited, tmp_path):
    """A posted mixture's catalog, cache, storage options and plan service are dropped: the
    service resolves on its own catalog and calls nobody."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    elsewhere = {
        "catalog": "/etc/passwd",
        "cache_dir": str(tmp_path / "not-here"),
        "storage_options": {"endpoint_url": f"http://127.0.0.1:{listener.getsockname()[1]}"},
        "plan_url": f"http://127.0.0.1:{listener.getsockname()[1]}",
        "cache": "ranges",
    }
    own = limited.post("/api/plans", {"mixture": MIXTURE}).json()
    answer = limited.post("/api/plans", {"mixture": MIXTURE | elsewhere})
    assert answer.status_code == 200 and answer.json() == own
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody called
    assert not (tmp_path / "not-here").exists()
    listener.close()


# 2. Bodies are counted as they arrive; errors never send the body back.


def chunked_post(port: int, path: str, size: int) -> bytes:
    """POST a chunked body of `size` bytes (no Content-Length) over a raw socket; what the
    server answered (it may stop reading and answer before the body ends)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    body = b'{"mixture": {"seq_len": 8, "components": {"a": {"where": "' + b"x" * size + b'"}}}}'
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(head.encode())
        try:
            for start in range(0, len(body), 1 << 16):
                piece = body[start : start + (1 << 16)]
                connection.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            connection.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed: read what it said
        answer = b""
        try:
            while piece := connection.recv(1 << 16):
                answer += piece
        except OSError:
            pass
    return answer


def test_a_chunked_body_over_the_limit_is_refused_as_it_arrives(limited):
    answer = chunked_post(limited.port, "/api/plans", 3 << 20)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"limited to 1,048,576 bytes" in answer and b"xxxx" not in answer
    assert len(answer) < 2000
    # Under the limit, a chunked body is read as any other (here: a predicate refused).
    small = chunked_post(limited.port, "/api/plans", 1000)
    assert small.startswith(b"HTTP/1.1 400") and b"unknown column" in small


def test_validation_errors_name_the_problem_not_the_input(limited):
    big = "x" * 500_000
    for path, body in [
        ("/api/jobs/j/metrics", {"step": big}),
        ("/api/jobs/j/metrics", {"step": 1, "weights": {big: 0.5}}),
        ("/api/mixtures/preview", {"mixture": {}, "steps": big}),
        ("/api/plans", {"mixture": big}),
    ]:
        answer = limited.post(path, body)
        assert answer.status_code == 422, (path, answer.status_code)
        assert (
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
            not in answer.text
        )
        assert len(answer.text) < 2000
        problem = answer.json()["detail"][0]
        assert problem["loc"][0] == "body" and problem["msg"] and problem["type"]
    # A refused mixture or query (400) repeats no more than a short excerpt of the input.
    name = "x" * 1_900
    wiki = {"where": f"{name} = 1", "weight": 0.5}
    for answer in [
        limited.post("/api/plans", {"mixture": MIXTURE | {big: 1}}),
        limited.post("/api/plans", {"mixture": MIXTURE | {"datasets": [f"{name}@1"]}}),
        limited.post("/api/mixtures/preview", {"mixture": MIXTURE | {"components": {"w": wiki}}}),
        limited.get("/api/count", where=f"{name} = 1"),
    ]:
        assert answer.status_code == 400, answer.text[:200]
        assert len(answer.json()["detail"]) <= MAX_DETAIL and "x" * 200 not in answer.text


def queued(local: int, remote: int) -> tuple[int, int] | None:
    """The send and receive queues of the loopback TCP socket from port `local` to port
    `remote` (from /proc/net/tcp), or None when there is none."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == local and int(fields[2].split(":")[1], 16) == remote:
            send, receive = fields[4].split(":")
            return int(send, 16), int(receive, 16)
    return None


def raw_get(port: int, path: str, params: list[tuple[str, str]]) -> tuple[int, str, bytes]:
    """GET over a raw socket (HTTP clients cap a URL's length below what this needs), its
    head sent in two parts: all but the blank line that ends it, which goes only once the
    server has read the rest, so the server holds an incomplete head of the whole request
    line and headers. The answer's status, Content-Type and body."""
    query = urllib.parse.urlencode(params)
    head = (
        f"GET {path}?{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nConnection: close\r\n"
    )
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(head.encode())
        mine = connection.getsockname()[1]
        # Wait until the bytes left this socket and the server's read them off its own.
        while queued(mine, port) != (0, 0) or (queued(port, mine) or (0, 1))[1] != 0:
            os.sched_yield()
        with contextlib.suppress(OSError):  # the server may have answered and closed
            connection.sendall(b"\r\n")
        answer = b""
        while piece := connection.recv(1 << 16):
            answer += piece
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers.get("content-type", ""), body


def test_the_longest_documented_query_reaches_the_service(limited):
    """A 10,000-character predicate of 4-byte characters is 120 kB percent-encoded, past the
    HTTP parser's default head of 16 kB: the service must read it (and answer in JSON, here
    refusing a predicate that is no condition) rather than let the parser refuse it in plain
    text; one character more, or a ninth dataset list, is refused by the API's own limits."""
    longest = "'" + "\U0001f600" * 9_998 + "'"
    datasets = [("datasets", "demo")] * 8
    status, kind, body = raw_get(limited.port, "/api/count", [("where", longest), *datasets])
    assert (status, kind) == (400, "application/json"), body[:300]
    status, _, body = raw_get(limited.port, "/api/count", [("where", longest + " ")])
    assert status == 422 and b"10000 characters" in body
    status, _, body = raw_get(limited.port, "/api/count", [*datasets, ("datasets", "demo")])
    assert status == 422 and b"8 items" in body


# 3 and 4. Every request that scans is answered or refused by its deadline.


def ask_at_once(service: Service, count: int) -> tuple[list[threading.Thread], list]:
    """`count` different slow counts on `slow@1`, each on a thread; their outcomes (a status
    or the client's error) arrive in the list returned."""
    outcomes: list = []

    def ask(number: int) -> None:
        try:
            answer = service.get("/api/count", where=slow(number), datasets="slow")
            outcomes.append((answer.status_code, answer.json().get("detail", "")))
        except httpx.HTTPError as error:
            outcomes.append((None, str(error)))

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    return threads, outcomes


@pytest.mark.timeout(90)
def test_slow_queries_end_at_their_deadline_waiting_included(limited):
    """45 slow counts at once, 2 scan processes: every one is refused (408) by its own
    deadline, some while still waiting for a process. (The old service gave each its full
    time limit once it had a process: the last answered after minutes.)"""
    threads, outcomes = ask_at_once(limited, 45)
    for thread in threads:
        thread.join()
    statuses = [status for status, _ in outcomes]
    assert statuses == [408] * 45, outcomes
    waited = [detail for _, detail in outcomes if "every scan process was busy" in detail]
    assert waited, outcomes
    assert all(f"time limit of {TIMEOUT} s" in detail for _, detail in outcomes)


@pytest.mark.timeout(90)
def test_previews_and_plans_keep_the_time_limit(limited, catalog):
    """A mixture whose component takes minutes to select: 408 by the deadline, for the
    preview and the plan, and the killed resolution leaves no plan that reads as whole."""
    mixture = MIXTURE | {
        "datasets": ["slow"],
        "components": {"a": {"where": slow(), "weight": 1.0}},
    }
    results = {}

    def post(path: str) -> None:
        body = {"mixture": mixture} | ({"steps": 10} if "preview" in path else {})
        results[path] = limited.post(path, body)

    threads = [
        threading.Thread(target=post, args=(p,)) for p in ("/api/plans", "/api/mixtures/preview")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for path, answer in results.items():
        assert answer.status_code == 408, (path, answer.text[:300])
    plans = catalog.parent / "cache" / "plans"
    assert not list(plans.glob("*/plan.json")) or all(
        "slow" not in path.read_text() for path in plans.glob("*/plan.json")
    )
    too_long = limited.post("/api/mixtures/preview", {"mixture": MIXTURE, "steps": 10_000_000})
    assert too_long.status_code == 422
    assert (
        limited.post("/api/mixtures/preview", {"mixture": MIXTURE, "steps": 10}).status_code == 200
    )


def test_a_killed_resolution_leaves_nothing_read_as_a_plan(demo_work, tmp_path):
    """What a resolution killed while writing leaves (arrays without `plan.json`, a
    temporary) is not taken for a plan; the next resolution removes the temporary and
    writes the entry whole."""
    spec = MixtureSpec.parse(
        MIXTURE | {"catalog": str(demo_work / "catalog.duckdb"), "cache_dir": str(tmp_path)}
    )
    folder = Path(entry_folder(spec, open_catalog(spec.catalog, None), spec.cache_dir))
    folder.mkdir(parents=True)
    np.save(folder / "appended.npy", np.zeros(3, dtype=np.int64))
    (folder / ".shard0.npy.1a2b3c4d.tmp").write_bytes(b"\x93NUMPY half written")
    assert load_resolved(spec, str(folder)) is None
    resolved = resolve_mixture(spec)
    assert resolved.folder == str(folder) and not list(folder.glob(".*.tmp"))
    assert load_resolved(spec, str(folder)) is not None


@pytest.mark.timeout(120)
def test_health_answers_behind_busy_scans_and_sigterm_ends_them(catalog):
    """With a time limit far away, 45 slow counts occupy the service: a health check is
    still answered at once, and SIGTERM ends the service at once, killing its scans (no
    count is answered with a result). (The old service made health wait for a thread until
    the scans ended, minutes here, and ran them to their end before stopping.)"""
    service = Service(catalog, "--query-timeout", "600", token=TOKEN)
    try:
        threads, outcomes = ask_at_once(service, 45)
        while catalog_answers(service) < 40:  # the service has them
            threading.Event().wait(0.02)
        assert service.get("/api/health").json()["status"] == "ok"
        assert not outcomes
        service.process.send_signal(signal.SIGTERM)
        service.process.wait()
    finally:
        service.stop()
    for thread in threads:
        thread.join()
    assert len(outcomes) == 45 and all(status != 200 for status, _ in outcomes), outcomes


# 5. Pushed metrics are bounded in bytes.


def test_pushed_metrics_are_bounded_in_bytes(limited):
    """Samples of 256 weights with long component names (about 40 kB each): past the limit
    in bytes, the job that pushed least recently loses its oldest samples first."""
    weights = {f"{'component-' * 14}{i:03d}": 1 / 256 for i in range(256)}
    with httpx.Client(base_url=limited.url, headers=limited.headers) as client:
        for step in range(40):
            for job in ("old-job", "mid-job", "new-job"):
                if job != "old-job" or step < 20:
                    body = {"step": step, "weights": weights}
                    assert client.post(f"/api/jobs/{job}/metrics", json=body).status_code == 200
        jobs = {job["job"]: job for job in client.get("/api/jobs").json()}
        kept = {name: client.get(f"/api/jobs/{name}/metrics").json()["samples"] for name in jobs}
    stored = sum(len(json.dumps(s, separators=(",", ":"))) for v in kept.values() for s in v)
    assert METRICS_BYTES / 2 < stored <= METRICS_BYTES, stored
    # The others keep their latest samples, in order, and count every sample they pushed.
    assert "old-job" not in jobs
    assert kept["new-job"][-1]["step"] == 39 and jobs["new-job"]["samples"] == 40
    for samples in kept.values():
        steps = [sample["step"] for sample in samples]
        assert steps == list(range(steps[0], 40))


def test_the_metrics_store_holds_what_it_counts():
    """What the store counts is what it holds: Python's own allocations (tracemalloc) stay
    within its limit in bytes, with samples of 256 weights pushed to twice the limit."""
    weights = {f"component-{i:03d}": 1 / 256 for i in range(256)}
    limit = 4 << 20
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        store = JobStore(max_jobs=10, max_samples=10_000, max_bytes=limit)
        for step in range(300):
            for job in range(4):
                store.push(f"job-{job}", {"step": step, "weights": weights})
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert store.bytes <= limit and held <= 1.05 * limit, (store.bytes, held)
    assert [job["samples"] for job in store.list()] == [300] * 4


# 6. Prometheus labels come from fixed sets; the token is checked before routing.


def test_made_up_methods_and_paths_add_no_series(limited):
    with httpx.Client(base_url=limited.url) as client:  # no token
        for number in range(100):
            answer = client.request(f"BREW{number}", f"/no/such/path/{number}")
            assert answer.status_code == 401
        assert client.get("/api/nowhere").status_code == 401
    assert limited.get("/api/nowhere").status_code == 404
    exposition = limited.get("/metrics").text
    methods = set(re.findall(r'mixplane_http_requests_total\{method="([^"]*)"', exposition))
    assert methods <= {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "other"}
    routes = set(re.findall(r'route="([^"]*)"', exposition))
    assert not any("no/such" in route for route in routes)
    assert "BREW" not in exposition


# 7. Only the service's own host names are answered.


def test_a_forged_host_header_is_refused_even_without_a_token(demo_service, limited):
    port = demo_service.port
    for host in ("rebind.attacker.example", f"rebind.attacker.example:{port}", "127.0.0.1.nip.io"):
        answer = httpx.get(f"{demo_service.url}/api/datasets", headers={"Host": host})
        assert answer.status_code == 400, host
        assert "Host" in answer.json()["detail"] and "demo@1" not in answer.text
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        assert (
            httpx.get(f"{demo_service.url}/api/datasets", headers={"Host": host}).status_code == 200
        )
    # Names the operator adds are answered too; the dashboard's files need a good host as well.
    allowed = {"Host": f"data.example.org:{limited.port}", "Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{limited.url}/api/datasets", headers=allowed).status_code == 200
    assert httpx.get(f"{limited.url}/", headers={"Host": "evil.example"}).status_code == 400


@pytest.mark.parametrize(
    ("bound", "extra", "accepted", "refused"),
    [
        (
            "127.0.0.1",
            [],
            ["127.0.0.1:8000", "LOCALHOST", "localhost.", "[::1]:8000"],
            [
                "rebind.example",
                "10.0.0.5",
                "127.0.0.1.nip.io",
                "",
                "[::1",
                "localhost.example",
            ],
        ),
        (
            "0.0.0.0",
            [],
            ["10.0.0.5:8000", "[fe80::1]:8000", "localhost"],
            [
                "rebind.example",
                "10.0.0.5.nip.io",
            ],
        ),
        (
            "10.0.0.5",
            ["data.example.org:8443"],
            ["10.0.0.5:8000", "Data.Example.Org"],
            [
                "10.0.0.6",
                "rebind.example",
                "example.org",
            ],
        ),
    ],
)
def test_host_names_the_service_answers_to(bound, extra, accepted, refused):
    hosts = allowed_hosts(bound, extra)
    for host in accepted:
        assert host_allowed(host.encode(), hosts), host
    for host in refused:
        assert not host_allowed(host.encode(), hosts), host
    assert not host_allowed(None, hosts)
