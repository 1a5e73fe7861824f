"""datasketch's MinHash and MinHashLSH over JSON Lines shards (run in the peer venv).

    python datasketch_runner.py CORPUS WORK BANDS ROWS

Shingles are word 5-grams of the lower-cased text's letter-and-digit runs; every document is
queried before it is inserted, and the pairs found are joined into clusters whose survivor
is the first document seen. Writes WORK/clusters.jsonl (id, cluster, kept). Single process:
datasketch has no parallel mode.
"""

from __future__ import annotations

import glob
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

    for path in sorted(glob.glob(f"{corpus}/*.jsonl")):
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
    os.makedirs(work, exist_ok=True)
    members: dict[str, list[str]] = {}
    for node in parent:
        members.setdefault(root(node), []).append(node)
    with open(f"{work}/clusters.jsonl", "w") as out:
        for survivor, group in members.items():
            if len(group) > 1:
                for node in group:
                    row = {"id": node, "cluster": survivor, "kept": node == survivor}
                    out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
