"""`mixplane report` on a large dataset: seconds and peak memory of the command, with the
attribution list written as CSV (streamed, so memory stays flat as documents grow).

    .venv/bin/python bench/governance/report.py [--documents 2000000] [--shards 8]

The dataset is metadata only (`mixplane.catalog.synthetic`: the report reads nothing else
of a version), with a URL per document over 50,000 hosts and licences, sources and
languages as a processed crawl has them; it is registered in a fresh catalog and reported
once per size (a quarter of the documents, then all of them) in a process of its own.

Results go to bench/results/governance-report.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from measure import measure  # noqa: E402

from mixplane.catalog import Catalog  # noqa: E402
from mixplane.catalog.synthetic import random_properties, write_metadata_shards  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "governance-report.json"
HOSTS = 50_000


def shard(documents: int, seed: int) -> pa.Table:
    table = random_properties(documents, seed)
    rng = np.random.default_rng(seed + 1000)
    hosts = pc.cast(pa.array(rng.zipf(1.3, documents) % HOSTS), pa.string())
    paths = pc.cast(pa.array(np.arange(documents)), pa.string())
    urls = pc.binary_join_element_wise("https://www.site-", hosts, ".example/page/", paths, "")
    return table.append_column("url", urls)


def run(documents: int, shards: int, work: Path) -> dict:
    folder = work / f"tokens-{documents}"
    write_metadata_shards(str(folder), (shard(documents // shards, s) for s in range(shards)))
    catalog = work / "catalog.duckdb"
    ref = Catalog(catalog).register(str(folder), f"web{documents}").ref
    command = [sys.executable, "-m", "mixplane", "report", ref, "--catalog", str(catalog)]
    command += ["--json", "--csv", str(work / "attribution.csv"), "--html", str(work / "r.html")]
    measured = measure(command, env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""}, cwd=str(work))
    if measured.returncode:
        raise SystemExit(measured.stderr)
    report = json.loads(measured.stdout)
    return {
        "documents": report["documents"],
        "domains": report["by_domain"]["distinct"],
        "seconds": round(measured.seconds, 2),
        "peak_rss_mb": round(measured.peak_rss_mb, 1),
        "csv_mb": round((work / "attribution.csv").stat().st_size / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=2_000_000)
    parser.add_argument("--shards", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = [run(n, args.shards, Path(folder)) for n in (args.documents // 4, args.documents)]
    for row in rows:
        print(json.dumps(row))
    RESULTS.write_text(json.dumps({"runs": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
