"""fastText scoring, documents per second per core: our `classify` stage against datatrove's
FastTextClassifierFilter, on the same model and the same documents.

    .venv/bin/python bench/classify/fasttext_speed.py [--docs 6000] [--rounds 5]

1. Documents: bench/filters/corpus.py (Debian's HTML documentation cut into sections, and
   synthetic web-like text). Each is given as one lowercased line with single spaces (what
   `classify`'s preprocessing makes of it), so both tools feed fastText the same words:
   datatrove (with `newline_replacement: " "`) would otherwise join the words around a
   newline and keep capitals, and the scores could not be compared. Our stage still does
   its preprocessing work on every document.
2. Model: trained with `mixplane classifier train` defaults (word bigrams, dim 100,
   2,000,000 buckets: an 800 MB model, as DCLM-sized models are) to tell the HTML
   documentation (hq) from the rest (lq).
3. Rounds: each round runs ours and datatrove's in a fresh process each, in alternating
   order; each loads the model, warms up on 50 documents, then scores all of them, timed in
   CPU seconds of its process ("per core"). Ours: `classify` in annotate mode,
   `apply_batch` on batches of 512 documents (built before timing, as datatrove's are).
   datatrove's: its filter's `run` over the documents, keeping all of them.
4. Agreement: the largest absolute difference between the two tools' scores of label `hq`.

The table gives the median over rounds of each tool's rate and of the per-round ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.peer_venv import ensure_venv  # noqa: E402

DATA = ROOT / "bench" / "data" / "classify"
PEER_PACKAGES = ["datatrove", "spacy", "regex", "ftfy", "fasttext-numpy2-wheel", "fasteners"]
BATCH = 512


def prepare(docs_count: int, seed: int) -> tuple[Path, Path]:
    """The documents file and the model folder (trained once per corpus size and seed)."""
    from bench.filters.corpus import build_corpus
    from mixplane.classify import train_fasttext

    folder = DATA / f"docs-{docs_count}-{seed}"
    docs_path = folder / "docs.jsonl"
    model = folder / "model"
    if docs_path.exists() and (model / "classifier.json").exists():
        return docs_path, model
    folder.mkdir(parents=True, exist_ok=True)
    docs = build_corpus(docs_count, seed=seed)
    rows = [{"id": d["id"], "text": " ".join(d["text"].lower().split())} for d in docs]
    rows = [row for row in rows if row["text"]]
    docs_path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for name, wanted in (("hq", True), ("lq", False)):
        chosen = [r for r, d in zip(rows, docs, strict=False) if (d["origin"] == "html") == wanted]
        (folder / name).mkdir(exist_ok=True)
        (folder / name / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chosen))
    train_fasttext(
        {"output": str(model), "positive": str(folder / "hq"), "negative": str(folder / "lq")}
    )
    return docs_path, model


def child_ours(model: str, source: str, target: str) -> None:
    """One round of ours, in this (fresh) process."""
    from mixplane.document import Document
    from mixplane.stages.build import build_stage

    rows = [json.loads(line) for line in Path(source).read_text().splitlines()]
    stage = build_stage("classify", {"model": model})
    stage.setup()
    stage.apply_batch([Document(r["id"], r["text"], "bench") for r in rows[:50]])
    docs = [Document(r["id"], r["text"], "bench") for r in rows]
    started = time.process_time()
    for start in range(0, len(docs), BATCH):
        stage.apply_batch(docs[start : start + BATCH])
    seconds = time.process_time() - started
    scores = {doc.id: doc.metadata["quality_score"] for doc in docs}
    Path(target).write_text(
        json.dumps({"seconds": seconds, "documents": len(docs), "scores": scores})
    )


def run_ours(model: Path, docs_path: Path, out: Path) -> dict:
    command = [sys.executable, __file__, "--child", str(model), str(docs_path), str(out)]
    subprocess.run(command, check=True)
    return json.loads(out.read_text())


def run_peer(python: str, model: Path, docs_path: Path, out: Path) -> dict:
    runner = Path(__file__).with_name("datatrove_fasttext.py")
    subprocess.run(
        [python, str(runner), str(model / "model.bin"), str(docs_path), str(out)], check=True
    )
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_ours(*args.child)
        return

    docs_path, model = prepare(args.docs, args.seed)
    python = ensure_venv("datatrove", PEER_PACKAGES)
    ours_rates, peer_rates, ratios = [], [], []
    largest = 0.0
    documents = 0
    for number in range(args.rounds):
        runs = {}
        order = ("ours", "peer") if number % 2 == 0 else ("peer", "ours")
        for who in order:
            out = DATA / f"round-{who}.json"
            if who == "ours":
                runs[who] = run_ours(model, docs_path, out)
            else:
                runs[who] = run_peer(python, model, docs_path, out)
        ours, peer = runs["ours"], runs["peer"]
        documents = ours["documents"]
        ours_rate = documents / ours["seconds"]
        peer_rate = peer["documents"] / peer["seconds"]
        ours_rates.append(ours_rate)
        peer_rates.append(peer_rate)
        ratios.append(ours_rate / peer_rate)
        common = ours["scores"].keys() & peer["scores"].keys()
        largest = max([largest, *(abs(ours["scores"][k] - peer["scores"][k]) for k in common)])
        print(
            f"round {number + 1}: ours {ours_rate:,.0f} docs/s, datatrove {peer_rate:,.0f} "
            f"docs/s, {ours_rate / peer_rate:.2f}x; {len(common)} documents scored by both",
            file=sys.stderr,
        )
    description = json.loads((model / "classifier.json").read_text())
    chars = sum(len(json.loads(line)["text"]) for line in docs_path.read_text().splitlines())
    print(
        f"\n{documents} documents ({chars / documents:,.0f} characters on average), model "
        f"dim {description['training']['dim']}, {description['training']['bucket']:,} buckets, "
        f"word n-grams {description['training']['word_ngrams']}; {args.rounds} paired rounds, "
        "CPU seconds of one process each\n"
    )
    print("| ours docs/s/core | datatrove docs/s/core | speed-up | max abs score difference |")
    print("| --- | --- | --- | --- |")
    print(
        f"| {statistics.median(ours_rates):,.0f} | {statistics.median(peer_rates):,.0f} | "
        f"{statistics.median(ratios):.2f}x | {largest:.2e} |"
    )


if __name__ == "__main__":
    main()
