"""What the audit trail costs a loader: building a `MixtureDataset`, one `state_dict()` and
`close()` (a start, a progress and a stop event) with the trail on and off, in turns.

The plan is cached first, so both sides measure the loader's start from the cache, as ranks
after the first do. Each event is one small file beside the catalog (fsynced on local disk).

Run:
    PYTHONPATH=src python -m bench.governance.audit_startup --rounds 4 --starts 15
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from mixplane.load import MixtureDataset
from mixplane.load.tools.synthetic import write_catalog


def one_start(spec: dict, audit: bool, number: int) -> float:
    started = time.perf_counter()
    dataset = MixtureDataset(spec | {"audit": audit, "run_id": f"bench-{number}"}, prefetch=0)
    dataset.state_dict()
    dataset.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="paired rounds, off then on")
    parser.add_argument("--starts", type=int, default=15, help="loader starts per round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        web = {"documents": 2000, "seed": 1, "source": "web", "mean_tokens": 200}
        catalog = write_catalog(folder, {"web": web})
        spec = {"catalog": catalog, "seq_len": 256, "seed": 1, "eos_id": 0,
                "components": {"web": {"where": "TRUE", "weight": 1}}}  # fmt: skip
        MixtureDataset(spec | {"audit": False}, prefetch=0).close()  # the plan, cached
        seconds: dict[bool, list[float]] = {False: [], True: []}
        number = 0
        for _ in range(args.rounds):
            for audit in (False, True):
                for _ in range(args.starts):
                    seconds[audit].append(one_start(spec, audit, number))
                    number += 1
    result = {
        "starts": args.rounds * args.starts,
        "median_ms_without_trail": round(statistics.median(seconds[False]) * 1000, 2),
        "median_ms_with_trail": round(statistics.median(seconds[True]) * 1000, 2),
    }
    result["added_ms"] = round(
        result["median_ms_with_trail"] - result["median_ms_without_trail"], 2
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
