"""Image loader benchmark: images/s per core for read + decode + resize to 224 + normalize
into batches, mixplane's `ImageTextDataset` against webdataset + torchvision transforms
(OpenCLIP's pipeline without the model), on the same shards in the same run.

The data: `--samples` generated JPEGs (sides 300-800 px, quality 90: photo-like scenes with
noise, so sizes and decode costs are realistic) with captions, written as mixplane image
shards (WebDataset-compatible tars, which webdataset reads directly), registered in a catalog;
the mixture has two components (en and de captions, 0.5 each), so mixplane reads through its
blend. Both tools tokenize captions with the same small BPE to 77 ids and batch 64 samples.

Each measurement is a fresh process (peak RSS of its whole tree, workers included), with 0
and 2 DataLoader workers; tools alternate within each round, results are medians over the
rounds and ratios are paired per round. Per-core rates are images over the CPU seconds of the
process and its workers in the timed window. Goal: mixplane >= 1.5x webdataset per core.

    python bench/images/run.py                          # 3000 images, 3 rounds
    python bench/images/run.py --samples 800 --rounds 1 --batches 8   # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bench.measure import measure, spread  # noqa: E402

TOOLS = ("mixplane", "webdataset")


def prepare(samples: int, shards: int) -> Path:
    """Write (or reuse) bench/data/images/SAMPLES: shards, catalog, mixture, tokenizer."""
    from mixplane.catalog import Catalog
    from mixplane.load.images.synthetic import caption_tokenizer, write_image_dataset

    folder = ROOT / "bench" / "data" / "images" / str(samples)
    done = folder / "ready.json"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    write_image_dataset(
        str(folder / "images"), samples, seed=1, source="bench", shards=shards, size=(300, 800)
    )
    catalog = folder / "catalog.duckdb"
    if catalog.exists():
        catalog.unlink()
    Catalog(str(catalog)).register(str(folder / "images"), "bench")
    caption_tokenizer(("bench",)).save(str(folder / "tokenizer.json"))
    spec = {
        "kind": "image_text",
        "catalog": str(catalog),
        "seed": 1234,
        "components": {
            "en": {"where": "language = 'en'", "weight": 0.5},
            "de": {"where": "language = 'de'", "weight": 0.5},
        },
    }
    (folder / "mixture.yaml").write_text(yaml.safe_dump(spec))
    tars = sorted((folder / "images").glob("*.tar"))
    size = sum(t.stat().st_size for t in tars)
    info = {"samples": samples, "shards": len(tars), "bytes": size, "seconds": 0.0}
    info["seconds"] = round(time.perf_counter() - started, 1)
    done.write_text(json.dumps(info))
    return folder


def run_tool(tool: str, folder: Path, workers: int, args) -> dict:
    command = [sys.executable, str(BENCH / "runners.py"), tool, str(folder)]
    command += ["--workers", str(workers), "--batch", str(args.batch)]
    command += ["--batches", str(args.batches), "--warmup", str(args.warmup)]
    done = measure(command, env=os.environ | {"PYTHONWARNINGS": "ignore"})
    if done.returncode != 0:
        raise SystemExit(f"{tool} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["peak_rss_mb"] = round(done.peak_rss_mb, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=30, help="timed batches per run")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    needed = (args.batches + args.warmup) * args.batch
    if needed > args.samples:
        raise SystemExit(f"--samples must be >= (batches + warmup) x batch = {needed}")
    folder = prepare(args.samples, args.shards)
    runs: dict[str, list[dict]] = {}
    for round_number in range(args.rounds):
        for workers in args.workers:
            for tool in TOOLS:
                result = run_tool(tool, folder, workers, args)
                runs.setdefault(f"{tool}/{workers}", []).append(result)
                print(
                    f"round {round_number} {tool:10s} workers={workers}: "
                    f"{result['images_per_s']:7.1f} images/s, "
                    f"{result['images_per_core_s']:7.1f} per core, "
                    f"peak RSS {result['peak_rss_mb']:.0f} MB",
                    flush=True,
                )
    summary = {}
    for key, results in runs.items():
        summary[key] = {
            name: round(statistics.median(r[name] for r in results), 2)
            for name in (
                "images_per_s",
                "images_per_core_s",
                "cpu_seconds",
                "first_batch_s",
                "peak_rss_mb",
            )
        }
    ratios = {}
    for workers in args.workers:
        mine, theirs = runs[f"mixplane/{workers}"], runs[f"webdataset/{workers}"]
        for name in ("images_per_s", "images_per_core_s"):
            paired = [a[name] / b[name] for a, b in zip(mine, theirs, strict=True)]
            ratios[f"{name}/{workers}"] = spread(paired, digits=2)
    report = {
        "benchmark": "images",
        "command": " ".join(["python", "bench/images/run.py", *sys.argv[1:]]),
        "data": json.loads((folder / "ready.json").read_text()),
        "batch": args.batch,
        "timed_batches": args.batches,
        "image_size": 224,
        "rounds": args.rounds,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "summary": summary,
        "ratios_mixplane_over_webdataset": ratios,
        "runs": runs,
    }
    out = Path(args.out or ROOT / "bench" / "results" / f"images-{args.samples}.json")
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"summary": summary, "ratios": ratios}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
