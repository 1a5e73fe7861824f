"""Image processing benchmark: images/s per core for read + decode + validate + pHash +
dedup + resize + re-encode + write, through `mixplane process` on WebDataset shards.

The data: the WebDataset shards of `mixplane synth --images` (photo-like generated scenes of
160-640 px, JPEG, PNG and WebP, with planted duplicates and broken files). The pipeline is
`decode_image` (validation, EXIF orientation, pHash), `dedup_image`, `resize_image` (shorter
side to 224, JPEG quality 90), written as image shards. Each run is a fresh
`mixplane process` (peak RSS and CPU time of its whole process tree), with 1 and 2 workers;
results are medians over the rounds. Per-core rate: images read over CPU seconds.

    python bench/images/process.py                   # 3000 samples, 3 rounds
    python bench/images/process.py --samples 600 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bench.measure import measure  # noqa: E402

MIXPLANE = str(Path(sys.executable).with_name("mixplane"))


def prepare(samples: int) -> Path:
    """Write (or reuse) bench/data/images-process/SAMPLES/corpus."""
    from mixplane.synth.images import generate_image_corpus

    folder = ROOT / "bench" / "data" / "images-process" / str(samples)
    if not (folder / "corpus" / "truth" / "images_summary.json").exists():
        generate_image_corpus(str(folder / "corpus"), samples, seed=1, overwrite=True)
    return folder


def pipeline(folder: Path, workers: int) -> Path:
    config = {
        "input": [{"path": str(folder / "corpus" / "raw" / "webdataset"), "source": "web"}],
        "output": str(folder / f"out-{workers}"),
        "output_format": "webdataset",
        "workers": workers,
        "stages": [
            {"decode_image": {"min_image_size": 64}},
            "dedup_image",
            {"resize_image": {"size": 224, "mode": "keep_ratio", "quality": 90}},
        ],
    }
    path = folder / f"pipeline-{workers}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_once(folder: Path, workers: int) -> dict:
    shutil.rmtree(folder / f"out-{workers}", ignore_errors=True)
    config = pipeline(folder, workers)
    result = measure([MIXPLANE, "process", str(config), "--json"], tree_cpu=True)
    if result.returncode != 0:
        raise SystemExit(f"mixplane process failed:\n{result.stderr[-3000:]}")
    stats = json.loads((folder / f"out-{workers}" / "_stats.json").read_text())
    images = stats["documents_in"]
    return {
        "images": images,
        "kept": stats["kept"],
        "seconds": round(result.seconds, 3),
        "cpu_seconds": round(result.cpu_seconds, 3),
        "images_per_second": round(images / result.seconds, 1),
        "images_per_cpu_second": round(images / result.cpu_seconds, 1),
        "peak_rss_mb": round(result.peak_rss_mb, 1),
        "stage_seconds": {k: round(v, 2) for k, v in stats["seconds"].items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "images-process.json"))
    args = parser.parse_args()
    folder = prepare(args.samples)
    runs: dict[int, list[dict]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for workers in runs:
            runs[workers].append(run_once(folder, workers))
    summary = {}
    for workers, results in runs.items():
        summary[f"{workers}_workers"] = {
            key: statistics.median(r[key] for r in results)
            for key in (
                "images",
                "kept",
                "seconds",
                "cpu_seconds",
                "images_per_second",
                "images_per_cpu_second",
                "peak_rss_mb",
            )
        } | {"stage_seconds": results[0]["stage_seconds"], "rounds": results}
    report = {
        "benchmark": "image processing: decode, validate, pHash, dedup, resize 224, write",
        "samples": args.samples,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "results": summary,
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    for name, result in summary.items():
        print(
            f"{name}: {result['images_per_second']:.0f} images/s, "
            f"{result['images_per_cpu_second']:.0f} per CPU second, "
            f"peak RSS {result['peak_rss_mb']:.0f} MB"
        )


if __name__ == "__main__":
    main()
