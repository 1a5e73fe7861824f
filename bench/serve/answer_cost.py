"""What one answer of `mixplane serve` costs: its latency, and the CPU the service spends on
it (the server process and every process it started: scan processes, their fork server),
for answers computed from the catalog and answers from the cache.

One client asks each distinct query of `load.py` (20 predicates as a count and two
compositions, over the same synthetic catalog) once, computed, then every query again
`--repeats` times, from the cache, one request at a time; then it posts `load.py`'s mixture
(the first post resolves it, over the whole catalog) and posts it again 300 times, and asks
/api/health 300 times. CPU seconds come from /proc (children that ended are counted by the
process that waited for them), so the CPU figures hold on a busy machine; latencies do not.

    python bench/serve/answer_cost.py --documents 1e7 --repeats 20
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.serve.load import (  # noqa: E402
    HTTP_TIMEOUT,
    Server,
    catalog_and_work,
    cpu_seconds,
    mixture,
    query_list,
)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def ask(server: Server, requests: list[dict], rounds: int) -> dict:
    """Every request (`method`, `path`, `params` or `json`) `rounds` times, one at a time:
    latencies and CPU per answer."""
    latencies = []
    with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as client:
        cpu_before, started = cpu_seconds(server.pid), time.perf_counter()
        for _ in range(rounds):
            for request in requests:
                clock = time.perf_counter()
                answer = client.request(
                    request.get("method", "GET"),
                    request["path"],
                    params=request.get("params"),
                    json=request.get("json"),
                )
                latencies.append(time.perf_counter() - clock)
                if answer.status_code != 200:
                    raise SystemExit(f"{request}: {answer.status_code} {answer.text[:300]}")
        seconds = time.perf_counter() - started
        cpu = (cpu_seconds(server.pid) or 0.0) - (cpu_before or 0.0)
    return {
        "answers": len(latencies),
        "p50_ms": round(1000 * percentile(latencies, 0.5), 2),
        "p99_ms": round(1000 * percentile(latencies, 0.99), 2),
        "max_ms": round(1000 * max(latencies), 2),
        "service_cpu_ms_per_answer": round(1000 * cpu / len(latencies), 2),
        "answers_per_second": round(len(latencies) / seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=float, default=1e7)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--query-timeout", type=float, help="the service's (default: its own)")
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "serve")
    parser.add_argument(
        "--result", type=Path, default=ROOT / "bench" / "results" / "serve-answer-cost.json"
    )
    args = parser.parse_args()
    documents = int(args.documents)
    catalog, stamp, work = catalog_and_work(args.data, documents, "answer-cost")
    queries = query_list()
    plan = {"method": "POST", "path": "/api/plans", "json": {"mixture": mixture()}}
    load = [os.getloadavg()[0]]
    with Server(catalog, work / "plan-cache", work / "server.log", args.query_timeout) as server:
        result = {
            "documents": documents,
            "catalog": stamp,
            "distinct_queries": len(queries),
            "query_timeout": args.query_timeout,
            "server_start_seconds": server.start_seconds,
            "computed": ask(server, queries, 1),
            "cached": ask(server, queries, args.repeats),
            "plan_first_post": ask(server, [plan], 1),
            "plan_posted_again": ask(server, [plan], 300),
            "health": ask(server, [{"path": "/api/health"}], 300),
            "memory_mb_at_end": round(server.memory(), 1),
        }
    load.append(os.getloadavg()[0])
    result["load_average"] = [round(value, 2) for value in load]
    args.result.parent.mkdir(parents=True, exist_ok=True)
    args.result.write_text(json.dumps(result, indent=1) + "\n")
    for kind in ("computed", "cached", "plan_first_post", "plan_posted_again", "health"):
        print(f"{kind:9} {result[kind]}")
    print(f"results: {args.result}")


if __name__ == "__main__":
    main()
