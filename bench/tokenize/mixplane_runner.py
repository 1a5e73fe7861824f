"""mixplane's tokenize on the benchmark corpus.

    python mixplane_runner.py TOKENIZER DATA_FOLDER OUTPUT BATCH_SIZE WORKERS

Times the whole step: reading Parquet, encoding, writing shards, metadata and manifest.
Prints JSON: tokens, documents, cpu_seconds (this process; meaningful with 1 worker),
wall_seconds.
"""

from __future__ import annotations

import json
import sys
import time

import tokenizers  # noqa: F401  (imported before the clock, as the raw loop does)

from mixplane.tokenize import tokenize_dataset


def main() -> None:
    tokenizer, folder, output, batch_size, workers = sys.argv[1:6]
    cpu, wall = time.process_time(), time.perf_counter()
    result = tokenize_dataset(
        {
            "input": f"{folder}/*.parquet",
            "output": output,
            "tokenizer": tokenizer,
            "eos": True,
            "batch_size": int(batch_size),
            "workers": int(workers),
        }
    )
    report = {
        "tokens": result.stats["tokens"],
        "documents": result.stats["documents"],
        "cpu_seconds": time.process_time() - cpu,
        "wall_seconds": time.perf_counter() - wall,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
