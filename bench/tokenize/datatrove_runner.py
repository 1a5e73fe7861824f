"""datatrove's DocumentTokenizer on the benchmark corpus (run with datatrove's own venv).

    python datatrove_runner.py TOKENIZER DATA_FOLDER OUTPUT BATCH_SIZE WORKERS

One task per Parquet file, EOS after each document, no shuffling (mixplane does not shuffle
at this step either). Prints JSON: tokens, documents, cpu_seconds, encode_cpu_seconds (inside
the library's encode call, 1 worker), wall_seconds.
"""

from __future__ import annotations

import json
import sys
import time
from functools import cached_property
from pathlib import Path

import pandas  # noqa: F401  (imported before the clock for every tool)
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import ParquetReader
from datatrove.pipeline.tokens import DocumentTokenizer

SPENT = [0.0]


class TimedTokenizer:
    """The library tokenizer, with the CPU time of its encode calls added up."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def encode_batch(self, *args, **kwargs):
        started = time.thread_time()
        try:
            return self._tokenizer.encode_batch(*args, **kwargs)
        finally:
            SPENT[0] += time.thread_time() - started

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)


class TimedDocumentTokenizer(DocumentTokenizer):
    @cached_property
    def tokenizer(self):
        return TimedTokenizer(super().tokenizer)


def main() -> None:
    tokenizer, folder, output, batch_size, workers = sys.argv[1:6]
    files = len(list(Path(folder).glob("*.parquet")))
    # Worker processes cannot import a class defined in this script: time 1 worker only.
    step = TimedDocumentTokenizer if workers == "1" else DocumentTokenizer
    cpu, wall = time.process_time(), time.perf_counter()
    LocalPipelineExecutor(
        pipeline=[
            ParquetReader(folder, glob_pattern="*.parquet"),
            step(
                output,
                tokenizer_name_or_path=tokenizer,
                eos_token="<|endoftext|>",
                batch_size=int(batch_size),
                shuffle_documents=False,
            ),
        ],
        tasks=files,
        workers=int(workers),
        logging_dir=f"{output}/_logs",
    ).run()
    cpu_seconds, wall_seconds = time.process_time() - cpu, time.perf_counter() - wall
    token_files = sorted(Path(output).glob("*.ds"))
    documents = sum(Path(f"{path}.index").stat().st_size // 8 for path in token_files)
    report = {
        "tokens": sum(path.stat().st_size for path in token_files) // 2,
        "documents": documents,
        "cpu_seconds": cpu_seconds,
        "encode_cpu_seconds": SPENT[0] if workers == "1" else float("nan"),
        "wall_seconds": wall_seconds,
        "files": [str(path) for path in token_files],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
