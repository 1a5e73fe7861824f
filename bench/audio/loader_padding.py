"""Padding in the audio loader's batches: the share of a batch's (B, T) frames that are
padding, with length bucketing (`batch_seconds`) and with a fixed batch size of the same mean
rows, on clip lengths log-normal between 1 and 20 s (median 4.5 s).

Two measures:

- plan: `--clips` lengths drawn here, batched window by window by the loader's own planner
  (`audio.plan.plan_window`) for `--world` ranks, as `AudioTextDataset` plans them; the
  loader cuts every decoded clip to its planned length, so its batches have these widths.
- real: `--real` clips written as FLAC tones at 8 kHz (`audio.synthetic`) into a catalog and
  read through `AudioTextDataset` (decoded, padded), the widths of its actual batches.

Run:
    PYTHONPATH=src python -m bench.audio.loader_padding [--clips 20000] [--real 300]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from mixplane.load.audio.plan import Batching, plan_window
from mixplane.load.audio.synthetic import clip_seconds

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "audio-loader-padding.json"


def planned_padding(lengths: np.ndarray, batching: Batching, seed: int = 0) -> dict[str, float]:
    """Padding share and mean rows of every rank's batches over one pass of `lengths`."""
    n, start = len(lengths), 0
    padded = frames = batches = rows = 0
    while n - start >= batching.unit:
        window = plan_window(0, start, (), batching, n, lambda p: lengths[p], seed)
        for batch in window.batches:
            width = -(-int(lengths[window.positions[batch]].max()) // batching.multiple)
            padded += len(batch) * width * batching.multiple
            frames += int(lengths[window.positions[batch]].sum())
            batches += 1
            rows += len(batch)
        start = window.end
    return {"padding": 1 - frames / padded, "mean_rows": rows / batches, "batches": batches}


def real_padding(clips: int, batch_seconds: float, window: int) -> dict[str, float]:
    """Padding share of `AudioTextDataset`'s decoded batches over one epoch."""
    from mixplane.load.audio import AudioTextDataset
    from mixplane.load.audio.synthetic import write_audio_catalog

    with tempfile.TemporaryDirectory() as folder:
        options = {"samples": clips, "seconds": (1.0, 20.0), "shards": 4}
        catalog = write_audio_catalog(folder, {"speech": options})
        spec = {"kind": "audio_text", "catalog": catalog, "components": {"speech": {}}}
        dataset = AudioTextDataset(
            spec, batch_seconds=batch_seconds, sample_rate=8000, window=window, audit=False
        )
        began = time.perf_counter()
        padded = frames = batches = 0
        for batch in dataset:
            padded += batch["audio"].size
            frames += int(batch["lengths"].sum())
            batches += 1
        seconds = time.perf_counter() - began
    return {
        "padding": 1 - frames / padded,
        "batches": batches,
        "audio_seconds": frames / 8000,
        "read_seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clips", type=int, default=20000)
    parser.add_argument("--real", type=int, default=300)
    parser.add_argument("--world", type=int, default=8)
    parser.add_argument("--batch-seconds", type=float, default=320.0)
    parser.add_argument("--window", type=int, default=2048)
    args = parser.parse_args()
    rate = 16000
    rng = np.random.default_rng(0)
    lengths = np.round(clip_seconds(rng, args.clips, 1.0, 20.0) * rate).astype(np.int64)
    budget = int(args.batch_seconds * rate)
    results: dict[str, object] = {
        "clips": args.clips,
        "seconds": [1.0, 20.0],
        "median_seconds": float(np.median(lengths) / rate),
        "world_size": args.world,
        "batch_seconds": args.batch_seconds,
    }
    plans = {}
    for window in (256, args.window, 8192):
        plans[f"bucketed_window_{window}"] = planned_padding(
            lengths, Batching(args.world, None, budget, window)
        )
    rows = round(plans[f"bucketed_window_{args.window}"]["mean_rows"])
    plans["fixed_batch_size"] = planned_padding(lengths, Batching(args.world, rows, None, 2048))
    plans["bucketed_pad_multiple_1600"] = planned_padding(
        lengths, Batching(args.world, None, budget, args.window, 1600)
    )
    results["plan"] = plans
    if args.real:
        results["real"] = real_padding(args.real, 80.0, 256)
        results["real"] |= {"clips": args.real, "batch_seconds": 80.0, "window": 256}
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
