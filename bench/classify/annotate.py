"""`mixplane annotate` at scale: time per million documents, and the bytes it writes against
the bytes of the version's token files it shares.

    .venv/bin/python bench/classify/annotate.py --documents 10_000_000 --shards 100
    .venv/bin/python bench/classify/annotate.py --documents 200_000 --shards 4   # quick check

1. A pool of 20,000 distinct short documents (synthetic encyclopedia prose of one to three
   sentences, and spam lines), a byte-level BPE of 8,192 entries trained on them, and a
   fastText quality model (`mixplane classifier train` defaults with `--bucket 200000`: an
   80 MB model) telling the prose from the spam.
2. The dataset, written directly at scale (tokenizing 1e7 documents would take longer than
   everything measured): `--shards` processed parts (`part-NNNNN.parquet`: id, text, source),
   each document a draw from the pool, and the token folder `mixplane tokenize --eos` would
   make of them, written by mixplane's own shard writer (one shard per part: `.bin`, `.idx`,
   `.sums`, `.meta.parquet`) with a tokenize manifest recording the parts as its inputs. The
   folder is registered as `bench@1`. Kept under bench/data/annotate for later runs.
3. Measured, each in a fresh process (CPU seconds of its whole process tree, workers
   included; peak memory of the tree): `mixplane annotate bench@1 --as quality` with the
   text decoded from the tokens (`--text tokens`), then with the text read from the parts
   (`--text parts`), both with `--workers 2`; the two runs' column files must be
   byte-identical. Then a `quality >= 0.8` query on the new version against a query on a
   property of the shards' own metadata, and the count checked against the column files.

Results go to bench/results/annotate-N.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.measure import measure  # noqa: E402

DATA = ROOT / "bench" / "data" / "annotate"
POOL = 20_000
VOCAB = 8192
SPAM = ("cheap", "best", "buy", "discount", "free", "deal", "click", "offer", "now", "casino")


def pool_texts(seed: int = 0) -> tuple[list[str], list[bool]]:
    """Distinct short documents and whether each is prose."""
    from mixplane.synth.languages import LANGUAGES
    from mixplane.synth.prose import encyclopedia_article

    rng = random.Random(seed)
    texts, prose = [], []
    for number in range(POOL):
        if number % 2 == 0:
            text = encyclopedia_article(LANGUAGES["en"], rng, sentences=rng.randint(1, 3))[1]
            texts.append(" ".join(text.split()[:60]))
            prose.append(True)
        else:
            words = [rng.choice(SPAM) for _ in range(rng.randint(8, 40))]
            texts.append(" ".join(words) + f" {number}")
            prose.append(False)
    return texts, prose


def prepare(folder: Path) -> tuple[list[str], Path, Path]:
    """The pool, its tokenizer and the quality model (made once)."""
    from mixplane.classify import train_fasttext
    from mixplane.tokenize.train import train_tokenizer

    texts, prose = pool_texts()
    tokenizer, model = folder / "tokenizer.json", folder / "model"
    if tokenizer.exists() and (model / "classifier.json").exists():
        return texts, tokenizer, model
    shutil.rmtree(folder, ignore_errors=True)
    for name, wanted in (("hq", True), ("lq", False)):
        rows = [
            {"id": f"p{i}", "text": t}
            for i, (t, p) in enumerate(zip(texts, prose, strict=True))
            if p == wanted
        ]
        (folder / "pool" / name).mkdir(parents=True, exist_ok=True)
        (folder / "pool" / name / "docs.jsonl").write_text(
            "".join(json.dumps(row) + "\n" for row in rows)
        )
    train_tokenizer(str(folder / "pool"), VOCAB, str(tokenizer))
    pool = folder / "pool"
    train_fasttext(
        {"output": str(model), "positive": str(pool / "hq"), "negative": str(pool / "lq")},
        bucket=200_000,
    )
    return texts, tokenizer, model


def generate(folder: Path, texts: list[str], tokenizer_path: Path, documents: int, shards: int):
    """The parts, the token folder and its manifest (skipped when already of this size)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mixplane.manifest import file_fingerprint, write_manifest
    from mixplane.store.format import FILE_SUFFIXES, FORMAT_NAME, FORMAT_VERSION, token_dtype
    from mixplane.store.writer import TaskShardWriter
    from mixplane.tokenize.config import TokenizeConfig
    from mixplane.tokenize.load import load_tokenizer

    stamp = folder / "_bench.json"
    wanted = {"documents": documents, "shards": shards, "pool": POOL, "vocab": VOCAB}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return 0.0
    started = time.perf_counter()
    for name in ("parts", "tokens"):
        shutil.rmtree(folder / name, ignore_errors=True)
        (folder / name).mkdir(parents=True)
    tokenizer = load_tokenizer(str(tokenizer_path), eos=True)
    dtype = token_dtype(tokenizer.vocab_size)
    encoded = [ids + [tokenizer.eos_id] for ids in tokenizer.encode_batch(texts)]
    lengths = np.array([len(ids) for ids in encoded], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    flat = np.concatenate([np.asarray(ids, dtype=dtype) for ids in encoded])
    text_array = pa.array(texts, pa.string())
    inputs, records = [], []
    per_part = [documents // shards + (i < documents % shards) for i in range(shards)]
    for task, count in enumerate(per_part):
        rng = np.random.default_rng(task)
        chosen = rng.integers(0, len(texts), count)
        ids = pa.array([f"doc-{task}-{i}" for i in range(count)], pa.string())
        sources = pa.array(["web"] * count, pa.string())
        part = folder / "parts" / f"part-{task:05d}.parquet"
        table = pa.table({"id": ids, "text": text_array.take(chosen), "source": sources})
        pq.write_table(table, part, compression="zstd")
        size, fingerprint = file_fingerprint(str(part))
        inputs.append({"url": str(part), "size": size, "fingerprint": fingerprint})
        # The documents' tokens gathered from the pool's, as tokenize would have written them.
        taken = lengths[chosen]
        index = np.repeat(starts[chosen] - (np.cumsum(taken) - taken), taken)
        tokens = flat[index + np.arange(int(taken.sum()))]
        writer = TaskShardWriter(str(folder / "tokens"), task, dtype, 1 << 40)
        writer.add(tokens, taken, pa.table({"id": ids, "source": sources}))
        records.extend(record.to_json() for record in writer.close())
    saved = tokenizer.embedded()
    (folder / "tokens" / saved.file_name).write_bytes(saved.content)
    describe = tokenizer.describe() | {"dtype": dtype.name, "file": saved.file_name}
    config = TokenizeConfig.parse(
        {
            "input": str(folder / "parts"),
            "output": str(folder / "tokens"),
            "tokenizer": str(tokenizer_path),
            "eos": True,
        }
    )
    outputs = [
        {"path": r["name"] + suffix, **r["files"][key], "records": r["documents"]}
        for r in records
        for key, suffix in FILE_SUFFIXES.items()
        if key in r["files"]
    ]
    write_manifest(
        str(folder / "tokens"),
        {
            "kind": "tokenize",
            "format": {"name": FORMAT_NAME, "version": FORMAT_VERSION},
            "config": config.model_dump(mode="json", exclude={"storage_options"}),
            "config_hash": config.outputs_hash(tokenizer.fingerprint()),
            "tokenizer": describe,
            "inputs": inputs,
            "parents": [],
            "totals": {
                "documents": documents,
                "tokens": sum(r["tokens"] for r in records),
                "shards": len(records),
            },
            "shards": records,
            "outputs": outputs,
        },
    )
    stamp.write_text(json.dumps(wanted))
    return time.perf_counter() - started


def child(argv: list[str]) -> None:
    """Work done in a measured subprocess; prints one JSON line."""
    mode, catalog, *rest = argv
    from mixplane.annotate import annotate_dataset
    from mixplane.catalog import Catalog

    started, cpu = time.perf_counter(), time.process_time()
    if mode == "annotate":
        text, output, model, workers = rest
        result = annotate_dataset(
            {
                "dataset": "bench@1",
                "classifier": model,
                "as": "quality",
                "catalog": catalog,
                "text": text,
                "output": output,
                "workers": int(workers),
            }
        )
        summary = result.summary()
        found = {key: summary[key] for key in ("dataset", "documents", "text", "task_seconds")}
        found |= {key: summary[key] for key in ("written_bytes", "shared_bytes")}
        found["text"] = found["text"]["kind"]
    else:
        dataset, where = rest
        part = Catalog(catalog).select(where, [dataset])[dataset]
        found = {"documents": part.documents, "ranges": part.ranges}
    found["seconds"] = time.perf_counter() - started
    found["own_cpu_seconds"] = time.process_time() - cpu
    print(json.dumps(found))


def run_child(*args: str) -> dict:
    result = measure([sys.executable, __file__, "--child", *args], tree_cpu=True)
    if result.returncode != 0:
        raise SystemExit(f"child {args[0]} failed:\n{result.stderr}")
    found = json.loads(result.stdout.strip().splitlines()[-1])
    return found | {
        "wall_seconds": round(result.seconds, 2),
        "tree_cpu_seconds": round(result.cpu_seconds, 2),
        "peak_rss_mb": round(result.peak_rss_mb, 1),
    }


def folder_bytes(folder: Path, pattern: str) -> int:
    return sum(path.stat().st_size for path in folder.glob(pattern))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=lambda s: int(s.replace("_", "")), default=200_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, help="default: bench/results/annotate-N.json")
    args = parser.parse_args()

    import pyarrow.parquet as pq

    from mixplane.catalog import Catalog

    texts, tokenizer, model = prepare(args.data / "model")
    folder = args.data / f"data-{args.documents}-{args.shards}"
    generated = generate(folder, texts, tokenizer, args.documents, args.shards)
    catalog = folder / "catalog.duckdb"
    catalog.unlink(missing_ok=True)
    for name in ("from-tokens", "from-parts"):
        shutil.rmtree(folder / name, ignore_errors=True)
    Catalog(catalog).register(str(folder / "tokens"), "bench")
    token_bytes = folder_bytes(folder / "tokens", "shard-*")
    runs = {}
    for text in ("tokens", "parts"):
        output = str(folder / f"from-{text}")
        runs[text] = run_child(
            "annotate", str(catalog), text, output, str(model), str(args.workers)
        )
        runs[text]["seconds_per_million"] = round(
            runs[text]["wall_seconds"] * 1e6 / args.documents, 2
        )
        runs[text]["cpu_seconds_per_million"] = round(
            runs[text]["tree_cpu_seconds"] * 1e6 / args.documents, 2
        )
    names = sorted(p.name for p in (folder / "from-tokens").glob("*.parquet"))
    same = all(
        (folder / "from-tokens" / n).read_bytes() == (folder / "from-parts" / n).read_bytes()
        for n in names
    )
    if not same:
        raise SystemExit("the two text sources gave different column files")
    high = sum(
        int((pq.read_table(folder / "from-tokens" / n).column(0).to_numpy() >= 0.8).sum())
        for n in names
    )
    queries = {
        "quality >= 0.8 (added column)": run_child(
            "select", str(catalog), "bench@2", "quality >= 0.8"
        ),
        "n_tokens >= 40 (shard metadata)": run_child(
            "select", str(catalog), "bench@2", "n_tokens >= 40"
        ),
    }
    if queries["quality >= 0.8 (added column)"]["documents"] != high:
        raise SystemExit("the query's count differs from the column files'")
    written = runs["tokens"]["written_bytes"]
    results = {
        "documents": args.documents,
        "shards": args.shards,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg()[0],
        "generate_seconds": round(generated, 1),
        "tokens": sum(
            r["tokens"]
            for r in json.loads((folder / "tokens" / "_manifest.json").read_text())["shards"]
        ),
        "token_folder_bytes": token_bytes,
        "parts_bytes": folder_bytes(folder / "parts", "*.parquet"),
        "annotate": runs,
        "written_bytes": written,
        "written_bytes_per_document": round(written / args.documents, 3),
        "written_over_token_files": round(written / token_bytes, 5),
        "column_files_identical_across_text_sources": same,
        "queries": queries,
        "load_average_at_end": os.getloadavg()[0],
    }
    out = args.out or ROOT / "bench" / "results" / f"annotate-{args.documents}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
