"""Plans at scale: start time and memory per rank of a mixture over 1e7..1e8 documents.

A synthetic catalog of N documents (metadata from `catalog.synthetic`, 1e5 documents per
shard, each shard with a real `.idx` and a sparse `.bin` of zeros, so planning reads the token
counts from the index as for any local dataset without writing terabytes of tokens) and a
mixture of four components whose predicates pick documents scattered through every shard
(source = ...: 1.4 documents per range on average). Each measurement is a fresh process that
builds `MixtureDataset(spec, rank, world_size)` and plans the rank's first two blocks of
1,024 sequences of 2,048 tokens (`plan.block`: the document pieces of every sequence; then,
timed apart, `plan_block`, which adds their offsets and opens their token shards):

- cold: empty plan cache (catalog query, token counts, plan cache written, epoch orders
  computed and written), one process;
- cold, 8 ranks: empty cache, 8 rank processes started together (one queries and computes,
  the others wait for the lock, then map what it wrote);
- warm: plan and epoch orders cached, one process;
- 8 ranks: warm cache, 8 rank processes alive together, each reporting its anonymous
  memory (RssAnon in /proc/PID/status) once its first blocks are planned.

Results go to bench/results/loader-scale.json; figures at 1e9 documents are extrapolated
linearly from the two largest sizes. The generated folders stay under bench/data/scale: 22
bytes of metadata and index per document, and the plan cache, 35 bytes per document plus 12
per document and epoch of orders (2.2, 3.4 and 1.1 GB at 1e8).

    python bench/loader/scale.py --documents 1e7 1e8
    python bench/loader/scale.py --documents 1e6 3e6   # quick check
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))

from bench.measure import measure  # noqa: E402
from mixplane.store.format import DTYPES, encode_index  # noqa: E402

PER_SHARD = 100_000
SEQ_LEN = 2048
BLOCK = 1024  # sequences per block: the loader's default at 2,048 tokens (2M tokens)
BLOCKS = 2
RANKS = 8
DTYPE = DTYPES[2]  # the synthetic tokenizer's uint16
COMPONENTS = {
    "web": {"where": "source IN ('web', 'forum')", "weight": 0.5},
    "wiki": {"where": "source = 'wiki'", "weight": 0.2},
    "code": {"where": "source = 'code'", "weight": 0.2},
    "books": {"where": "source = 'books'", "weight": 0.1},
}


def generate(folder: Path, documents: int) -> str:
    """The catalog of a folder of `documents` (written once, kept); its path."""
    import numpy as np

    from mixplane.catalog import Catalog
    from mixplane.catalog.synthetic import random_properties, write_metadata_shards

    catalog = folder / "catalog.duckdb"
    if (folder / "_bench.json").exists():
        return str(catalog)
    shutil.rmtree(folder, ignore_errors=True)
    data = folder / "data"
    data.mkdir(parents=True)
    shards = -(-documents // PER_SHARD)

    def tables():
        for number in range(shards):
            table = random_properties(min(PER_SHARD, documents - number * PER_SHARD), number)
            stem = data / f"shard-00000-{number:03d}"
            offsets = np.concatenate(([0], table["n_tokens"].to_numpy().cumsum()))
            stem.with_suffix(".idx").write_bytes(encode_index(DTYPE, offsets))
            with open(stem.with_suffix(".bin"), "wb") as handle:
                handle.truncate(int(offsets[-1]) * DTYPE.itemsize)  # sparse: no disk used
            yield table

    write_metadata_shards(str(data), tables())
    Catalog(str(catalog)).register(str(data), name="synthetic")
    (folder / "_bench.json").write_text(json.dumps({"documents": documents}))
    return str(catalog)


def spec_for(catalog: str, cache: Path) -> dict:
    return {
        "catalog": catalog,
        "cache_dir": str(cache),
        "seq_len": SEQ_LEN,
        "seed": 1,
        "eos_id": 0,
        "components": COMPONENTS,
    }


def status(field: str) -> float:
    """A /proc/self/status figure in MB."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def child(spec_json: str, rank: int, world: int, ready: str | None) -> None:
    """Build the rank's dataset and plan its first blocks; print one RESULT line."""
    import numpy as np

    from mixplane.load import Layout, MixtureDataset
    from mixplane.load.read.assemble import plan_block

    spec = json.loads(spec_json)
    before = status("RssAnon")
    started, cpu = time.perf_counter(), time.process_time()
    dataset = MixtureDataset(spec, rank=rank, world_size=world)
    built = time.perf_counter() - started
    layout = Layout(rank, world)
    blocks = [
        layout.positions(0, np.arange(block * BLOCK, (block + 1) * BLOCK))
        for block in range(BLOCKS)
    ]
    pieces = sum(len(dataset.plan.block(positions).spans) for positions in blocks)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    # What reading them adds to the plan: document offsets, shards, and opening the shards.
    assembled = time.perf_counter()
    for positions in blocks:
        plan_block(dataset.context, positions)
    result = {
        "rank": rank,
        "seconds": seconds,
        "construct_seconds": built,
        "cpu_seconds": cpu,
        "assemble_seconds": time.perf_counter() - assembled,
        "pieces": pieces,
        "queried_catalog": "duckdb" in sys.modules,
        "rss_anon_mb": status("RssAnon"),
        "rss_anon_at_import_mb": before,
        "rss_file_mb": status("RssFile"),
        "peak_rss_mb": status("VmHWM"),
        "documents": [len(p) for p in dataset.plan.components],
    }
    # What of it is freed memory the allocator kept (glibc gives it back on request).
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    result["rss_anon_after_trim_mb"] = status("RssAnon")
    if ready is not None:  # stay alive until every rank has measured
        open(f"{ready}-{rank}", "w").close()
        while len([n for n in os.listdir(os.path.dirname(ready)) if "ready-" in n]) < world:
            time.sleep(0.05)
    print("RESULT " + json.dumps(result), flush=True)


def parse(stdout: str) -> dict:
    line = next(x for x in stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def one(spec: dict) -> dict:
    """One rank of one, in a fresh process (peak RSS of the process tree measured outside)."""
    done = measure([sys.executable, __file__, "--child", json.dumps(spec), "0", "1"])
    if done.returncode != 0:
        raise SystemExit(f"child failed:\n{done.stderr[-3000:]}")
    return parse(done.stdout) | {"wall_seconds": round(done.seconds, 2)}


def ranks(spec: dict, sync: Path) -> list[dict]:
    """`RANKS` rank processes started together, alive together until all have measured."""
    shutil.rmtree(sync, ignore_errors=True)
    sync.mkdir(parents=True)
    command = [sys.executable, __file__, "--child", json.dumps(spec)]
    started = time.perf_counter()
    processes = [
        subprocess.Popen(
            [*command, str(rank), str(RANKS), str(sync / "ready")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(RANKS)
    ]
    outputs = [process.communicate() for process in processes]
    wall = time.perf_counter() - started
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        if process.returncode != 0:
            raise SystemExit(f"rank failed:\n{stderr[-3000:]}")
    return [parse(stdout) | {"all_ranks_wall_seconds": round(wall, 2)} for stdout, _ in outputs]


def summary(runs: list[dict]) -> dict:
    anon = sorted(run["rss_anon_mb"] for run in runs)
    return {
        "max_rss_anon_mb": round(anon[-1], 1),
        "median_rss_anon_mb": round(anon[len(anon) // 2], 1),
        "max_seconds": round(max(run["seconds"] for run in runs), 2),
        "ranks_that_queried": sum(run["queried_catalog"] for run in runs),
        "wall_seconds": runs[0]["all_ranks_wall_seconds"],
        "runs": runs,
    }


def cache_size(cache: Path) -> dict:
    sizes = {"plan_mb": 0.0, "orders_mb": 0.0}
    for path in cache.rglob("*.npy"):
        key = "orders_mb" if path.parent.name == "orders" else "plan_mb"
        sizes[key] += path.stat().st_size / 2**20
    return {key: round(value, 1) for key, value in sizes.items()}


def measure_size(documents: int, data: Path) -> dict:
    folder = data / f"scale-{documents}"
    started = time.perf_counter()
    catalog = generate(folder, documents)
    generated = time.perf_counter() - started
    cache = folder / "cache"
    spec = spec_for(catalog, cache)
    result: dict = {"documents": documents, "generate_seconds": round(generated, 1)}
    shutil.rmtree(cache, ignore_errors=True)
    result["cold"] = one(spec)
    result["cache"] = cache_size(cache)
    result["warm"] = one(spec)
    result["ranks_warm"] = summary(ranks(spec, folder / "sync"))
    shutil.rmtree(cache, ignore_errors=True)
    result["ranks_cold"] = summary(ranks(spec, folder / "sync"))
    return result


def extrapolate(results: list[dict], documents: float = 1e9) -> dict:
    """Each figure as a + b * documents through the two largest sizes."""
    small, large = sorted(results, key=lambda r: r["documents"])[-2:]
    figures = {
        "cold_seconds": lambda r: r["cold"]["seconds"],
        "warm_seconds": lambda r: r["warm"]["seconds"],
        "rank_rss_anon_mb": lambda r: r["ranks_warm"]["max_rss_anon_mb"],
        "cold_rank_rss_anon_mb": lambda r: r["ranks_cold"]["max_rss_anon_mb"],
    }
    out = {}
    for name, figure in figures.items():
        slope = (figure(large) - figure(small)) / (large["documents"] - small["documents"])
        slope = max(slope, 0.0)  # a smaller figure at the larger size: no growth measured
        out[name] = round(figure(large) + slope * (documents - large["documents"]), 2)
        out[name.replace("_mb", "") + "_per_million_documents"] = round(slope * 1e6, 4)
    return {"documents": documents, **out}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        spec, rank, world, *ready = sys.argv[2:]
        child(spec, int(rank), int(world), ready[0] if ready else None)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=float, nargs="+", default=[1e7, 1e8])
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "scale")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "loader-scale.json"
    )
    args = parser.parse_args()
    results = {
        "cpus": os.cpu_count(),
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "seq_len": SEQ_LEN,
        "blocks": f"{BLOCKS} x {BLOCK} sequences per rank",
        "components": COMPONENTS,
        "sizes": [],
    }
    for documents in sorted(int(d) for d in args.documents):
        results["sizes"].append(measure_size(documents, args.data))
        print(json.dumps(results["sizes"][-1], indent=1)[:3000], flush=True)
    if len(results["sizes"]) >= 2:
        results["extrapolated"] = extrapolate(results["sizes"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
