"""MinHash near-duplicate removal end to end: mixplane vs datatrove vs datasketch.

    .venv/bin/python bench/dedup/run.py --docs 20000 --workers 2
    .venv/bin/python bench/dedup/run.py --docs 1000000 --workers 2      # the full benchmark

All tools see the same JSON Lines shards and the same parameters (word 5-grams, 14 bands x 8
rows unless --bands/--rows say otherwise). The corpus is families of near-duplicates whose
pairwise Jaccard similarity is computed exactly (`mixplane.stages.dedup.evaluate`); each
tool's clusters are scored against it: pair precision and recall at 0.8, F1 with positives
above 0.85 and negatives below 0.6, and the share of removed documents less than 0.6 similar
to their survivor. Time is wall-clock from reading the shards to the filtered output
(signatures, buckets, clusters, filter) for mixplane and datatrove, and to the clusters for
datasketch (an index in memory, no filtered output); reading each tool's clusters back for
scoring is outside every clock. Memory is the peak RSS of the whole process tree. Rounds
are interleaved (each runs every tool once, in an order that rotates) and ratios are paired
per round; docs/s per core divides by the processes a tool uses (the workers, or one).
datatrove and datasketch run in their own virtual environment (created on first use).
Results go to bench/results/dedup-DOCS.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from measure import measure, paired_ratios, rotated  # noqa: E402
from peer_venv import ensure_venv  # noqa: E402

from mixplane.stages.dedup.evaluate import iter_families, read_clusters, score  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MIXPLANE = """
import sys
from mixplane import run_pipeline
run_pipeline({"input": sys.argv[1] + "/*.jsonl", "output": sys.argv[2],
              "workers": int(sys.argv[3]),
              "stages": [{"dedup_minhash": {"bands": int(sys.argv[4]), "rows": int(sys.argv[5])}}]})
"""
# datatrove's MinHash needs xxhash<4 (its "processing" extra pins it), regex, tokenizers,
# orjson and spacy (its word tokenizer).
PEER_PACKAGES = ["datatrove", "datasketch", "xxhash<4", "regex", "tokenizers", "orjson", "spacy"]
FAMILY_SIZE = 2.25  # documents per family on average


def make_corpus(folder: Path, docs: int, shards: int, seed: int) -> dict[tuple[str, str], float]:
    """Write families of near-duplicates into `shards` JSONL files (members of a family go
    to different shards) and return the exact similarity of every pair in a family."""
    truth_file = folder / "truth.jsonl"
    shards_folder = folder / "shards"
    if truth_file.exists():
        lines = truth_file.read_text().splitlines()
        return {(a, b): s for a, b, s in map(json.loads, lines)}
    shards_folder.mkdir(parents=True, exist_ok=True)
    handles = [open(shards_folder / f"shard-{i:03d}.jsonl", "wb") for i in range(shards)]  # noqa: SIM115
    truth: dict[tuple[str, str], float] = {}
    try:
        families = max(1, round(docs / FAMILY_SIZE))
        for number, (members, pairs) in enumerate(iter_families(families, seed)):
            for position, doc in enumerate(members):
                record = {"id": doc["id"], "text": doc["text"]}
                handles[(number + position) % shards].write(orjson.dumps(record) + b"\n")
            truth.update(pairs)
    finally:
        for handle in handles:
            handle.close()
    lines = [json.dumps([a, b, round(s, 6)]) for (a, b), s in truth.items()]
    truth_file.write_text("\n".join(lines) + "\n")
    return truth


def count_docs(folder: Path) -> int:
    return sum(sum(1 for _ in open(path, "rb")) for path in folder.glob("*.jsonl"))


def clusters_from_lines(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Clusters and removed-to-survivor from a peer runner's `clusters.jsonl`."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    kept = {row["cluster"]: row["id"] for row in rows if row["kept"]}
    clusters = {row["id"]: str(row["cluster"]) for row in rows}
    removed = {
        row["id"]: kept[row["cluster"]]
        for row in rows
        if not row["kept"] and row["cluster"] in kept
    }
    return clusters, removed


def run_tool(tool: str, corpus: Path, work: Path, args, peer_python: str | None) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if tool == "mixplane":
        command = [sys.executable, "-c", MIXPLANE, str(corpus), str(work / "out"),
                   str(args.workers), str(args.bands), str(args.rows)]  # fmt: skip
    elif tool == "datatrove":
        command = [peer_python, str(HERE / "datatrove_runner.py"), str(corpus), str(work),
                   str(args.workers), str(args.bands), str(args.rows)]  # fmt: skip
    else:
        command = [peer_python, str(HERE / "datasketch_runner.py"), str(corpus), str(work),
                   str(args.bands), str(args.rows)]  # fmt: skip
    measured = measure(command, cwd=str(ROOT))
    if measured.returncode != 0:
        raise SystemExit(f"{tool} failed:\n{measured.stderr[-3000:]}")
    if tool == "datatrove":  # its clusters, for scoring: not part of its work
        exported = measure([peer_python, str(HERE / "datatrove_runner.py"), "export", str(work)])
        if exported.returncode != 0:
            raise SystemExit(f"datatrove export failed:\n{exported.stderr[-3000:]}")
    if tool == "mixplane":
        clusters, removed, _ = read_clusters(str(work / "out"), with_texts=False)
    else:
        clusters, removed = clusters_from_lines(work / "clusters.jsonl")
    return {"seconds": round(measured.seconds, 2), "peak_rss_mb": round(measured.peak_rss_mb)} | {
        "clusters": len(set(clusters.values())),
        "removed": len(removed),
        "clustered": (clusters, removed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--bands", type=int, default=14)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tools", default="mixplane,datatrove,datasketch")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tools = args.tools.split(",")
    data = ROOT / "bench" / "data" / "dedup"
    corpus = data / f"families-{args.docs}-{args.seed}-{args.shards}"
    truth = make_corpus(corpus, args.docs, args.shards, args.seed)
    corpus = corpus / "shards"
    docs = count_docs(corpus)
    peer = ensure_venv("datatrove", PEER_PACKAGES) if set(tools) - {"mixplane"} else None
    processes = {"mixplane": args.workers, "datatrove": args.workers, "datasketch": 1}
    runs: dict[str, list[dict]] = {tool: [] for tool in tools}
    rounds: list[dict[str, float]] = []
    for repeat in range(args.repeats):
        speeds = {}
        for tool in rotated(tools, repeat):
            result = run_tool(tool, corpus, data / "work" / tool, args, peer)
            clusters, removed = result.pop("clustered")
            result["docs_per_second"] = round(docs / result["seconds"])
            result["docs_per_second_per_core"] = round(docs / result["seconds"] / processes[tool])
            if repeat == 0:  # the clusters are the same every round
                result |= {k: round(v, 4) for k, v in score(truth, clusters, removed).items()}
            runs[tool].append(result)
            speeds[tool] = result["docs_per_second"]
            print(repeat, tool, json.dumps(result), flush=True)
        rounds.append(speeds)
    results = {}
    for tool, measured in runs.items():
        median = sorted(measured, key=lambda r: r["seconds"])[len(measured) // 2]
        results[tool] = measured[0] | {
            key: median[key]
            for key in ("seconds", "peak_rss_mb", "docs_per_second", "docs_per_second_per_core")
        }
        results[tool]["seconds_by_round"] = [r["seconds"] for r in measured]
    ratios = {
        f"mixplane/{peer_tool}": paired_ratios(rounds, "mixplane", peer_tool)
        for peer_tool in tools
        if peer_tool != "mixplane" and "mixplane" in tools
    }
    report = {"docs": docs, "pairs": len(truth), "workers": args.workers, "bands": args.bands,
              "rows": args.rows, "repeats": args.repeats, "results": results,
              "throughput_ratios": ratios}  # fmt: skip
    out = ROOT / "bench" / "results" / f"dedup-{args.docs}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
