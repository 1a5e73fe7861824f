"""MinHash recall in dense clusters of near-duplicates, against an exact all-pairs reference.

    .venv/bin/python bench/dedup/dense.py      # 20 clusters of 51, 20 chains of 8, 1,000 others
    .venv/bin/python bench/dedup/dense.py --clusters 100 --chains 100 --filler 14100 --workers 2
    .venv/bin/python bench/dedup/dense.py --bands 20 --rows 5 --threshold 0.72  # few LSH misses

The corpus (`evaluate.make_dense`): dense clusters (an original and `size - 1` copies, each
with its own scattered word replacements, so similarity to the original spreads over
0.55-0.95 and copies are less similar to one another than to the original), chains (each
text an edit of the previous one: neighbours are similar, texts two apart mostly are not),
and unrelated filler texts. Texts of different groups share no word 5-gram, so all similar
pairs lie within a group. `clustered_below_0.6` counts clustered texts that have no member
of their cluster at least 0.6 similar (a false removal, or a survivor kept for unrelated
texts).

The reference is what a brute-force deduplication removes: every pair whose exact word
5-gram Jaccard similarity reaches the threshold (by default `dedup_minhash`'s verification
cut, the LSH curve's midpoint) is linked, and clusters are the connected components.
`dedup_minhash` runs through `run_pipeline`; `all-pairs signatures` verifies every pair of
a group on the same MinHash signatures (what any candidate scheme could reach with them);
datasketch's MinHashLSH runs if it is importable. Reported per method: the share of similar
pairs (exact Jaccard >= threshold) put in one cluster, pair recall and precision against
the reference clusters, the number of texts removed, and the seconds taken.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mixplane.document import Document
from mixplane.process.pipeline import run_pipeline
from mixplane.stages.dedup.clusters import components
from mixplane.stages.dedup.evaluate import make_dense, read_clusters, shingle_set, similar_pairs
from mixplane.stages.dedup.minhash import agreement
from mixplane.stages.dedup.near import MinHashDedup

Group = list[tuple[str, str]]  # (id, text)
FAR = 0.6  # a clustered text with no member of its cluster this similar is a false removal


def signature_pairs(groups: list[Group], stage: MinHashDedup, cutoff: float) -> list:
    """Every pair within a group whose MinHash signatures agree on `cutoff` of the values."""
    similar = []
    for group in groups:
        if len(group) < 2:
            continue
        docs = [Document(id=i, text=t, source="s") for i, t in group]
        _, _, sig = stage.fingerprint(docs)
        left, right = np.triu_indices(len(group), 1)
        keep = agreement(sig[left], sig[right]) >= cutoff
        similar += [
            (group[a][0], group[b][0]) for a, b in zip(left[keep], right[keep], strict=True)
        ]
    return similar


def clusters_of(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Cluster (smallest id) of every text in a pair: connected components."""
    if not pairs:
        return {}
    names = sorted({name for pair in pairs for name in pair})
    index = {name: number for number, name in enumerate(names)}
    edges = np.array([[index[a] for a, _ in pairs], [index[b] for _, b in pairs]])
    nodes, roots = components(edges)
    return {names[n]: names[r] for n, r in zip(nodes.tolist(), roots.tolist(), strict=True)}


def co_clustered(clusters: dict[str, str]) -> set[tuple[str, str]]:
    members: dict[str, list[str]] = {}
    for name, cluster in clusters.items():
        members.setdefault(cluster, []).append(name)
    return {pair for group in members.values() for pair in itertools.combinations(sorted(group), 2)}


def measure(clusters: dict[str, str], reference: set, similar: list, seconds: float,
            sets: dict[str, set]) -> dict:  # fmt: skip
    predicted = co_clustered(clusters)
    found = sum(1 for a, b in similar if a in clusters and clusters[a] == clusters.get(b))
    hits = len(predicted & reference)
    members: dict[str, list[str]] = {}
    for name, cluster in clusters.items():
        members.setdefault(cluster, []).append(name)
    far = 0
    for group in members.values():
        for name in group:
            closest = max(_jaccard(sets[name], sets[other]) for other in group if other != name)
            far += closest < FAR
    return {
        "similar_pairs_found": round(found / len(similar), 4) if similar else 1.0,
        "pair_recall": round(hits / len(reference), 4) if reference else 1.0,
        "pair_precision": round(hits / len(predicted), 4) if predicted else 1.0,
        "removed": len(clusters) - len(set(clusters.values())),
        f"clustered_below_{FAR}": far,
        "seconds": round(seconds, 2),
    }


def _jaccard(left: set, right: set) -> float:
    return len(left & right) / len(left | right) if left or right else 1.0


def run_mixplane(groups: list[Group], folder: Path, workers: int, options: dict) -> dict:
    shards = folder / "raw"
    shards.mkdir(parents=True)
    order = [doc for group in groups for doc in group]
    random.Random(0).shuffle(order)
    for shard in range(4):
        lines = [json.dumps({"id": i, "text": t}) for i, t in order[shard::4]]
        (shards / f"{shard}.jsonl").write_text("\n".join(lines) + "\n")
    config = {"input": str(shards / "*.jsonl"), "output": str(folder / "out"), "workers": workers,
              "task_size_mb": 1.0, "stages": [{"dedup_minhash": options}]}  # fmt: skip
    started = time.perf_counter()
    run_pipeline(config)
    seconds = time.perf_counter() - started
    clusters, _, _ = read_clusters(str(folder / "out"), with_texts=False)
    return {"clusters": clusters, "seconds": seconds}


def run_datasketch(groups: list[Group], bands: int, rows: int) -> dict | None:
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        return None
    started = time.perf_counter()
    lsh = MinHashLSH(num_perm=bands * rows, params=(bands, rows))
    pairs = []
    for group in groups:
        for name, text in group:
            signature = MinHash(num_perm=bands * rows, seed=1)
            signature.update_batch([" ".join(gram).encode() for gram in shingle_set(text)])
            pairs += [(other, name) for other in lsh.query(signature)]
            lsh.insert(name, signature)
    return {"clusters": clusters_of(pairs), "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--size", type=int, default=51)
    parser.add_argument("--chains", type=int, default=20)
    parser.add_argument("--chain-length", type=int, default=8)
    parser.add_argument("--filler", type=int, default=1000)
    parser.add_argument("--bands", type=int, default=14)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--threshold", type=float, default=None, help="verification cut")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    options = {"bands": args.bands, "rows": args.rows}
    if args.threshold is not None:
        options["verify_threshold"] = args.threshold
    stage = MinHashDedup(**options)
    cutoff = stage.verify_cutoff()
    groups = make_dense(
        args.clusters, args.size, args.chains, args.chain_length, args.filler, args.seed
    )
    sets = {name: shingle_set(text) for group in groups for name, text in group}
    started = time.perf_counter()
    similar = similar_pairs(groups, cutoff)
    truth = clusters_of(similar)
    seconds = time.perf_counter() - started
    reference = co_clustered(truth)
    results = {"brute force (exact Jaccard)": measure(truth, reference, similar, seconds, sets)}
    started = time.perf_counter()
    pairs = signature_pairs(groups, stage, cutoff)
    results["all-pairs signatures"] = measure(
        clusters_of(pairs), reference, similar, time.perf_counter() - started, sets
    )
    with tempfile.TemporaryDirectory() as folder:
        run = run_mixplane(groups, Path(folder), args.workers, options)
    results["dedup_minhash"] = measure(run["clusters"], reference, similar, run["seconds"], sets)
    peer = run_datasketch(groups, stage.bands, stage.rows)
    if peer is not None:
        results["datasketch MinHashLSH"] = measure(
            peer["clusters"], reference, similar, peer["seconds"], sets
        )
    documents = sum(len(group) for group in groups)
    report = {"documents": documents, "bands": stage.bands, "rows": stage.rows,
              "threshold": round(cutoff, 4), "similar_pairs": len(similar),
              "reference_pairs": len(reference), "results": results}  # fmt: skip
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
