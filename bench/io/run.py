"""Read and rewrite a JSONL.zst corpus with no stages: mixplane vs datatrove, same files, same run.

    .venv/bin/python bench/io/run.py --gigabytes 1 --workers 1 2

Reports seconds, MB/s of uncompressed input and the peak RSS of the whole process tree.
datatrove runs in its own virtual environment (created on first use).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from measure import measure  # noqa: E402
from peer_venv import ensure_venv  # noqa: E402

HERE = Path(__file__).resolve().parent
MIXPLANE = """
import sys
from mixplane import run_pipeline
run_pipeline({"input": sys.argv[1] + "/*.jsonl.zst", "output": sys.argv[2],
              "workers": int(sys.argv[3])})
"""
DATATROVE = """
import sys
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import ParquetWriter
files = int(sys.argv[4])
LocalPipelineExecutor(
    pipeline=[JsonlReader(sys.argv[1], glob_pattern="*.jsonl.zst"), ParquetWriter(sys.argv[2])],
    tasks=files, workers=int(sys.argv[3]), logging_dir=sys.argv[2] + "/_logs",
).run()
"""


def make_corpus(folder: Path, gigabytes: float, files: int, seed: int = 0) -> int:
    """Write `files` JSONL.zst files holding about `gigabytes` of uncompressed JSON."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(["".join(rng.choice(letters, rng.integers(2, 10))) for _ in range(5000)])
    weights = 1 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    target = int(gigabytes * 1e9 / files)
    total = 0
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        size, n = 0, 0
        path = folder / f"shard-{f:03d}.jsonl.zst"
        with open(path, "wb") as raw, zstandard.ZstdCompressor(level=3).stream_writer(raw) as out:
            while size < target:
                words = vocab[rng.choice(len(vocab), rng.integers(100, 1500), p=weights)]
                record = {"id": f"{f}-{n}", "text": " ".join(words), "url": f"https://x/{n}"}
                line = (json.dumps(record) + "\n").encode()
                out.write(line)
                size += len(line)
                n += 1
        total += size
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--data", default=str(HERE.parent / "data" / "io"))
    args = parser.parse_args()
    data = Path(args.data) / f"{args.gigabytes}gb-{args.files}"
    stamp = data / "bytes.json"
    if not stamp.exists():
        print(f"writing corpus to {data}", file=sys.stderr)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps(make_corpus(data / "raw", args.gigabytes, args.files)))
    megabytes = json.loads(stamp.read_text()) / 1e6
    peer = ensure_venv("datatrove", ["datatrove[io]"])
    rows = []
    for workers in args.workers:
        for tool, python, script in (
            ("mixplane", sys.executable, MIXPLANE),
            ("datatrove", peer, DATATROVE),
        ):
            out = Path(tempfile.mkdtemp(prefix=f"bench-{tool}-"))
            command = [python, "-c", script, str(data / "raw"), str(out / "o"), str(workers)]
            result = measure([*command, str(args.files)])
            shutil.rmtree(out)
            if result.returncode:
                raise SystemExit(f"{tool} failed:\n{result.stderr[-3000:]}")
            rows.append(
                (tool, workers, result.seconds, megabytes / result.seconds, result.peak_rss_mb)
            )
    print("| tool | workers | seconds | MB/s (uncompressed) | peak RSS MB |")
    print("|---|---|---|---|---|")
    for tool, workers, seconds, rate, rss in rows:
        print(f"| {tool} | {workers} | {seconds:.1f} | {rate:.1f} | {rss:.0f} |")
    for workers in args.workers:
        ours = next(r for r in rows if r[0] == "mixplane" and r[1] == workers)
        theirs = next(r for r in rows if r[0] == "datatrove" and r[1] == workers)
        print(f"\nworkers={workers}: mixplane is {theirs[2] / ours[2]:.2f}x datatrove's speed")


if __name__ == "__main__":
    main()
