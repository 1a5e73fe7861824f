"""The practical limit: the `tokenizers` encode loop over texts already in memory.

    python raw_runner.py TOKENIZER DATA_FOLDER BATCH_SIZE {encode_batch,encode_batch_fast}

Reading is done before the clock starts; only encoding and taking the ids out are timed.
Prints JSON: tokens, documents, cpu_seconds, encode_cpu_seconds (inside the library's encode
call), wall_seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from tokenizers import Tokenizer


def main() -> None:
    tokenizer_path, folder, batch_size, method = sys.argv[1:5]
    batch_size = int(batch_size)
    files = sorted(Path(folder).glob("*.parquet"))
    texts = [pq.read_table(f, columns=["text"]).column("text").to_pylist() for f in files]
    tokenizer = Tokenizer.from_file(tokenizer_path)
    encode = getattr(tokenizer, method)
    tokens = documents = 0
    encode_cpu = 0.0
    cpu, wall = time.process_time(), time.perf_counter()
    for file_texts in texts:
        for start in range(0, len(file_texts), batch_size):
            started = time.thread_time()
            encodings = encode(file_texts[start : start + batch_size])
            encode_cpu += time.thread_time() - started
            ids = [e.ids for e in encodings]
            tokens += sum(map(len, ids))
            documents += len(ids)
    result = {
        "tokens": tokens,
        "documents": documents,
        "cpu_seconds": time.process_time() - cpu,
        "encode_cpu_seconds": encode_cpu,
        "wall_seconds": time.perf_counter() - wall,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
