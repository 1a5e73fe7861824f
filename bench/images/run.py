"""Image loader benchmark: images/s per core for read + decode + resize to 224 + normalize
into batches, mixplane's `ImageTextDataset` against webdataset + torchvision transforms
(OpenCLIP's pipeline without the model), on the same shards in the same run.

The data: `--samples` JPEGs with captions, written as mixplane image shards
(WebDataset-compatible tars, which webdataset reads directly) and registered in a catalog;
the mixture has two components (en and de captions, 0.5 each), so mixplane reads through its
blend. Both tools tokenize captions with the same small BPE to 77 ids and batch 64 samples.
By default the JPEGs are generated scenes (sides 300-800 px, quality 90, with noise);
`--photos` makes them from real photographs instead (`photos.py`: crops of 51 photographs
from Debian packages, scaled to the same sizes).

Equal work, two ways (`--augment`):
- `center`: mixplane's built-in path (JPEGs decoded at reduced size, one resize with crop)
  against webdataset with Resize + CenterCrop after a full decode (`webdataset`) and after
  the same reduced decode as mixplane (`webdataset-draft`); `quality.py` compares the three
  outputs pixel by pixel, and the figures go into the results.
- `rrc`: both with the same torchvision RandomResizedCrop(224) + ToTensor + Normalize on
  the same full decode (mixplane through `transform=`); the quality check verifies that both
  give the same tensor from the same seed.

Each measurement is a fresh process (peak RSS of its whole tree, workers included), with 0
and 2 DataLoader workers; within each round the tools run in an order that rotates from
round to round, results are medians over the rounds and ratios are paired per round (median,
range, 95% interval). Per-core rates are images over the CPU seconds of the process and its
workers in the timed window.

    python bench/images/run.py                          # 3000 generated images, 3 rounds
    python bench/images/run.py --photos                 # 3000 crops of photographs
    python bench/images/run.py --samples 800 --rounds 1 --batches 8   # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bench.measure import measure, paired_ratios, rotated, spread  # noqa: E402

TOOLS = {
    "center": ["mixplane", "webdataset", "webdataset-draft"],
    "rrc": ["mixplane", "webdataset"],
}


def prepare(samples: int, shards: int, photos: bool) -> Path:
    """Write (or reuse) bench/data/images/[photos-]SAMPLES: shards, catalog, mixture,
    tokenizer."""
    from mixplane.catalog import Catalog
    from mixplane.load.images.synthetic import caption_tokenizer, write_image_dataset

    folder = ROOT / "bench" / "data" / "images" / f"{'photos-' if photos else ''}{samples}"
    done = folder / "ready.json"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    images = str(folder / "images")
    if photos:
        from bench.images.photos import gather_photos, photo_tokenizer, write_photo_dataset

        found = gather_photos()
        tokenizer = photo_tokenizer(write_photo_dataset(images, found, samples, shards=shards))
    else:
        write_image_dataset(images, samples, seed=1, source="bench", shards=shards, size=(300, 800))
        tokenizer = caption_tokenizer(("bench",))
    catalog = folder / "catalog.duckdb"
    if catalog.exists():
        catalog.unlink()
    Catalog(str(catalog)).register(images, "bench")
    tokenizer.save(str(folder / "tokenizer.json"))
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
    info = {"samples": samples, "shards": len(tars), "bytes": size, "photos": photos}
    info["seconds"] = round(time.perf_counter() - started, 1)
    done.write_text(json.dumps(info))
    return folder


def run_tool(tool: str, folder: Path, workers: int, augment: str, args) -> dict:
    command = [sys.executable, str(BENCH / "runners.py"), tool, str(folder)]
    command += ["--workers", str(workers), "--batch", str(args.batch), "--augment", augment]
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
    parser.add_argument("--photos", action="store_true", help="crops of real photographs")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=30, help="timed batches per run")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--augment", nargs="+", choices=list(TOOLS), default=list(TOOLS))
    parser.add_argument("--quality-samples", type=int, default=300)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    needed = (args.batches + args.warmup) * args.batch
    if needed > args.samples:
        raise SystemExit(f"--samples must be >= (batches + warmup) x batch = {needed}")
    folder = prepare(args.samples, args.shards, args.photos)
    from bench.images.quality import compare

    quality = compare(folder, min(args.quality_samples, args.samples))
    print(json.dumps({"quality": quality}, indent=2), flush=True)
    for path in sorted((folder / "images").glob("*.tar")):  # into the page cache, untimed
        path.read_bytes()
    runs: dict[str, list[dict]] = {}
    cases = [(augment, workers) for augment in args.augment for workers in args.workers]
    started = time.perf_counter()
    for round_number in range(args.rounds):
        for augment, workers in cases:
            for tool in rotated(TOOLS[augment], round_number):
                result = run_tool(tool, folder, workers, augment, args)
                runs.setdefault(f"{augment}/{tool}/{workers}", []).append(result)
                print(
                    f"round {round_number} {augment:6s} {tool:16s} workers={workers}: "
                    f"{result['images_per_s']:7.1f} images/s, "
                    f"{result['images_per_core_s']:7.1f} per core, "
                    f"peak RSS {result['peak_rss_mb']:.0f} MB",
                    flush=True,
                )
    names = ("images_per_s", "images_per_core_s", "cpu_seconds", "first_batch_s", "peak_rss_mb")
    summary = {key: {name: spread([r[name] for r in results], 2) for name in names}
               for key, results in runs.items()}  # fmt: skip
    ratios = {}
    for augment, workers in cases:
        for name in ("images_per_s", "images_per_core_s"):
            rounds = [
                {tool: runs[f"{augment}/{tool}/{workers}"][i][name] for tool in TOOLS[augment]}
                for i in range(args.rounds)
            ]
            for other in TOOLS[augment][1:]:
                key = f"{augment}/{name}/{workers}: mixplane / {other}"
                ratios[key] = paired_ratios(rounds, "mixplane", other)
    report = {
        "benchmark": "images",
        "command": " ".join(["python", "bench/images/run.py", *sys.argv[1:]]),
        "data": json.loads((folder / "ready.json").read_text()),
        "batch": args.batch,
        "timed_batches": args.batches,
        "image_size": 224,
        "rounds": args.rounds,
        "minutes": round((time.perf_counter() - started) / 60, 1),
        "load_average_at_end": os.getloadavg(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "quality": quality,
        "summary": summary,
        "paired_ratios": ratios,
        "runs": runs,
    }
    name = f"images-{'photos-' if args.photos else ''}{args.samples}.json"
    out = Path(args.out or ROOT / "bench" / "results" / name)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"ratios": ratios}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
