"""What distributing a run over Ray nodes costs: the same work on 1, 2 and 3 nodes.

    python bench/cluster/run.py              # 2 rounds of each setup, as root
    python bench/cluster/run.py --rounds 1   # a quick look

The hosts are network namespaces of this machine (tests/cluster: each its own address and
disk, moto's S3 server on one). The work is the README's cluster pipeline (extract,
normalize, pii, dedup_exact, dedup_minhash) over a synthetic crawl on the store, cut into
small tasks (`task_size_mb: 0.005`: one task per input file) so that per-task costs show,
in two sizes: 16 input tasks, and 32 (the crawl twice). Each input task is three Ray tasks,
one per segment. It runs with the local executor on one host (one worker), then on a Ray
cluster of the head alone, of the head and one worker, and of all three; each Ray node has
one CPU.

The machine's two cores are shared by every host, so more nodes cannot be faster here: the
figures are what distribution costs. Per run: wall seconds; CPU seconds of every process of
every host, the driver included (sampled from /proc every 0.2 s; the S3 emulator's own CPU
is kept apart); bytes each host sent and received on its link (its interface's counters:
S3 traffic and Ray's own); the store's requests by kind. From the two sizes, per setup:
what one more task costs (CPU, wall, Ray's bytes, S3 requests) and the fixed cost of a run.
Results: bench/results/cluster.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402
from cluster.machines import RAY_WORKERS, Cluster  # noqa: E402
from readme_blocks import readme_block  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "cluster.json"
DOCS = 1600
TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_SECONDS = 0.2
RAY_HOSTS = ("head", *RAY_WORKERS)


def cpu_seconds(cluster: Cluster) -> dict[tuple[str, int, int], float]:
    """CPU seconds so far of every process of every host, by (host, pid, start time)."""
    seen = {}
    for name, host in cluster.hosts.items():
        for pid in host.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # utime, stime, and the children it reaped (cutime, cstime); starttime
            used = sum(int(value) for value in fields[11:15]) / TICKS
            seen[(name, pid, int(fields[19]))] = used
    return seen


def link_bytes(cluster: Cluster) -> dict[str, dict[str, int]]:
    """Bytes each host has received and sent on its link so far."""
    counts = {}
    for name, host in cluster.hosts.items():
        shown = subprocess.run(
            ["ip", "-n", host.namespace, "-s", "-j", "link", "show", "eth0"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        stats = json.loads(shown)[0]["stats64"]
        counts[name] = {"received": stats["rx"]["bytes"], "sent": stats["tx"]["bytes"]}
    return counts


def requests_by_kind(cluster: Cluster) -> Counter:
    return Counter(method for _, method, _ in cluster.s3_requests())


class CpuSampler:
    """CPU seconds used by every host's processes while a command runs. Processes are
    sampled every SAMPLE_SECONDS (Ray ends a job's workers when its driver exits, before a
    last look could see them): a process that ends loses at most its last interval."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.before = cpu_seconds(cluster)
        self.last = dict(self.before)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.wait(SAMPLE_SECONDS):
            self.last.update(cpu_seconds(self.cluster))

    def stop(self) -> Counter:
        self.done.set()
        self.thread.join()
        self.last.update(cpu_seconds(self.cluster))
        used = Counter()
        for key, seconds in self.last.items():
            used[key[0]] += seconds - self.before.get(key, 0.0)
        return used


def measure(cluster: Cluster, host: str, argv: list[str]) -> dict:
    """Run `argv` on `host`; what it cost the cluster."""
    links, requests = link_bytes(cluster), requests_by_kind(cluster)
    sampler = CpuSampler(cluster)
    started = time.perf_counter()
    output = cluster.run(host, argv)
    wall = time.perf_counter() - started
    by_host = sampler.stop()
    moved = link_bytes(cluster)
    # The store is moto, an S3 emulator in Python: its CPU is the testbed's, not the run's.
    mixplane = sum(seconds for name, seconds in by_host.items() if name != "store")
    return {
        "wall_seconds": round(wall, 2),
        "cpu_seconds": {name: round(value, 2) for name, value in sorted(by_host.items())},
        "cpu_seconds_without_store": round(mixplane, 2),
        "bytes": {
            name: {k: moved[name][k] - links[name][k] for k in ("received", "sent")}
            for name in moved
        },
        "s3_requests": dict(requests_by_kind(cluster) - requests),
        "tasks": json.loads(output[re.search(r"^\{", output, re.M).start() :])["stats"]["tasks"],
    }


def prepare(cluster: Cluster) -> None:
    """The corpus on the store twice (raw/ and raw2/), and two pipelines on the head's disk:
    the README's with small tasks over raw/ (`small.yaml`), and the same over both copies,
    twice the tasks (`large.yaml`)."""
    cluster.shell(
        "head",
        f"mixplane synth /tmp/corpus --docs {DOCS} --seed 11 >/dev/null && "
        "python -m cluster.objects put /tmp/corpus/raw s3://my-bucket/raw "
        "/tmp/corpus/raw s3://my-bucket/raw2",
    )
    small = yaml.safe_load(readme_block("yaml", "executor: ray")) | {"task_size_mb": 0.005}
    copies = [json.loads(json.dumps(item).replace("/raw/", "/raw2/")) for item in small["input"]]
    large = small | {"input": small["input"] + copies}
    for name, config in (("small", small), ("large", large)):
        cluster.hosts["head"].local(f"/tmp/{name}.yaml").write_text(yaml.safe_dump(config))


def run_setups(cluster: Cluster, rounds: int) -> dict:
    """Each setup `rounds` times on each size: the local executor, then Ray on 1, 2 and 3
    nodes (a node joins between setups)."""
    runs: dict[str, list[dict]] = {}
    for nodes in range(4):
        if nodes == 1:
            cluster.start_ray_head()
        elif nodes > 1:
            cluster.start_ray_workers((RAY_HOSTS[nodes - 1],), alive=nodes)
        label = f"ray, {nodes} node{'s' * (nodes > 1)}" if nodes else "local, 1 worker"
        for number in range(rounds):
            for size in ("small", "large"):
                argv = ["mixplane", "process", f"{size}.yaml", "--json"]
                argv += ["--output", f"s3://my-bucket/out/{nodes}-{size}-{number}"]
                argv += ["--ray-address", cluster.ray_address] if nodes else ["--executor", "local"]
                result = measure(cluster, "head", argv) | {"size": size}
                runs.setdefault(label, []).append(result)
                print(label, number, json.dumps(result), flush=True)
    return runs


def register_costs(cluster: Cluster) -> dict:
    """Registering with the catalog on the store, per shard: the 3-node run's output
    tokenized (on the 3 nodes) into shards of the default size and into 20 KB ones (more
    shards, the same documents), each registered as a dataset of its own."""
    cluster.shell(
        "head",
        "mixplane train-tokenizer s3://my-bucket/out/3-small-0 --vocab-size 2000 "
        "-o s3://my-bucket/tokenizer.json",
    )
    costs = {}
    for size, shard_mb in (("small", "256"), ("large", "0.02")):
        tokens = f"s3://my-bucket/tokens-{size}"
        cluster.run("head", ["mixplane", "tokenize", "s3://my-bucket/out/3-small-0", tokens,
                             "-t", "s3://my-bucket/tokenizer.json", "--eos", "--shard-size-mb",
                             shard_mb, "--executor", "ray", "--ray-address",
                             cluster.ray_address])  # fmt: skip
        requests = requests_by_kind(cluster)
        started = time.perf_counter()
        catalog = ["--catalog", "s3://my-bucket/catalog.duckdb", "--json"]
        output = cluster.run("head", ["mixplane", "catalog", "register", tokens, "--name", size,
                                      *catalog])  # fmt: skip
        seconds = time.perf_counter() - started
        shards = json.loads(output[re.search(r"^\{", output, re.M).start() :])["shards"]
        costs[size] = {
            "shards": shards,
            "seconds": round(seconds, 2),
            "s3_requests": dict(requests_by_kind(cluster) - requests),
        }
        print("register", size, json.dumps(costs[size]), flush=True)
    small, large = costs["small"], costs["large"]
    more = large["shards"] - small["shards"]
    costs["seconds_per_shard"] = round((large["seconds"] - small["seconds"]) / more, 3)
    costs["s3_requests_per_shard"] = {
        kind: round((large["s3_requests"].get(kind, 0) - count) / more, 1)
        for kind, count in sorted(small["s3_requests"].items())
    }
    return costs


def summarize(runs: dict) -> dict:
    """Per setup, medians of each size, and from the two sizes what one more task costs
    (the slope) and what a run costs whatever its tasks (the intercept: starting workers,
    the driver, the merges of a corpus this small). Every input task runs three times, once
    per segment."""
    summary = {}
    for label, results in runs.items():
        sizes = {}
        for size in ("small", "large"):
            chosen = [r for r in results if r["size"] == size]
            sizes[size] = {
                "tasks": 3 * chosen[0]["tasks"],
                "wall_seconds": statistics.median(r["wall_seconds"] for r in chosen),
                "cpu_seconds": statistics.median(r["cpu_seconds_without_store"] for r in chosen),
                "bytes_per_host": {
                    host: statistics.median(
                        r["bytes"][host]["received"] + r["bytes"][host]["sent"] for r in chosen
                    )
                    for host in chosen[0]["bytes"]
                },
                "s3_requests": chosen[0]["s3_requests"],
            }
        small, large = sizes["small"], sizes["large"]
        more = large["tasks"] - small["tasks"]
        per_task_cpu = (large["cpu_seconds"] - small["cpu_seconds"]) / more
        per_task_wall = (large["wall_seconds"] - small["wall_seconds"]) / more
        ray_bytes = {  # what hosts moved beyond the store's traffic: Ray's own
            size: sum(v for h, v in sizes[size]["bytes_per_host"].items() if h != "store")
            - sizes[size]["bytes_per_host"]["store"]
            for size in sizes
        }
        summary[label] = {
            **sizes,
            "cpu_ms_per_task": round(1000 * per_task_cpu, 1),
            "wall_ms_per_task": round(1000 * per_task_wall, 1),
            "cpu_seconds_fixed": round(small["cpu_seconds"] - per_task_cpu * small["tasks"], 2),
            "ray_bytes_per_task": round((ray_bytes["large"] - ray_bytes["small"]) / more),
            "s3_requests_per_task": {
                kind: round((large["s3_requests"].get(kind, 0) - count) / more, 1)
                for kind, count in sorted(small["s3_requests"].items())
            },
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"mixplane-bench-cluster-{os.getpid()}"
    cluster = Cluster(root)
    try:
        cluster.up(ray=False)
        prepare(cluster)
        runs = run_setups(cluster, args.rounds)
        registering = register_costs(cluster)
    finally:
        cluster.stop()
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "documents": DOCS,
        "rounds": args.rounds,
        "summary": summarize(runs),
        "register": registering,
        "runs": runs,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    for label, row in result["summary"].items():
        print(label, json.dumps(row))


if __name__ == "__main__":
    main()
