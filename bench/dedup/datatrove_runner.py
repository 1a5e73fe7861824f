"""datatrove's four-stage MinHash pipeline over JSON Lines shards (run in its own venv).

    python datatrove_runner.py CORPUS WORK WORKERS BANDS ROWS

Runs the four stages (signatures, buckets, clusters, filtered output) in one process tree,
all inside the benchmark's clock. The deduplicated output goes to WORK/kept/ and the removed
documents to WORK/removed/ (gzipped JSON Lines, the cluster id in their metadata), which the
benchmark reads afterwards, outside the clock, to score the clusters.
"""

from __future__ import annotations

import glob
import sys

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter


def main() -> None:
    corpus, work, workers, bands, rows = sys.argv[1:6]
    workers, bands, rows = int(workers), int(bands), int(rows)
    shards = len(glob.glob(f"{corpus}/*.jsonl"))
    config = MinhashConfig(n_grams=5, num_buckets=bands, hashes_per_bucket=rows, seed=1)

    def reader():
        return JsonlReader(corpus, glob_pattern="*.jsonl")

    def run(pipeline, tasks, name):
        LocalPipelineExecutor(
            pipeline=pipeline, tasks=tasks, workers=min(workers, tasks),
            logging_dir=f"{work}/logs/{name}",
        ).run()  # fmt: skip

    run([reader(), MinhashDedupSignature(f"{work}/signatures", config=config)], shards, "sig")
    run(
        [MinhashDedupBuckets(f"{work}/signatures", f"{work}/buckets", config=config)],
        bands,
        "buckets",
    )
    run(
        [MinhashDedupCluster(f"{work}/buckets", f"{work}/remove", config=config,
                             save_cluster_id=True)],
        1,
        "cluster",
    )  # fmt: skip
    run(
        [
            reader(),
            MinhashDedupFilter(
                f"{work}/remove",
                exclusion_writer=JsonlWriter(f"{work}/removed"),
                load_cluster_ids=True,
            ),
            JsonlWriter(f"{work}/kept"),
        ],
        shards,
        "filter",
    )


if __name__ == "__main__":
    main()
