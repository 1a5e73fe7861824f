"""MinHash near-duplicate removal end to end: mixplane vs datatrove vs datasketch.

    .venv/bin/python bench/dedup/run.py --docs 10000 --workers 2 --repeats 5
    .venv/bin/python bench/dedup/run.py --docs 100000 --workers 2 --repeats 3
    .venv/bin/python bench/dedup/run.py --docs 1000000 --workers 2 --tools mixplane --repeats 3

All tools see the same JSON Lines shards and the same parameters (word 5-grams, 14 bands x 8
rows unless --bands/--rows say otherwise). The corpus is families of near-duplicates whose
pairwise Jaccard similarity is computed exactly (`mixplane.stages.dedup.evaluate`); each
tool's clusters are scored against it: pair precision and recall at 0.8, F1 with positives
above 0.85 and negatives below 0.6, and the share of removed documents less than 0.6 similar
to their survivor. Beside the timings, each tool's output is compared with mixplane's: the
removed documents and the pairs clustered together, shared over either. `mixplane-lsh` (a
tool of its own in --tools) is mixplane with `verify_threshold: 0`, joining LSH candidates
unverified as the peers do, the same work as theirs. datasketch runs on its documented fast
path (see datasketch_runner.py).

The clock is the same for every tool: the wall time of its whole process tree, from start-up
and reading the shards to the deduplicated output on disk (kept and removed documents with
their cluster ids), every step in between included (signatures, buckets, clusters, any
post-pass, the filter). Reading each tool's output back to score it is outside every clock.
CPU seconds are those of the whole process tree; memory is its peak RSS (sampled every 50
ms). Before the first round the shards are read once (page cache) and each interpreter
imports its libraries once, untimed. Rounds are interleaved: each runs every tool once, in an
order that rotates from round to round, and ratios are paired per round (median, range and a
95% t-interval on the logs). Worker counts differ (datasketch has no parallel mode), so
besides docs/s the report gives docs/s per core (divided by the cores a tool can use: its
workers up to the machine's cores, or one) and docs per CPU second (the measured one).
datatrove and datasketch run in their own virtual environment (created on first use).
Results go to bench/results/dedup-DOCS.json, rewritten after every run (a run stopped early
keeps the runs it finished; ratios count only the rounds every tool finished).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from measure import measure, paired_ratios, rotated, spread  # noqa: E402
from peer_venv import ensure_venv  # noqa: E402

from mixplane.stages.dedup.evaluate import iter_families, read_clusters, score  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MIXPLANE = """
import sys
from mixplane import run_pipeline
stage = {"bands": int(sys.argv[4]), "rows": int(sys.argv[5])}
if sys.argv[6:]:
    stage["verify_threshold"] = float(sys.argv[6])
run_pipeline({"input": sys.argv[1] + "/*.jsonl", "output": sys.argv[2],
              "workers": int(sys.argv[3]), "stages": [{"dedup_minhash": stage}]})
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


def clusters_from_output(work: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Clusters and removed-to-survivor from a peer's output: WORK/kept/ and WORK/removed/
    (gzipped JSON Lines with the cluster id in `metadata.minhash_cluster_id`, -1 if none)."""
    members: dict[str, list[tuple[str, bool]]] = {}
    for kind in ("kept", "removed"):
        for path in sorted((work / kind).glob("*.jsonl.gz")):
            with gzip.open(path, "rb") as handle:
                for line in handle:
                    doc = orjson.loads(line)
                    cluster = doc["metadata"].get("minhash_cluster_id", -1)
                    if cluster != -1:
                        members.setdefault(str(cluster), []).append((doc["id"], kind == "kept"))
    clusters, removed = {}, {}
    for cluster, group in members.items():
        survivors = [name for name, kept in group if kept]
        for name, kept in group:
            clusters[name] = cluster
            if not kept and survivors:
                removed[name] = survivors[0]
    return clusters, removed


def command_for(tool: str, corpus: Path, work: Path, args, peer_python: str | None) -> list:
    if tool.startswith("mixplane"):
        # mixplane-lsh: candidates joined without verification, as the peers do
        verify = ["0"] if tool == "mixplane-lsh" else []
        return [sys.executable, "-c", MIXPLANE, str(corpus), str(work / "out"),
                str(args.workers), str(args.bands), str(args.rows), *verify]  # fmt: skip
    if tool == "datatrove":
        return [peer_python, str(HERE / "datatrove_runner.py"), str(corpus), str(work),
                str(args.workers), str(args.bands), str(args.rows)]  # fmt: skip
    return [peer_python, str(HERE / "datasketch_runner.py"), str(corpus), str(work),
            str(args.bands), str(args.rows)]  # fmt: skip


def run_tool(tool: str, corpus: Path, work: Path, args, peer_python: str | None) -> dict:
    """One timed run; then, outside the clock, the clusters read back from its output."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    command = command_for(tool, corpus, work, args, peer_python)
    measured = measure(command, cwd=str(ROOT), tree_cpu=True)
    if measured.returncode != 0:
        raise SystemExit(f"{tool} failed:\n{measured.stderr[-3000:]}")
    if tool.startswith("mixplane"):
        clusters, removed, _ = read_clusters(str(work / "out"), with_texts=False)
    else:
        clusters, removed = clusters_from_output(work)
    return {
        "seconds": measured.seconds,
        "cpu_seconds": measured.cpu_seconds,
        "peak_rss_mb": measured.peak_rss_mb,
        "clusters": len(set(clusters.values())),
        "removed": len(removed),
        "clustered": (clusters, removed),
    }


def co_clustered(clusters: dict[str, str]) -> set[tuple[str, str]]:
    """Every pair of documents that a clustering puts together."""
    members: dict[str, list[str]] = {}
    for name, cluster in clusters.items():
        members.setdefault(cluster, []).append(name)
    return {pair for group in members.values() for pair in itertools.combinations(sorted(group), 2)}


def agreement(mine: tuple[dict, dict], theirs: tuple[dict, dict], names: tuple[str, str]) -> dict:
    """How far a tool's output agrees with mixplane's: the removed documents (the survivor of
    a cluster is its smallest id, except in datatrove) and the pairs clustered together, as
    shared / either, with the counts found on one side only (`names` name the sides)."""
    figures = {}
    for name, left, right in (
        ("removed", set(mine[1]), set(theirs[1])),
        ("pairs", co_clustered(mine[0]), co_clustered(theirs[0])),
    ):
        both, either = len(left & right), len(left | right)
        figures[name] = {
            "jaccard": round(both / either, 4) if either else 1.0,
            "both": both,
            f"only {names[0]}": len(left - right),
            f"only {names[1]}": len(right - left),
        }
    return figures


def warm_up(corpus: Path, tools: list[str], peer_python: str | None) -> None:
    """Untimed: the shards into the page cache, each interpreter's imports compiled/cached."""
    for path in sorted(corpus.glob("*.jsonl")):
        path.read_bytes()
    imports = {"mixplane": (sys.executable, "import mixplane.process.pipeline"),
               "mixplane-lsh": (sys.executable, "import mixplane.process.pipeline"),
               "datatrove": (peer_python, "import datatrove.pipeline.dedup.minhash, spacy"),
               "datasketch": (peer_python, "import datasketch")}  # fmt: skip
    for tool in tools:
        python, code = imports[tool]
        subprocess.run([python, "-c", code], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--bands", type=int, default=14)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tools", default="mixplane,datatrove,datasketch")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    tools = args.tools.split(",")
    data = ROOT / "bench" / "data" / "dedup"
    corpus = data / f"families-{args.docs}-{args.seed}-{args.shards}"
    truth = make_corpus(corpus, args.docs, args.shards, args.seed)
    corpus = corpus / "shards"
    docs = count_docs(corpus)
    peer = ensure_venv("datatrove", PEER_PACKAGES) if set(tools) - {"mixplane"} else None
    warm_up(corpus, tools, peer)
    cores = min(args.workers, os.cpu_count() or 1)
    processes = {"mixplane": cores, "mixplane-lsh": cores, "datatrove": cores, "datasketch": 1}
    runs: dict[str, list[dict]] = {tool: [] for tool in tools}
    scores: dict[str, dict] = {}
    outputs: dict[str, tuple[dict, dict]] = {}
    out = ROOT / "bench" / "results" / f"dedup-{args.docs}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for repeat in range(args.repeats):
        for tool in rotated(tools, repeat):
            result = run_tool(tool, corpus, data / f"work-{args.docs}" / tool, args, peer)
            clusters, removed = result.pop("clustered")
            if repeat == 0:  # every run of a tool gives the same clusters (checked below)
                scores[tool] = {k: round(v, 4) for k, v in score(truth, clusters, removed).items()}
                outputs[tool] = (clusters, removed)
            elif (result["clusters"], result["removed"]) != (runs[tool][0]["clusters"],
                                                             runs[tool][0]["removed"]):  # fmt: skip
                raise SystemExit(f"{tool} gave different clusters in round {repeat}")
            result["docs_per_second"] = docs / result["seconds"]
            result["docs_per_second_per_core"] = docs / result["seconds"] / processes[tool]
            result["docs_per_cpu_second"] = docs / result["cpu_seconds"]
            runs[tool].append(result)
            print(repeat, tool, json.dumps({k: round(v, 3) for k, v in result.items()}),
                  file=sys.stderr, flush=True)  # fmt: skip
            # Written after every run, so that a run stopped early keeps what it measured.
            report = report_of(runs, scores, outputs, processes, args, docs, len(truth))
            out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


def report_of(runs, scores, outputs, processes, args, docs: int, pairs: int) -> dict:
    """The results so far: each tool over its runs, ratios over the rounds every tool ended."""
    figures = ("seconds", "cpu_seconds", "peak_rss_mb", "docs_per_second",
               "docs_per_second_per_core", "docs_per_cpu_second")  # fmt: skip
    measured_tools = [tool for tool, measured in runs.items() if measured]
    results = {}
    for tool in measured_tools:
        measured = runs[tool]
        results[tool] = {"cores": processes[tool], "clusters": measured[0]["clusters"],
                         "removed": measured[0]["removed"], "rounds": len(measured)}  # fmt: skip
        for figure in figures:
            results[tool][figure] = spread([r[figure] for r in measured], 2)
        results[tool]["by_round"] = {
            figure: [round(r[figure], 2) for r in measured] for figure in figures
        }
        results[tool]["quality"] = scores[tool]
        results[tool]["agreement"] = {
            f"with {mine}": agreement(outputs[mine], outputs[tool], (mine, tool))
            for mine in ("mixplane", "mixplane-lsh")
            if mine in outputs and mine != tool
        }
    tools = list(runs)
    complete = min(len(measured) for measured in runs.values())
    others = [tool for tool in tools if tool != "mixplane" and "mixplane" in tools]
    ratios: dict[str, dict] = {}
    for figure in ("docs_per_second", "docs_per_second_per_core", "docs_per_cpu_second",
                   "peak_rss_mb"):  # fmt: skip
        rounds = [{tool: runs[tool][i][figure] for tool in tools} for i in range(complete)]
        ratios[figure] = {
            f"mixplane / {other}": paired_ratios(rounds, "mixplane", other) for other in others
        }
    return {"docs": docs, "pairs": pairs, "workers": args.workers, "bands": args.bands,
            "rows": args.rows, "repeats": args.repeats, "complete_rounds": complete,
            "machine_cores": os.cpu_count(),
            "order": [rotated(tools, i) for i in range(args.repeats)],
            "results": results, "paired_ratios": ratios}  # fmt: skip


if __name__ == "__main__":
    main()
