"""Catalog benchmark: register N document rows, then run selective queries.

Writes a metadata-only tokenized folder (many shards, a few typed property columns), then
measures in separate processes, so each peak memory is its own:

1. `catalog register` of the folder (goal: under 10 s per million documents);
2. selective queries through `Catalog.select` (goal: under 1 s each), with the selection's
   memory per document of the dataset (goal: under 1 byte);
3. the same predicate as a hand-written DuckDB query over the same Parquet files, the floor
   for any engine built on DuckDB, and a pyarrow dataset scan, what users would otherwise do.

Results go to bench/catalog/results-N-S.json. A full run takes a few minutes on 2 cores and
about 160 MB of disk per size (the generated folder is kept under bench/data/catalog):
    python bench/catalog/run.py --documents 10_000_000 --shards 100
    python bench/catalog/run.py --documents 10_000_000 --shards 1000
    python bench/catalog/run.py --documents 200_000 --shards 20   # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent.parent))

from bench.measure import measure  # noqa: E402

QUERIES = {
    "selective": "language = 'nl' AND quality > 0.99",
    "selective_list": "language = 'nl' AND quality > 0.99 AND list_contains(tags, 'science')",
    "moderate": "language = 'de' AND NOT is_boilerplate AND dup_cluster_size = 1",
}


def generate(folder: Path, documents: int, shards: int) -> float:
    """Write the folder (skipped when it already holds the same size); seconds spent."""
    from mixplane.catalog.synthetic import random_properties, write_metadata_shards

    stamp = folder / "_bench.json"
    wanted = {"documents": documents, "shards": shards}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return 0.0
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    per_shard = [documents // shards + (i < documents % shards) for i in range(shards)]
    tables = (random_properties(n, seed=i) for i, n in enumerate(per_shard))
    write_metadata_shards(str(folder), tables)
    stamp.write_text(json.dumps(wanted))
    return time.perf_counter() - started


def child(argv: list[str]) -> None:
    """Work done in a measured subprocess; prints one JSON line with wall and CPU seconds.

    Imports happen before the clock starts. CPU seconds (all threads) hardly depend on how
    busy the machine is; wall seconds do.
    """
    mode, location, target = argv[:3]
    import duckdb
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from mixplane.catalog import Catalog

    started, cpu = time.perf_counter(), time.process_time()
    if mode == "register":
        version = Catalog(location).register(target, "bench")
        result = {"documents": version.documents}
    elif mode == "select":
        part = Catalog(location).select(target)["bench"]
        result = {"documents": part.documents, "tokens": part.tokens, "ranges": part.ranges}
        result |= {"nbytes": part.nbytes, "total_documents": part.total_documents}
    elif mode == "duckdb":
        files = sorted(str(p) for p in Path(location).glob("*.meta.parquet"))
        count, _ = duckdb.sql(
            f"SELECT count(*), sum(n_tokens) FROM read_parquet({files!r}) WHERE {target}"
        ).fetchall()[0]
        result = {"documents": count}
    else:  # pyarrow
        # The selective queries by hand: the scalar conditions pushed into the scan, and for
        # the list condition, the lists of the surviving rows checked afterwards.
        dataset = ds.dataset(location, format="parquet")
        scalar = (pc.field("language") == "nl") & (pc.field("quality") > 0.99)
        if target == "selective":
            count = dataset.count_rows(filter=scalar)
        else:
            tags = dataset.to_table(columns=["tags"], filter=scalar)["tags"].combine_chunks()
            hits = pc.equal(pc.list_flatten(tags), "science").to_numpy(zero_copy_only=False)
            count = np.unique(pc.list_parent_indices(tags).to_numpy()[hits]).size
        result = {"documents": int(count)}
    result["seconds"] = time.perf_counter() - started
    result["cpu_seconds"] = time.process_time() - cpu
    print(json.dumps(result))


def run_child(*args: str) -> dict:
    result = measure([sys.executable, __file__, "--child", *args])
    if result.returncode != 0:
        raise SystemExit(f"child {args[0]} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1]) | {
        "wall_seconds": round(result.seconds, 3),
        "peak_rss_mb": round(result.peak_rss_mb, 1),
    }


def repeated(times: int, *args: str) -> dict:
    """Run a child `times` times; the median run, with every run's seconds."""
    runs = sorted((run_child(*args) for _ in range(times)), key=lambda run: run["seconds"])
    median = runs[len(runs) // 2]
    cpu = sorted(run["cpu_seconds"] for run in runs)
    return median | {
        "all_seconds": [round(run["seconds"], 3) for run in runs],
        "median_cpu_seconds": round(cpu[len(cpu) // 2], 3),
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=lambda s: int(s.replace("_", "")), default=200_000)
    parser.add_argument("--shards", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="runs per query (median kept)")
    parser.add_argument("--data", type=Path, default=BENCH.parent / "data" / "catalog")
    parser.add_argument("--out", type=Path, help="default: bench/catalog/results-N-S.json")
    args = parser.parse_args()

    folder = args.data / f"meta-{args.documents}-{args.shards}"
    generated = generate(folder, args.documents, args.shards)
    catalog = args.data / f"catalog-{args.documents}-{args.shards}.duckdb"
    catalog.unlink(missing_ok=True)
    register = run_child("register", str(catalog), str(folder))
    results = {
        "documents": args.documents,
        "shards": args.shards,
        "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg()[0],
        "generate_seconds": round(generated, 2),
        "register": register,
        "register_seconds_per_million": round(register["seconds"] / (args.documents / 1e6), 3),
        "queries": {},
    }
    for name, where in QUERIES.items():
        select = repeated(args.repeat, "select", str(catalog), where)
        raw = repeated(args.repeat, "duckdb", str(folder), where)
        if raw["documents"] != select["documents"]:
            raise SystemExit(
                f"{name}: catalog found {select['documents']}, DuckDB {raw['documents']}"
            )
        entry = {
            "where": where,
            "select": select,
            "selection_bytes_per_document": select["nbytes"] / args.documents,
            "duckdb_direct": raw,
        }
        if name.startswith("selective"):
            entry["pyarrow_dataset"] = repeated(args.repeat, "pyarrow", str(folder), name)
        results["queries"][name] = entry
    results["load_average_at_end"] = os.getloadavg()[0]
    out = args.out or BENCH / f"results-{args.documents}-{args.shards}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
