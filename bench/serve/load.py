"""The data service under load: query latency while 64 clients fetch plans.

A metadata-only synthetic catalog of N documents (the one `bench/loader/scale.py` builds:
`catalog.synthetic` metadata, 1e5 documents per shard, a real `.idx` and a sparse `.bin`
per shard), written once under bench/data/serve/catalog-N (a `_serve.json` stamp describes
it; a folder whose stamp matches is reused). Then `mixplane serve` runs as a subprocess on a
free loopback port, twice:

1. unloaded: every distinct query once with nothing else running (the service's answer cache
   is empty: the first answer is computed), then once more (answered from the cache);
2. loaded, on a fresh server (empty answer cache): one POST /api/plans resolves the mixture
   (the four components of `bench/loader/scale.py`, which cover the whole catalog), one
   client downloads its files alone (with `--warm-cache`, every query is then asked once, so
   every answer under load comes from the cache); then two load-generator processes start
   together:
   - plans: `--plan-clients` asyncio tasks (httpx.AsyncClient, one connection each) that
     loop POST /api/plans and GET /api/plans/{plan}/{name} of every file listed, streaming
     the bytes and dropping them; they start `--warmup` seconds before the measured window;
   - queries: `--query-clients` threads (a sync httpx.Client each) that loop over count and
     composition requests drawn at random from a fixed list (20 predicates, each as
     /api/count, /api/composition?by=source and /api/composition?by=<numeric column>), for
     `--duration` seconds from the window's start, recording each request's latency. A
     request is a first-time answer when it started before any answer to the same query had
     come back (the service caches answers per catalog state), a repeated one otherwise.

The load generators run on the same cores as the server. Every non-2xx answer and every
failed request is counted. The server's resident memory is sampled every 0.5 s, its CPU time
read from /proc. Results go to bench/results/serve-load.json and a table is printed.

    python bench/serve/load.py                                      # 1e7 documents, 60 s
    python bench/serve/load.py --documents 1e6 --duration 10 \\
        --result bench/results/serve-load-quick.json                # quick check
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

# Over the synthetic properties: source (5 values, uniform), language (10 codes, Zipf),
# quality (uniform in [0, 1)), n_tokens (uniform in [1, 4096)), dup_cluster_size
# (geometric, p = 0.7), is_boilerplate (10%), license (5 values, one NULL), tags (0-2 of 6).
PREDICATES = (
    "TRUE",
    "source = 'web'",
    "source IN ('web', 'forum')",
    "language = 'en'",
    "language = 'de' AND quality > 0.5",
    "language = 'nl' AND quality > 0.99",
    "quality > 0.9",
    "quality BETWEEN 0.2 AND 0.4",
    "NOT is_boilerplate",
    "NOT is_boilerplate AND dup_cluster_size = 1",
    "language = 'de' AND NOT is_boilerplate AND dup_cluster_size = 1",
    "license IS NULL",
    "source = 'code' AND license IN ('mit', 'apache-2.0')",
    "n_tokens > 2048",
    "source = 'wiki' AND n_tokens < 256",
    "list_contains(tags, 'science')",
    "source = 'books' AND quality > 0.7",
    "language IN ('fr', 'es', 'it') AND n_tokens BETWEEN 512 AND 1024",
    "dup_cluster_size > 2",
    "source <> 'web' AND language <> 'en' AND quality > 0.3",
)
NUMERIC_BY = ("quality", "n_tokens", "dup_cluster_size")
KINDS = ("count", "composition")
HTTP_TIMEOUT = 600.0  # a first plan resolution or an uncached query under load takes a while


def query_list() -> list[dict]:
    """Every distinct query: each predicate as a count, a composition by source and a
    composition by a numeric column (cut into 10 buckets)."""
    queries = []
    for number, where in enumerate(PREDICATES):
        numeric = NUMERIC_BY[number % len(NUMERIC_BY)]
        queries += [
            {"kind": "count", "by": None, "path": "/api/count", "params": {"where": where}},
            {
                "kind": "composition",
                "by": "source",
                "path": "/api/composition",
                "params": {"by": "source", "where": where},
            },
            {
                "kind": "composition",
                "by": numeric,
                "path": "/api/composition",
                "params": {"by": numeric, "where": where, "bins": 10},
            },
        ]
    return [{"id": number, **query} for number, query in enumerate(queries)]


def mixture() -> dict:
    """The plan clients' mixture: `bench/loader/scale.py`'s, over the whole catalog."""
    from bench.loader.scale import COMPONENTS, SEQ_LEN

    return {"seq_len": SEQ_LEN, "seed": 1, "eos_id": 0, "components": COMPONENTS}


# ---------------------------------------------------------------------------- the catalog


def prepare(folder: Path, documents: int) -> tuple[str, dict]:
    """The catalog of `documents` synthetic documents under `folder` (built once, reused
    while its stamp matches); its path and the stamp."""
    from bench.loader.scale import PER_SHARD, generate

    wanted = {
        "documents": documents,
        "documents_per_shard": PER_SHARD,
        "shards": -(-documents // PER_SHARD),
        "built_by": "bench.loader.scale.generate",
        "properties": "mixplane.catalog.synthetic.random_properties(rows, seed=shard number)",
    }
    stamp_path = folder / "_serve.json"
    catalog = folder / "catalog.duckdb"
    if stamp_path.exists() and catalog.exists():
        stamp = json.loads(stamp_path.read_text())
        if {key: stamp.get(key) for key in wanted} == wanted:
            return str(catalog), stamp | {"reused": True}
    shutil.rmtree(folder, ignore_errors=True)
    print(f"building a catalog of {documents:,} documents in {folder} ...", flush=True)
    started = time.perf_counter()
    generate(folder, documents)
    stamp = wanted | {
        "build_seconds": round(time.perf_counter() - started, 1),
        "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    stamp_path.write_text(json.dumps(stamp, indent=1) + "\n")
    return str(catalog), stamp | {"reused": False}


def catalog_and_work(data: Path, documents: int, name: str) -> tuple[str, dict, Path]:
    """The catalog of `documents` under `data` (built once), its stamp, and an empty work
    folder `name` beside it."""
    folder = data / f"catalog-{documents}"
    catalog, stamp = prepare(folder, documents)
    work = folder / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    return catalog, stamp, work


# ----------------------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """`mixplane serve` in a subprocess on a free loopback port, stopped on exit."""

    def __init__(
        self, catalog: str, cache_dir: Path, log: Path, query_timeout: float | None = None
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "mixplane", "serve", "--catalog", catalog]
        command += ["--port", str(self.port), "--cache-dir", str(cache_dir)]
        if query_timeout is not None:
            command += ["--query-timeout", str(query_timeout)]
        self.log = log
        with open(log, "ab") as handle:
            self.process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
        self.pid = self.process.pid
        started = time.perf_counter()
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"the server exited:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.perf_counter() - started > 120:
                self.stop()
                raise SystemExit(f"the server did not answer /api/health:\n{log.read_text()}")
            time.sleep(0.1)
        self.start_seconds = round(time.perf_counter() - started, 2)
        print(f"  server pid {self.pid} at {self.url}", flush=True)

    def status(self, field: str) -> float:
        """A /proc/PID/status figure of the server process in MB."""
        with open(f"/proc/{self.pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        raise KeyError(field)

    def memory(self) -> float:
        """MB of memory of the server and every process it started (its scan processes and
        their fork server): the sum of their proportional set sizes, so pages a forked
        process shares with its parent count once."""
        total = 0
        for pid in process_tree(self.pid):
            try:
                with open(f"/proc/{pid}/smaps_rollup") as handle:
                    total += next(
                        int(line.split()[1]) for line in handle if line.startswith("Pss:")
                    )
            except (OSError, IndexError):
                continue  # ended meanwhile
        return total / 1024

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", timeout=60).text

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *_) -> None:
        self.stop()


def process_tree(pid: int) -> list[int]:
    """`pid` and every process below it (children, their children, ...)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                pending += [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process and every process below it, with those of
    the ones that ended (counted by whoever waited for them), all threads (None: gone)."""
    total = 0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            if member == pid:
                return None
            continue
        total += sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (all cores, all processes) since boot."""
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def cpu_in_window(begin: float, end: float) -> tuple[dict, threading.Thread]:
    """This process's CPU cores busy (all threads) from `begin` to `end` (epoch seconds),
    filled in by the thread returned as the time comes."""
    found: dict = {}

    def mark() -> None:
        marks = []
        for at in (begin, end):
            time.sleep(max(0.0, at - time.time()))
            usage = resource.getrusage(resource.RUSAGE_SELF)
            marks.append((time.time(), usage.ru_utime + usage.ru_stime))
        (t0, c0), (t1, c1) = marks
        found["cores"] = round((c1 - c0) / (t1 - t0), 2)

    thread = threading.Thread(target=mark, daemon=True)
    thread.start()
    return found, thread


# ---------------------------------------------------------------- load generator: plans


def plans_worker(config: dict) -> dict:
    """`clients` tasks looping POST /api/plans + GET of every file, from `start` to
    `start + warmup + duration` (epoch seconds)."""
    return asyncio.run(_plans(config))


async def _plans(config: dict) -> dict:
    start, stop = config["start"], config["start"] + config["warmup"] + config["duration"]
    slots = [0] * (int(config["warmup"] + config["duration"]) + 2)  # bytes per second
    posts, files, plans, errors = [], [], [], []
    body = {"mixture": config["mixture"]}
    limits = httpx.Limits(max_connections=config["clients"], max_keepalive_connections=None)
    ready = time.time()
    window, marker = cpu_in_window(start + config["warmup"], stop)

    def failed(what: str, error: str, at: float) -> None:
        errors.append({"request": what, "error": error[:300], "at": round(at - start, 3)})

    async def client_loop(client: httpx.AsyncClient) -> None:
        while time.time() < stop:
            began = time.time()
            try:
                answer = await client.post("/api/plans", json=body)
            except httpx.HTTPError as error:
                failed("POST /api/plans", repr(error), began)
                await asyncio.sleep(0.1)
                continue
            posts.append((began - start, time.time() - began, answer.status_code))
            if answer.status_code // 100 != 2:
                failed("POST /api/plans", f"{answer.status_code} {answer.text}", began)
                await asyncio.sleep(0.1)
                continue
            plan = answer.json()
            received, complete = 0, True
            for item in plan["files"]:
                opened, got = time.time(), 0
                url = f"/api/plans/{plan['plan']}/{item['name']}"
                try:
                    async with client.stream("GET", url) as response:
                        status = response.status_code
                        if status // 100 != 2:
                            text = (await response.aread()).decode(errors="replace")
                            failed("GET plan file", f"{status} {text}", opened)
                        else:
                            async for chunk in response.aiter_raw():
                                now = time.time()
                                got += len(chunk)
                                slots[min(int(now - start), len(slots) - 1)] += len(chunk)
                                if now >= stop:
                                    break
                except httpx.HTTPError as error:
                    failed("GET plan file", repr(error), opened)
                    status = None
                received += got
                ended = time.time()
                if ended >= stop and got < item["size"]:
                    complete = False  # cut by the end of the run: not a failure
                    break
                if status is not None and status // 100 == 2 and got != item["size"]:
                    failed("GET plan file", f"{got} bytes, announced {item['size']}", opened)
                files.append((opened - start, ended - opened, status, got))
                if status is None or status // 100 != 2:
                    complete = False
                    break
            plans.append((began - start, time.time() - began, received, complete))

    async with httpx.AsyncClient(
        base_url=config["url"], timeout=HTTP_TIMEOUT, limits=limits
    ) as client:
        await asyncio.sleep(max(0.0, start - time.time()))
        tasks = [asyncio.create_task(client_loop(client)) for _ in range(config["clients"])]
        done, pending = set(), set()
        if tasks:
            done, pending = await asyncio.wait(tasks, timeout=max(0.0, stop - time.time()) + 2)
        for task in pending:  # waiting for an answer at the end of the run
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                failed("client task", repr(task.exception()), time.time())
    marker.join(max(0.0, stop - time.time()) + 1)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "late_start_seconds": round(max(0.0, ready - start), 3),
        "cut_at_the_end": len(pending),
        "posts": posts,
        "files": files,
        "plans": plans,
        "bytes_per_second": slots,
        "errors": errors,
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "cores_in_window": window.get("cores"),
    }


# -------------------------------------------------------------- load generator: queries


def queries_worker(config: dict) -> dict:
    """`clients` threads drawing queries at random from `start + warmup` for `duration`."""
    begin = config["start"] + config["warmup"]
    stop = begin + config["duration"]
    queries = config["queries"]
    records, errors = [], []
    # Query id: when its first 2xx answer came back (a warmed cache answered them all before).
    first_answer: dict[int, float] = {q["id"]: 0.0 for q in queries} if config["warm"] else {}
    lock = threading.Lock()
    ready = time.time()
    window, marker = cpu_in_window(begin, stop)

    def client_loop(number: int) -> None:
        rng = random.Random(config["seed"] * 1000 + number)
        with httpx.Client(base_url=config["url"], timeout=HTTP_TIMEOUT) as client:
            time.sleep(max(0.0, begin - time.time()))
            while time.time() < stop:
                query = queries[rng.randrange(len(queries))]
                began, clock = time.time(), time.perf_counter()
                try:
                    answer = client.get(query["path"], params=query["params"])
                    status = answer.status_code
                    if status // 100 != 2:
                        errors.append({"query": query["id"], "error": f"{status} {answer.text}"})
                except httpx.HTTPError as error:
                    status = None
                    errors.append({"query": query["id"], "error": repr(error)[:300]})
                latency = time.perf_counter() - clock
                ended = time.time()
                with lock:
                    if status is not None and status // 100 == 2:
                        first_answer.setdefault(query["id"], ended)
                    first = began < first_answer.get(query["id"], float("inf"))
                records.append((query["id"], began - begin, latency, status, first, ended < stop))

    threads = [threading.Thread(target=client_loop, args=(n,)) for n in range(config["clients"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    marker.join(max(0.0, stop - time.time()) + 1)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "late_start_seconds": round(max(0.0, ready - begin), 3),
        "records": records,
        "errors": errors,
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "cores_in_window": window.get("cores"),
    }


# ----------------------------------------------------------------------------- figures


def percentiles(seconds: list[float]) -> dict:
    """Count, p50/p90/p99 (nearest rank) and max of latencies, in milliseconds."""
    if not seconds:
        return {"n": 0}
    ordered = sorted(seconds)

    def rank(p: float) -> float:
        return ordered[max(0, min(len(ordered) - 1, math.ceil(len(ordered) * p / 100) - 1))]

    return {
        "n": len(ordered),
        "p50_ms": round(rank(50) * 1e3, 1),
        "p90_ms": round(rank(90) * 1e3, 1),
        "p99_ms": round(rank(99) * 1e3, 1),
        "max_ms": round(ordered[-1] * 1e3, 1),
    }


def prometheus(text: str, name: str) -> dict[str, float]:
    """The samples of one metric family from Prometheus text, by their label string."""
    found = {}
    for line in text.splitlines():
        match = re.match(rf"^{re.escape(name)}(\{{.*\}})?\s+(\S+)$", line)
        if match:
            found[match.group(1) or ""] = float(match.group(2))
    return found


def server_view(text: str) -> dict:
    """What the server's /metrics says: answers from the cache and from the catalog, requests
    by status, and the share of count/composition answers it timed under 100 ms."""
    answers = prometheus(text, "mixplane_query_answers_total")
    requests = prometheus(text, "mixplane_http_requests_total")
    buckets = prometheus(text, "mixplane_http_request_seconds_bucket")
    view = {
        "query_answers_from_cache": answers.get('{source="cache"}'),
        "query_answers_from_catalog": answers.get('{source="catalog"}'),
        "requests": {labels: int(value) for labels, value in requests.items()},
    }
    for route in ("/api/count", "/api/composition", "/api/plans", "/api/plans/{plan}/{name}"):
        mine = {labels: n for labels, n in buckets.items() if f'route="{route}"' in labels}
        total = next((n for labels, n in mine.items() if 'le="+Inf"' in labels), None)
        fast = next((n for labels, n in mine.items() if 'le="0.1"' in labels), None)
        if total:
            view[f"{route} timed in the app under 100 ms"] = round(fast / total, 4)
    return view


def unloaded(server: Server, queries: list[dict]) -> dict:
    """Every query once on an empty answer cache, then once more from the cache."""
    rows = []
    with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as client:
        for round_name in ("first", "repeated"):
            for query in queries:
                clock = time.perf_counter()
                answer = client.get(query["path"], params=query["params"])
                seconds = time.perf_counter() - clock
                if answer.status_code != 200:
                    raise SystemExit(f"{query}: {answer.status_code} {answer.text}")
                if round_name == "first":
                    body = answer.json()
                    rows.append(query | {"documents": body["documents"], "first_s": seconds})
                else:
                    rows[query["id"]]["repeated_s"] = round(seconds, 4)
        metrics = server_view(server.metrics())
    summary = {}
    for kind in KINDS:
        mine = [row for row in rows if row["kind"] == kind]
        summary[kind] = {
            "first": percentiles([row["first_s"] for row in mine]),
            "repeated": percentiles([row["repeated_s"] for row in mine]),
        }
    for row in rows:
        row["first_s"] = round(row["first_s"], 4)
        del row["path"]
    return {"summary": summary, "server": metrics, "queries": rows}


def alone(server: Server, body: dict) -> dict:
    """The first POST /api/plans (resolves the mixture), a second one, and one client
    downloading every file with nothing else running."""
    with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as client:
        clock = time.perf_counter()
        answer = client.post("/api/plans", json=body)
        resolve = time.perf_counter() - clock
        if answer.status_code != 200:
            raise SystemExit(f"POST /api/plans: {answer.status_code} {answer.text}")
        clock = time.perf_counter()
        plan = client.post("/api/plans", json=body).json()
        again = time.perf_counter() - clock
        clock, got = time.perf_counter(), 0
        for item in plan["files"]:
            with client.stream("GET", f"/api/plans/{plan['plan']}/{item['name']}") as response:
                response.raise_for_status()
                for chunk in response.iter_raw():
                    got += len(chunk)
        download = time.perf_counter() - clock
    size = sum(item["size"] for item in plan["files"])
    if got != size:
        raise SystemExit(f"downloaded {got} bytes of a plan of {size}")
    return {
        "plan": plan["plan"],
        "files": len(plan["files"]),
        "plan_mb": round(size / 1e6, 2),
        "first_post_seconds": round(resolve, 2),
        "second_post_ms": round(again * 1e3, 1),
        "one_client_download_seconds": round(download, 2),
        "one_client_mb_per_second": round(size / 1e6 / download, 1),
    }


def spawn(mode: str, config: dict, folder: Path) -> tuple[subprocess.Popen, Path]:
    """A load-generator process running `mode` on `config`; it writes its result file."""
    config_path, out = folder / f"{mode}-config.json", folder / f"{mode}-result.json"
    config_path.write_text(json.dumps(config))
    out.unlink(missing_ok=True)
    command = [sys.executable, __file__, f"--{mode}-worker", str(config_path), str(out)]
    return subprocess.Popen(command), out


def loaded(
    server: Server, args, queries: list[dict], body: dict, plan_mb: float, work: Path
) -> dict:
    """Plan clients and query clients together; the server sampled meanwhile."""
    start = time.time() + 5  # the generators' imports happen before it
    common = {"url": server.url, "start": start, "warmup": args.warmup}
    common["duration"] = args.duration
    plan_config = common | {"clients": args.plan_clients, "mixture": body["mixture"]}
    query_config = common | {"clients": args.query_clients, "queries": queries}
    query_config |= {"seed": args.seed, "warm": args.warm_cache}
    plans_process, plans_out = spawn("plans", plan_config, work)
    queries_process, queries_out = spawn("queries", query_config, work)
    window = (start + args.warmup, start + args.warmup + args.duration)

    def snapshot() -> dict:
        return {"time": time.time(), "server": cpu_seconds(server.pid) or 0.0} | {
            "machine": machine_busy_seconds()
        }

    rss, marks, load = [], {}, []
    while plans_process.poll() is None or queries_process.poll() is None:
        now = time.time()
        rss.append((round(now - window[0], 2), round(server.memory(), 1)))
        for mark, at in (("start", window[0]), ("end", window[1])):
            if mark not in marks and now >= at:
                marks[mark] = snapshot()
        load.append(os.getloadavg()[0])
        time.sleep(0.5)
    marks.setdefault("end", snapshot())
    for name, process in (("plans", plans_process), ("queries", queries_process)):
        if process.returncode != 0:
            raise SystemExit(f"the {name} load generator failed ({process.returncode})")
    plans = json.loads(plans_out.read_text())
    answers = json.loads(queries_out.read_text())
    metrics = server_view(server.metrics())
    during = [mb for at, mb in rss if 0 <= at <= args.duration]
    first, last = marks["start"], marks["end"]
    seconds = last["time"] - first["time"]
    cores = {  # CPU cores busy on average during the window, by whom
        name: round((last[name] - first[name]) / seconds, 2) for name in ("server", "machine")
    }
    cores["plans_generator"] = plans["cores_in_window"]
    cores["queries_generator"] = answers["cores_in_window"]
    ours = sum(cores[name] or 0.0 for name in ("server", "plans_generator", "queries_generator"))
    cores["other_processes"] = round(cores["machine"] - ours, 2)
    return {
        "queries": query_figures(answers, queries, args.duration),
        "plans": plan_figures(plans, args.warmup, args.duration, body, plan_mb),
        "server": {
            "rss_mb_before": rss[0][1],
            "rss_mb_peak_in_window": max(during),
            "rss_mb_at_end": rss[-1][1],
            "peak_rss_mb_lifetime_server_process": round(server.status("VmHWM"), 1),
            "note": "rss_mb_*: PSS of the server and its scan processes (and fork server)",
            "metrics": metrics,
        },
        "cpu_cores_busy_in_window": cores,
        "load_generators": {
            "plans_cpu_seconds": plans["cpu_seconds"],
            "queries_cpu_seconds": answers["cpu_seconds"],
            "late_start_seconds": [plans["late_start_seconds"], answers["late_start_seconds"]],
            "note": "CPU seconds over the whole run (warm-up, window and imports)",
        },
        "load_average_max": round(max(load), 2),
        "rss_samples": rss[:: max(1, len(rss) // 200)],
    }


def query_figures(answers: dict, queries: list[dict], duration: float) -> dict:
    """Latency by kind, first-time and repeated, of the answers completed in the window."""
    by_id = {query["id"]: query for query in queries}
    records = [r for r in answers["records"] if r[5]]
    figures: dict = {
        "distinct_queries": len(queries),
        "distinct_queries_asked": len({r[0] for r in records}),
        "requests": len(records),
        "requests_per_second": round(len(records) / duration, 1),
        "unfinished_at_the_end": len(answers["records"]) - len(records),
        "errors": len(answers["errors"]),
        "non_2xx": sum(1 for r in answers["records"] if r[3] is not None and r[3] // 100 != 2),
        "error_examples": answers["errors"][:10],
    }
    for kind in KINDS:
        mine = [r for r in records if by_id[r[0]]["kind"] == kind]
        figures[kind] = {
            "all": percentiles([r[2] for r in mine]),
            "first_time": percentiles([r[2] for r in mine if r[4]]),
            "repeated": percentiles([r[2] for r in mine if not r[4]]),
            "under_100_ms": round(sum(r[2] < 0.1 for r in mine) / max(1, len(mine)), 4),
        }
    for by in ("source", *NUMERIC_BY):
        mine = [r for r in records if by_id[r[0]]["by"] == by]
        figures[f"composition by {by}"] = {
            "first_time": percentiles([r[2] for r in mine if r[4]]),
            "repeated": percentiles([r[2] for r in mine if not r[4]]),
        }
    first = sorted(r[1] + r[2] for r in records if r[4])
    figures["last_first_time_answer_at_seconds"] = round(first[-1], 1) if first else None
    # Repeated answers after the last first-time one: only plan traffic competes with them.
    late = [r[2] for r in records if not r[4] and first and r[1] > first[-1]]
    figures["repeated_after_the_last_first_time"] = percentiles(late)
    figures["timeline"] = [  # by 5 s of the window, when the requests started
        {
            "from_second": at,
            "first_time": sum(1 for r in records if at <= r[1] < at + 5 and r[4]),
            **percentiles([r[2] for r in records if at <= r[1] < at + 5]),
        }
        for at in range(0, int(duration), 5)
    ]
    return figures


def plan_figures(plans: dict, warmup: float, duration: float, body: dict, plan_mb: float) -> dict:
    """Throughput and latency of the plan clients within the window (`plan_mb`: the size
    of one plan's files)."""
    low, high = warmup, warmup + duration

    def within(rows: list) -> list:
        return [row for row in rows if low <= row[0] + row[1] <= high]

    posts, files = within(plans["posts"]), within(plans["files"])
    complete = [row for row in within(plans["plans"]) if row[3]]
    window_bytes = sum(plans["bytes_per_second"][int(low) : int(high)])
    timeline = plans["bytes_per_second"][int(low) : int(high)]
    return {
        "components": body["mixture"]["components"],
        "posts": percentiles([row[1] for row in posts]),
        "posts_whole_run": percentiles([row[1] for row in plans["posts"]]),
        "file_gets": percentiles([row[1] for row in files]),
        "whole_plan_seconds": {
            k: (v / 1e3 if k.endswith("_ms") else v)
            for k, v in percentiles([row[1] for row in complete]).items()
        },
        "plans_completed_in_window": len(complete),
        "plans_per_second": round(len(complete) / duration, 3),
        "mb_per_second": round(window_bytes / 1e6 / duration, 1),
        "plan_equivalents_per_second": round(window_bytes / 1e6 / duration / plan_mb, 3),
        "errors": len(plans["errors"]),
        "non_2xx": sum(
            1 for row in plans["posts"] + plans["files"] if row[2] is None or row[2] // 100 != 2
        ),
        "error_examples": plans["errors"][:10],
        "clients_cut_at_the_end": plans["cut_at_the_end"],
        "mb_per_second_timeline": [round(n / 1e6, 1) for n in timeline],
    }


# ------------------------------------------------------------------------------ report


def table(result: dict) -> str:
    """The summary a reader checks against the goal."""
    lines = []
    cold = result["unloaded"]["summary"]
    load = result["loaded"]
    head = f"{'':34} {'n':>6} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} {'max ms':>9}"

    def row(name: str, figures: dict) -> str:
        if not figures.get("n"):
            return f"{name:34} {0:>6}"
        cells = [f"{figures[k]:>9.1f}" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")]
        return f"{name:34} {figures['n']:>6} " + " ".join(cells)

    lines.append(f"{result['documents']:,} documents, {result['plan']['plan_mb']} MB plan")
    lines.append(head)
    for kind in KINDS:
        lines.append(row(f"{kind}, unloaded, first", cold[kind]["first"]))
        lines.append(row(f"{kind}, unloaded, repeated", cold[kind]["repeated"]))
    q = load["queries"]
    for kind in KINDS:
        lines.append(row(f"{kind}, loaded, all", q[kind]["all"]))
        lines.append(row(f"{kind}, loaded, first-time", q[kind]["first_time"]))
        lines.append(row(f"{kind}, loaded, repeated", q[kind]["repeated"]))
    p = load["plans"]
    lines.append(row("POST /api/plans, loaded", p["posts"]))
    lines.append(row("POST /api/plans, warm-up included", p["posts_whole_run"]))
    lines.append(row("GET plan file, loaded", p["file_gets"]))
    s, cores = load["server"], load["cpu_cores_busy_in_window"]
    lines.append(
        f"plans: {p['plans_completed_in_window']} completed in the window "
        f"({p['plans_per_second']}/s), {p['mb_per_second']} MB/s of plan files "
        f"({p['plan_equivalents_per_second']} plans/s in bytes); "
        f"errors {p['errors']} (non-2xx {p['non_2xx']})"
    )
    lines.append(
        f"queries: {q['requests']} answered ({q['requests_per_second']}/s), "
        f"{q['distinct_queries']} distinct; errors {q['errors']} (non-2xx {q['non_2xx']}); "
        f"unfinished at the end {q['unfinished_at_the_end']}"
    )
    lines.append(
        f"server and its processes: PSS {s['rss_mb_before']} MB before the load, "
        f"{s['rss_mb_peak_in_window']} MB peak; along the way: {result['server_rss_mb']}"
    )
    lines.append(f"cores busy in the window: {cores}")
    return "\n".join(lines)


def main() -> None:
    for mode, worker in (("plans", plans_worker), ("queries", queries_worker)):
        if len(sys.argv) == 4 and sys.argv[1] == f"--{mode}-worker":
            config = json.loads(Path(sys.argv[2]).read_text())
            Path(sys.argv[3]).write_text(json.dumps(worker(config)))
            return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=float, default=1e7)
    parser.add_argument("--duration", type=int, default=60, help="measured seconds")
    parser.add_argument("--warmup", type=int, default=5, help="seconds of plan load before")
    parser.add_argument("--plan-clients", type=int, default=64)
    parser.add_argument("--query-clients", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="of the query clients' draws")
    parser.add_argument(
        "--warm-cache",
        action="store_true",
        help="ask every query once before the load: every answer under load is a repeated one",
    )
    parser.add_argument(
        "--query-timeout",
        type=float,
        help="the service's --query-timeout (default: the service's); the first resolution "
        "of the plan has to fit in it",
    )
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "serve")
    parser.add_argument(
        "--result", type=Path, default=ROOT / "bench" / "results" / "serve-load.json"
    )
    args = parser.parse_args()
    documents = int(args.documents)
    catalog, stamp, work = catalog_and_work(args.data, documents, "run")
    queries = query_list()
    body = {"mixture": mixture()}
    result: dict = {
        "documents": documents,
        "catalog": stamp,
        "cpus": os.cpu_count(),
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "duration_seconds": args.duration,
        "warmup_seconds": args.warmup,
        "plan_clients": args.plan_clients,
        "query_clients": args.query_clients,
        "warm_cache": args.warm_cache,
        "query_timeout": args.query_timeout,
        "predicates": list(PREDICATES),
    }
    print(f"unloaded queries ({len(queries)} distinct) ...", flush=True)
    rss: dict = {}
    with Server(catalog, work / "plan-cache", work / "server.log", args.query_timeout) as server:
        result["server_start_seconds"] = server.start_seconds
        rss["started"] = server.memory()
        result["unloaded"] = unloaded(server, queries)
        rss["after_the_unloaded_queries"] = server.memory()
    print("plan resolution, then the load ...", flush=True)
    with Server(catalog, work / "plan-cache", work / "server.log", args.query_timeout) as server:
        rss["second_server_started"] = server.memory()
        result["plan"] = alone(server, body)
        if args.warm_cache:
            result["warmed"] = unloaded(server, queries)["summary"]
        rss["after_the_plan_resolution_and_one_download"] = server.memory()
        result["loaded"] = loaded(server, args, queries, body, result["plan"]["plan_mb"], work)
        rss["after_the_load"] = server.memory()
    result["server_rss_mb"] = {key: round(value, 1) for key, value in rss.items()}
    result["load_average_at_end"] = round(os.getloadavg()[0], 2)
    args.result.parent.mkdir(parents=True, exist_ok=True)
    args.result.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    print(f"results: {args.result}")


if __name__ == "__main__":
    main()
