"""datatrove's four-stage MinHash pipeline over JSON Lines shards (run in its own venv).

    python datatrove_runner.py CORPUS WORK WORKERS BANDS ROWS          # the timed work
    python datatrove_runner.py export WORK                              # for scoring

The first runs the four stages (signatures, buckets, clusters, filtered output). The second,
not timed, writes WORK/clusters.jsonl from the outputs: one line per document in a cluster
(id, cluster, kept), as the benchmark reads mixplane's clusters from its output afterwards.
"""

from __future__ import annotations

import glob
import gzip
import json
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
    if sys.argv[1] == "export":
        export(sys.argv[2])
        return
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


def export(work: str) -> None:
    with open(f"{work}/clusters.jsonl", "w") as out:
        for kind in ("kept", "removed"):
            for path in sorted(glob.glob(f"{work}/{kind}/*.jsonl.gz")):
                with gzip.open(path, "rt") as handle:
                    for line in handle:
                        doc = json.loads(line)
                        cluster = doc["metadata"].get("minhash_cluster_id", -1)
                        if cluster != -1:
                            row = {"id": doc["id"], "cluster": cluster, "kept": kind == "kept"}
                            out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
