"""Padding waste and throughput of unpacked batches against packing, on chat-like lengths.

One synthetic dataset (uint16 tokens, written by the store's own writer, registered in a
real catalog) with long-tailed document lengths like a chat corpus's: lognormal, median 300
tokens, sigma 1, at most 4096 (EOS included). Over one epoch of it:

- **fixed**: `UnpackedDataset(batch_size=16)` (16 x 4096 = the budget below at worst),
  documents in the blend's random order, each batch padded to its longest row (rounded up
  to 8): the naive way;
- **bucketing**: `bucketing: {max_tokens_per_batch: 65536}` (window 8192 documents);
- **packing**: `MixtureDataset`, seq_len 4096, batches of 16: no padding by construction;
  its cost is documents cut at sequence boundaries (counted) and attention across
  documents unless the model masks by `document_ids`.

Padding waste = pad tokens / all tokens handed out. Throughput: the epoch through
`torch_loader` (0 workers, the loop touches one token of each batch), tokens handed out per
second (pads included) and real tokens per second (the same, less the padding measured
above), and real tokens per CPU second of the process (its threads included: the machine
is shared, so CPU time is the steadier figure), best of `--repeats` passes (by wall time),
bucketing and packing in turn.

    PYTHONPATH=src python -m bench.loader.padding [--documents 200000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from mixplane.load import MixtureDataset
from mixplane.load.tools.synthetic import write_catalog
from mixplane.load.torch import torch_loader
from mixplane.load.unpacked import UnpackedDataset

ROOT = Path(__file__).parent.parent / "data" / "padding"
LONGEST = 4096
BUDGET = 65536
FIXED_BATCH = BUDGET // LONGEST


def chat_lengths(rng: np.random.Generator, count: int) -> np.ndarray:
    """Lognormal lengths, median 300, capped at 4096 tokens (EOS included)."""
    return np.minimum(np.rint(rng.lognormal(np.log(300), 1.0, count)), LONGEST).astype(np.int64)


def catalog(documents: int) -> str:
    folder = ROOT / str(documents)
    path = folder / "catalog.duckdb"
    if not path.exists():
        write_catalog(
            str(folder),
            {
                "chat": {
                    "documents": documents,
                    "seed": 7,
                    "source": "chat",
                    "eos_id": 0,
                    "lengths": chat_lengths,
                }
            },
        )
    return str(path)


def spec(path: str, **fields) -> dict:
    return {
        "catalog": path,
        "cache_dir": str(Path(path).parent / "cache"),
        "seq_len": LONGEST,
        "seed": 1,
        "max_epochs": 1,
        "components": {"chat": {"where": "source = 'chat'", "weight": 1.0}},
    } | fields


def unpacked(path: str, bucketing: bool) -> UnpackedDataset:
    fields = {"packing": "none", "pad_id": 0, "pad_to_multiple_of": 8}
    if bucketing:
        fields["bucketing"] = {"max_tokens_per_batch": BUDGET}
        return UnpackedDataset(spec(path, **fields))
    return UnpackedDataset(spec(path, **fields), batch_size=FIXED_BATCH)


def waste(dataset: UnpackedDataset) -> dict:
    """Pads and tokens over one epoch, read through the dataset itself."""
    pads = tokens = batches = rows = over = 0
    for batch in dataset:
        mask = batch["attention_mask"]
        pads += int(mask.size - mask.sum())
        tokens += int(mask.size)
        rows += len(mask)
        over += int(mask.size > BUDGET)
        batches += 1
    return {
        "padding_waste": pads / tokens,
        "batches": batches,
        "documents": rows,
        "mean_rows": rows / batches,
        "batches_over_budget": over,
    }


def timed(make, key: str, workers: int = 0) -> tuple[float, float, int]:
    """Seconds, CPU seconds (every thread of the process) and tokens handed out (pads
    included) of one epoch through torch_loader; the loop touches one token of each batch."""
    dataset = make()
    loader = torch_loader(dataset, FIXED_BATCH if key == "packed" else None, num_workers=workers)
    handed = touched = 0
    started, cpu = time.perf_counter(), time.process_time()
    for batch in loader:
        ids = batch["input_ids"]
        handed += ids.numel()
        touched += int(ids[0, 0])
    return time.perf_counter() - started, time.process_time() - cpu, handed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--documents", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--workers", type=int, default=0, help="DataLoader workers (CPU seconds: this process)"
    )
    args = parser.parse_args()
    path = catalog(args.documents)
    lengths = UnpackedDataset(spec(path, packing="none", pad_id=0), batch_size=1).stream.lengths[0]
    report: dict = {
        "workers": args.workers,
        "documents": len(lengths),
        "tokens": int(lengths.sum()),
        "median_length": float(np.median(lengths)),
        "p99_length": float(np.percentile(lengths, 99)),
        "fixed": waste(unpacked(path, bucketing=False)),
        "bucketing": waste(unpacked(path, bucketing=True)),
    }
    packed = MixtureDataset(spec(path))
    sequences = packed.plan.length
    report["packing"] = {
        "padding_waste": 0.0,
        "sequences": sequences,
        # Each sequence boundary inside the epoch falls inside a document at most once.
        "documents_cut_at_a_boundary": sequences / len(lengths),
        "tokens_left_out_of_the_epoch": int(lengths.sum()) - sequences * LONGEST,
    }
    makers = {
        "bucketing": lambda: unpacked(path, bucketing=True),
        "packed": lambda: MixtureDataset(spec(path)),
    }
    best: dict[str, tuple[float, float, int]] = {}
    for _ in range(args.repeats):
        for key, make in makers.items():
            run = timed(make, key, args.workers)
            if key not in best or run[0] < best[key][0]:
                best[key] = run
    for key, (seconds, cpu, handed) in best.items():
        wasted = report["bucketing" if key == "bucketing" else "packing"]["padding_waste"]
        report[f"throughput_{key}"] = {
            "seconds": round(seconds, 3),
            "cpu_seconds": round(cpu, 3),
            "tokens_per_second": handed / seconds,
            "real_tokens_per_second": handed * (1 - wasted) / seconds,
            "real_tokens_per_cpu_second": handed * (1 - wasted) / cpu,
        }
    bucket, pack = report["throughput_bucketing"], report["throughput_packed"]
    report["bucketing_vs_packing"] = {
        key: bucket[key] / pack[key]
        for key in ("tokens_per_second", "real_tokens_per_second", "real_tokens_per_cpu_second")
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
