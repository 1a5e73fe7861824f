"""What `mixplane gc` costs: planning, the host check, and removal against a plain unlink.

    .venv/bin/python bench/governance/gc.py [--versions 100] [--shards 8]

Registers `--versions` versions of one dataset (synthetic token shards, `--shards` each),
then measures, on this machine as it is (other processes included):

- the plan (`survey`: the catalog's versions, their files, the audit trail, `/proc`), median
  of 3; the `/proc` scan alone, median of 5, with the number of processes it read;
- removal (`apply_plan` of a plan keeping the latest version: record in the catalog, a host
  check per version, unlink), once, against unlinking the same number of files of a copy
  with nothing else (`os.unlink` in a loop, both sets synced to disk first): the ratio is
  what safety costs. The host check reads every process's maps once per version, so its
  share grows with the number of processes and with the machine's load.

Results go to bench/results/gc-VERSIONS.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mixplane.catalog import Catalog  # noqa: E402
from mixplane.catalog.gc import Retention, apply_plan, survey  # noqa: E402
from mixplane.catalog.gc.liveness import open_files  # noqa: E402
from mixplane.load.tools.synthetic import write_token_dataset  # noqa: E402


def timed(call, repeat: int) -> tuple[float, object]:
    seconds, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result


def run(versions: int, shards: int, work: Path) -> dict:
    catalog = work / "catalog.duckdb"
    for number in range(1, versions + 1):
        folder = work / f"web-v{number}"
        write_token_dataset(
            str(folder), documents=shards * 50, seed=number, mean_tokens=20, shard_bytes=2000
        )
        Catalog(catalog).register(str(folder), "web")
    scan_seconds, snapshot = timed(open_files, 5)
    survey_seconds, plan = timed(lambda: survey(catalog, Retention(keep_latest=1)), 3)
    files = [f.url for removal in plan.removals for f in removal.files]
    plain = work / "plain"
    plain.mkdir()
    copies = []
    for i, url in enumerate(files):  # the same number of files, of the same sizes
        copy = plain / f"{i}"
        copy.write_bytes(Path(url).read_bytes())
        copies.append(copy)
    os.sync()  # both sets on disk: unlinking a file still in the page cache costs less
    started = time.perf_counter()
    result = apply_plan(plan, catalog)
    gc_seconds = time.perf_counter() - started
    started = time.perf_counter()
    for copy in copies:
        os.unlink(copy)
    unlink_seconds = time.perf_counter() - started
    return {
        "versions": versions,
        "shards_per_version": shards,
        "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg()[0],
        "processes_read": len({pid for pids in snapshot.paths.values() for pid in pids}),
        "processes_hidden": snapshot.hidden,
        "proc_scan_seconds": round(scan_seconds, 4),
        "plan_seconds": round(survey_seconds, 3),
        "removed_versions": len(result.removed),
        "removed_files": result.files,
        "removed_bytes": result.bytes,
        "gc_delete_seconds": round(gc_seconds, 3),
        "plain_unlink_seconds": round(unlink_seconds, 3),
        "gc_over_plain_unlink": round(gc_seconds / max(unlink_seconds, 1e-9), 1),
        "gc_seconds_per_version": round(gc_seconds / max(len(result.removed), 1), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--shards", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mixplane-gc-bench-") as folder:
        results = run(args.versions, args.shards, Path(folder))
    out = ROOT / "bench" / "results" / f"gc-{args.versions}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
