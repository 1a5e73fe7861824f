"""datasketch's MinHash and MinHashLSH over JSON Lines shards (run in the peer venv).

    python datasketch_runner.py CORPUS WORK BANDS ROWS

Shingles are word 5-grams of the lower-cased text's letter-and-digit runs; every document is
queried before it is inserted, and the pairs found are joined into clusters whose survivor
is the first document seen. A second pass over the shards writes the deduplicated output as
the other tools do: WORK/kept/ and WORK/removed/ (gzipped JSON Lines, one file per shard, the
cluster id in `metadata.minhash_cluster_id` for documents in a cluster, -1 otherwise, as
datatrove's writer does). Single process: datasketch has no parallel mode.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import sys

from datasketch import MinHash, MinHashLSH

WORD = re.compile(r"\w+")


def main() -> None:
    corpus, work, bands, rows = sys.argv[1:5]
    bands, rows = int(bands), int(rows)
    lsh = MinHashLSH(num_perm=bands * rows, params=(bands, rows))
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    shards = sorted(glob.glob(f"{corpus}/*.jsonl"))
    for path in shards:
        with open(path) as handle:
            for line in handle:
                doc = json.loads(line)
                words = WORD.findall(doc["text"].lower())
                grams = {" ".join(words[i : i + 5]) for i in range(max(1, len(words) - 4))}
                signature = MinHash(num_perm=bands * rows, seed=1)
                signature.update_batch([gram.encode() for gram in grams])
                parent[doc["id"]] = doc["id"]
                for other in lsh.query(signature):
                    first, second = root(other), root(doc["id"])
                    if first != second:
                        parent[second] = first
                lsh.insert(doc["id"], signature)
    sizes: dict[str, int] = {}
    for node in parent:
        survivor = root(node)
        sizes[survivor] = sizes.get(survivor, 0) + 1
    for kind in ("kept", "removed"):
        os.makedirs(f"{work}/{kind}", exist_ok=True)
    for number, path in enumerate(shards):
        name = f"{number:05d}.jsonl.gz"
        with (
            open(path) as handle,
            gzip.open(f"{work}/kept/{name}", "wt") as kept,
            gzip.open(f"{work}/removed/{name}", "wt") as removed,
        ):
            for line in handle:
                doc = json.loads(line)
                survivor = root(doc["id"])
                cluster = survivor if sizes[survivor] > 1 else -1
                doc["metadata"] = {"minhash_cluster_id": cluster}
                target = kept if survivor == doc["id"] else removed
                target.write(json.dumps(doc) + "\n")


if __name__ == "__main__":
    main()
