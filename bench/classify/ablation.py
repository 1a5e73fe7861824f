"""Does the learned quality classifier help the model? A small ablation, in one command:

    .venv/bin/python bench/classify/ablation.py [--steps 800] [--seeds 3] [--jobs 2]

1. A corpus with known quality labels (bench/classify/ablation_corpus.py): real text of this
   machine (the Python documentation, manual pages, the standard library's docstrings) and
   `mixplane.synth`'s clean English documents as good; its spam and low-quality kinds as
   bad. Each good origin is capped to the same number of characters. Whole pages / files go
   to one of three splits: classifier (25%), pool (60%), held-out (15%).
2. A fastText classifier (`train_fasttext`, DCLM's recipe) trained on the classifier split;
   its precision, recall and AUC against the labels on the pool, which it never saw.
3. For each `--keep-top` fraction, two selections of the pool with the same number of
   tokens: (b) `classify` with `keep_top` (the classifier's top documents), and (a) random
   documents filled to exactly (b)'s token count, one random draw per seed
   (bench/classify/ablation_pipeline.py). All are tokenized (a BPE trained on the classifier
   split) and registered in one catalog.
4. Per fraction and seed, the same tiny causal LM (bench/tiny_lm.py; the same initial
   weights, steps, batch size and learning-rate schedule) trained on each selection through
   `MixtureDataset` and `torch_loader`, one thread a run; the held-out loss on each good
   origin's held-out documents (and on held-out bad ones) during and after training.

Results go to bench/results/quality-ablation.json, plots to docs/images/quality-ablation-*.png,
the tables to stdout. The corpus is built once in bench/data/ablation/ and reused.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.classify.ablation_corpus import build  # noqa: E402
from bench.classify.ablation_pipeline import cap_good, prepare  # noqa: E402
from bench.classify.ablation_plots import plot  # noqa: E402
from bench.classify.ablation_report import (  # noqa: E402
    LOW_QUALITY,
    classifier_report,
    composition_table,
    loss_table,
    summarize,
)
from bench.classify.ablation_train import heldout_sequences, train_run  # noqa: E402

DATA = ROOT / "bench" / "data" / "ablation"
RESULTS = ROOT / "bench" / "results" / "quality-ablation.json"
IMAGES = ROOT / "docs" / "images"
ARMS = ("random", "top")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--steps", type=int, default=800, help="optimizer steps of every run")
    add("--seeds", type=int, default=3, help="seeds: initial weights, data order, random draw")
    add("--jobs", type=int, default=1, help="runs trained at once (one thread each)")
    add("--keep-top", type=float, nargs="+", default=[0.65, 0.3], help="keep_top fractions")
    add("--batch", type=int, default=16)
    add("--seq-len", type=int, default=128)
    add("--vocab", type=int, default=2048, help="BPE vocabulary size")
    add("--dim", type=int, default=128)
    add("--layers", type=int, default=2)
    add("--heads", type=int, default=4)
    add("--lr", type=float, default=2e-3)
    add("--eval-every", type=int, default=100)
    add("--curve-sequences", type=int, default=24, help="held-out sequences per set, curve")
    add("--synth-docs", type=int, default=30_000, help="size of the mixplane.synth corpus")
    add("--man-pages", type=int, default=300, help="manual pages rendered")
    add("--good-chars", type=int, default=1_100_000, help="characters per good origin")
    add("--out", type=Path, default=RESULTS)
    add("--images", type=Path, default=IMAGES)
    add("--work", type=Path, default=DATA)
    add("--replot", action="store_true", help="only the plots and tables of --out's results")
    return parser.parse_args()


def corpus_summary(docs: list) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for doc in docs:
        entry = out.setdefault(doc.origin, {"label": doc.label, "documents": 0, "characters": 0})
        entry["documents"] += 1
        entry["characters"] += len(doc.text)
    return dict(sorted(out.items()))


def main() -> None:
    args = arguments()
    if args.replot:
        report(json.loads(args.out.read_text()), args.images)
        return
    started = time.perf_counter()
    docs = cap_good(build(args.work, args.synth_docs, args.man_pages, seed=0), args.good_chars, 0)
    settings = {
        "seeds": args.seeds,
        "split_seed": 0,
        "classifier_seed": 0,
        "keep_top": args.keep_top,
        "vocab": args.vocab,
    }
    prepared = prepare(args.work / "run", docs, settings)
    print(f"data ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    train_settings = {
        "vocab": prepared.vocab,
        "seq_len": args.seq_len,
        "dim": args.dim,
        "layers": args.layers,
        "heads": args.heads,
        "steps": args.steps,
        "lr": args.lr,
        "batch": args.batch,
        "eval_every": args.eval_every,
        "curve_sequences": args.curve_sequences,
    }
    origins = prepared.heldout_origins
    sets = {name: f"origin = '{name}' AND label = 'good'" for name in origins}
    sets[LOW_QUALITY] = "label = 'bad'"
    heldout = heldout_sequences(prepared.catalog, "heldout", sets, args.seq_len)
    plans = {
        (top, arm, seed): selections["top"] if arm == "top" else selections["random"][seed]
        for top, selections in prepared.selections.items()
        for seed in range(args.seeds)
        for arm in ARMS
    }
    runs: dict[str, dict[str, dict[int, dict]]] = {
        top: {arm: {} for arm in ARMS} for top in prepared.selections
    }
    with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
        futures = {
            key: pool.submit(
                train_run, prepared.catalog, selection, heldout, key[2], train_settings
            )
            for key, selection in plans.items()
        }
        for (top, arm, seed), future in futures.items():
            run = future.result()
            runs[top][arm][seed] = run
            final = {name: round(value["loss"], 3) for name, value in run["final"].items()}
            print(f"{top} {arm:6s} seed {seed}: {final} ({run['seconds']:.0f} s)", file=sys.stderr)

    merges = prepared.classifier["keep_top_merges"]
    experiments = {
        top: {
            "keep_top": merges[top]["keep_top"],
            "selections": prepared.selections[top],
            "summary": summarize(runs[top], origins),
            "runs": runs[top],
        }
        for top in prepared.selections
    }
    results = {
        "command": "bench/classify/ablation.py " + " ".join(sys.argv[1:]),
        "settings": settings | train_settings | {"good_chars": args.good_chars},
        "corpus": corpus_summary(docs),
        "splits": prepared.classifier["splits"],
        "classifier": {
            "held_out_of_its_training": prepared.classifier["held_out_of_training"],
            "per_class": prepared.classifier["per_class"],
            "pool": classifier_report(prepared.scores, merges),
        },
        "heldout_origins": origins,
        "heldout_tokens": {name: int(labels.numel()) for name, (_, labels) in heldout.items()},
        "experiments": experiments,
        "seconds": time.perf_counter() - started,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    report(results, args.images)
    print(f"written {args.out}", file=sys.stderr)


def report(results: dict, images: Path) -> None:
    """The plots and the tables of a run's results."""
    for path in plot(results, images):
        print(f"written {path}", file=sys.stderr)
    pool = results["classifier"]["pool"]
    print(f"classifier on the pool: {json.dumps(pool['at_0.5'])}")
    print(f"top selections: {json.dumps(pool['top_selections'])}")
    print(composition_table(results))
    for experiment in results["experiments"].values():
        tokens = experiment["selections"]["top"]["tokens"]
        print(f"\nkeep_top {experiment['keep_top']} ({tokens:,} tokens a selection)")
        print(loss_table(experiment["summary"], results["heldout_origins"]))


if __name__ == "__main__":
    main()
