"""What a takedown costs: a domain removed from a dataset whose matches sit in a few shards.

    .venv/bin/python bench/governance/takedown.py [--docs 200000] [--shards 64] [--hit-shards 4]

Writes a synthetic tokenized dataset (`--docs` documents of 1-511 tokens, cut into about
`--shards` shards, a `url` per document), puts the documents of `--hit-shards` shards
(every third of them) on example.com, registers it and takes the domain down with
`apply_takedown`. Reported, against the two ways one would do it otherwise:

- finding the matches: the takedown's DuckDB query over the shards' metadata, against a
  Python loop over every row's url (`urllib.parse`);
- writing the new version: the takedown (affected shards rewritten, the others hard-linked),
  against rewriting every shard with the same writer;

with the bytes each writes. Results go to bench/results/takedown.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mixplane.catalog import Catalog  # noqa: E402
from mixplane.catalog.takedown import TakedownRequest, apply_takedown  # noqa: E402
from mixplane.catalog.takedown.matches import find_matches  # noqa: E402
from mixplane.catalog.takedown.rewrite import filter_shard  # noqa: E402
from mixplane.load.tools.synthetic import write_token_dataset  # noqa: E402
from mixplane.store import TokenizedDataset  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "takedown.json"
MEAN_TOKENS = 256


def write_dataset(folder: Path, docs: int, shards: int, hit_shards: int) -> None:
    per_shard = docs // shards
    hit = set(range(0, shards, max(1, shards // hit_shards))[:hit_shards])

    def urls(numbers: np.ndarray) -> dict[str, list]:
        return {
            "url": [
                f"https://www.example.com/{n}"
                if (n // per_shard) in hit and n % 3 == 0
                else f"https://site{n % 97}.org/{n}"
                for n in numbers.tolist()
            ]
        }

    shard_bytes = per_shard * MEAN_TOKENS * 2  # uint16 tokens
    write_token_dataset(
        str(folder),
        documents=docs,
        seed=1,
        source="web",
        mean_tokens=MEAN_TOKENS,
        shard_bytes=shard_bytes,
        properties=urls,
    )


def python_scan(folder: Path) -> int:
    """The matches found the way a script would: every row's url parsed in Python."""
    found = 0
    for path in sorted(folder.glob("shard-*.meta.parquet")):
        for url in pq.read_table(path, columns=["url"]).column("url").to_pylist():
            host = (urlsplit(url).hostname or "") if url else ""
            found += host == "example.com" or host.endswith(".example.com")
    return found


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def measure(docs: int, shards: int, hit_shards: int, work: Path) -> dict:
    folder = work / "web"
    write_dataset(folder, docs, shards, hit_shards)
    catalog = Catalog(work / "catalog.duckdb")
    version = catalog.register(str(folder), name="web")
    request = TakedownRequest.build(domains=["example.com"], reference="BENCH-1")

    started = time.perf_counter()
    with catalog.session() as session:
        matches = find_matches(session, [version], request)["web@1"]
    query_seconds = time.perf_counter() - started
    started = time.perf_counter()
    scanned = python_scan(folder)
    scan_seconds = time.perf_counter() - started
    assert scanned == matches.documents

    started = time.perf_counter()
    result = apply_takedown(catalog, request)
    takedown_seconds = time.perf_counter() - started
    new = work / "web-takedown-2"
    linked = [p for p in new.glob("shard-*") if os.stat(p).st_nlink > 1]
    written = sum(p.stat().st_size for p in new.rglob("*") if p.is_file() and p not in linked)

    # Every shard rewritten by the same writer (removing the same documents).
    dataset = TokenizedDataset(str(folder))
    everything = work / "rewrite-all"
    started = time.perf_counter()
    for index, shard in enumerate(version.shards):
        reader = dataset.shard(shard.stem)
        filter_shard(reader, reader.metadata(), matches.rows_of(index), str(everything))
    rewrite_seconds = time.perf_counter() - started

    described = result.datasets[0]
    return {
        "docs": docs,
        "tokens": version.tokens,
        "shards": len(version.shards),
        "dataset_bytes": folder_bytes(folder),
        "removed_documents": described["documents"],
        "shards_rewritten": described["shards_rewritten"],
        "find": {
            "duckdb_seconds": round(query_seconds, 3),
            "python_loop_seconds": round(scan_seconds, 3),
            "speedup": round(scan_seconds / query_seconds, 1),
        },
        "write": {
            "takedown_seconds": round(takedown_seconds, 3),
            "takedown_bytes_written": written,
            "rewrite_all_seconds": round(rewrite_seconds, 3),
            "rewrite_all_bytes": folder_bytes(everything),
            "speedup": round(rewrite_seconds / takedown_seconds, 1),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--hit-shards", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mixplane-takedown-bench-") as work:
        result = measure(args.docs, args.shards, args.hit_shards, Path(work))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
