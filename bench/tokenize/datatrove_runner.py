"""datatrove's DocumentTokenizer on the benchmark corpus (run with datatrove's own venv).

    python datatrove_runner.py TOKENIZER DATA_FOLDER OUTPUT BATCH_SIZE WORKERS

One task per Parquet file, EOS after each document, no shuffling (mixplane does not shuffle
at this step either). Prints JSON: tokens, documents, cpu_seconds, wall_seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import ParquetReader
from datatrove.pipeline.tokens import DocumentTokenizer


def main() -> None:
    tokenizer, folder, output, batch_size, workers = sys.argv[1:6]
    files = len(list(Path(folder).glob("*.parquet")))
    cpu, wall = time.process_time(), time.perf_counter()
    LocalPipelineExecutor(
        pipeline=[
            ParquetReader(folder, glob_pattern="*.parquet"),
            DocumentTokenizer(
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
        "wall_seconds": wall_seconds,
        "files": [str(path) for path in token_files],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
