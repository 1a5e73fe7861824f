"""mixplane's tokenize on the benchmark corpus.

    python mixplane_runner.py TOKENIZER DATA_FOLDER OUTPUT BATCH_SIZE WORKERS

Times the whole step: reading Parquet, encoding, writing shards, metadata and manifest.
Prints JSON: tokens, documents, cpu_seconds (this process; meaningful with 1 worker),
encode_cpu_seconds (inside the library's encode call, 1 worker), wall_seconds.
"""

from __future__ import annotations

import json
import sys
import time

# Imports happen before the clock for every tool (pyarrow loads pandas on first use).
import pandas  # noqa: F401
import tokenizers  # noqa: F401

from mixplane.tokenize import tokenize_dataset
from mixplane.tokenize.load import cached_tokenizer


def time_encoding(tokenizer_spec: str) -> list[float]:
    """Load the tokenizer as the task will (same cache key) and time its library calls."""
    tokenizer = cached_tokenizer(
        tokenizer_spec,
        bos=False,
        eos=True,
        bos_token=None,
        eos_token=None,
        threads=None,
        storage_options={},
    )
    spent = [0.0]
    library_call = tokenizer._encode

    def timed(*args, **kwargs):
        started = time.thread_time()
        try:
            return library_call(*args, **kwargs)
        finally:
            spent[0] += time.thread_time() - started

    tokenizer._encode = timed
    return spent


def main() -> None:
    tokenizer, folder, output, batch_size, workers = sys.argv[1:6]
    cpu, wall = time.process_time(), time.perf_counter()
    # Loading is timed (it is part of the step); with 1 worker the task reuses this instance.
    spent = time_encoding(tokenizer) if workers == "1" else [float("nan")]
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
        "encode_cpu_seconds": spent[0],
        "wall_seconds": time.perf_counter() - wall,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
