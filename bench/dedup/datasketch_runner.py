"""datasketch's MinHash and MinHashLSH over JSON Lines shards, on its documented fast path
(run in the peer venv).

    python datasketch_runner.py CORPUS WORK BANDS ROWS

Shingles are word 5-grams of the lower-cased text's letter-and-digit runs (the same words
as the other tools on the benchmark's corpus). The fast path, as datasketch documents it:
`MinHash.generator` builds every signature from one MinHash's permutations (created once,
not once per document), the hash is xxhash's `xxh32_intdigest` (the default is SHA-1), the
default "affine32" permutation scheme, `LeanMinHash` for the stored signatures, and all
documents go into `MinHashLSH` in one insertion session. Each document is then queried, and
the candidate pairs are joined into clusters whose survivor is the smallest id (as
mixplane's). A second pass over the shards writes the deduplicated output as the other
tools do: WORK/kept/ and WORK/removed/ (gzipped JSON Lines at level 1, one file per shard,
the cluster id in `metadata.minhash_cluster_id` for documents in a cluster, -1 otherwise, as
datatrove's writer does). Single process: datasketch has no parallel mode.
"""

from __future__ import annotations

import glob
import gzip
import os
import re
import sys

import orjson
import xxhash
from datasketch import LeanMinHash, MinHash, MinHashLSH

WORD = re.compile(r"\w+")


def shingles(text: str) -> set[str]:
    words = WORD.findall(text.lower())
    return {" ".join(words[i : i + 5]) for i in range(max(1, len(words) - 4))}


def main() -> None:
    corpus, work, bands, rows = sys.argv[1:5]
    bands, rows = int(bands), int(rows)
    shards = sorted(glob.glob(f"{corpus}/*.jsonl"))
    ids: list[str] = []

    def shingle_sets():
        for path in shards:
            with open(path, "rb") as handle:
                for line in handle:
                    doc = orjson.loads(line)
                    ids.append(doc["id"])
                    yield shingles(doc["text"])

    lsh = MinHashLSH(num_perm=bands * rows, params=(bands, rows))
    signatures: list[LeanMinHash] = []
    minhashes = MinHash.generator(
        shingle_sets(), num_perm=bands * rows, seed=1, hashfunc=xxhash.xxh32_intdigest
    )
    with lsh.insertion_session() as session:
        for number, minhash in enumerate(minhashes):
            lean = LeanMinHash(minhash)
            signatures.append(lean)
            session.insert(number, lean)

    parent = list(range(len(ids)))

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for number, signature in enumerate(signatures):
        for other in lsh.query(signature):
            first, second = root(other), root(number)
            if first != second:
                parent[max(first, second)] = min(first, second)
    survivor: dict[int, str] = {}  # component root -> smallest id in it
    sizes: dict[int, int] = {}
    for number, name in enumerate(ids):
        top = root(number)
        sizes[top] = sizes.get(top, 0) + 1
        if top not in survivor or name < survivor[top]:
            survivor[top] = name
    for kind in ("kept", "removed"):
        os.makedirs(f"{work}/{kind}", exist_ok=True)
    number = 0
    for shard, path in enumerate(shards):
        name = f"{shard:05d}.jsonl.gz"
        with (
            open(path, "rb") as handle,
            gzip.open(f"{work}/kept/{name}", "wb", compresslevel=1) as kept,
            gzip.open(f"{work}/removed/{name}", "wb", compresslevel=1) as removed,
        ):
            for line in handle:
                doc = orjson.loads(line)
                top = root(number)
                number += 1
                cluster = survivor[top] if sizes[top] > 1 else -1
                doc["metadata"] = {"minhash_cluster_id": cluster}
                target = kept if survivor[top] == doc["id"] else removed
                target.write(orjson.dumps(doc) + b"\n")


if __name__ == "__main__":
    main()
