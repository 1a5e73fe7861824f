"""Loader benchmark: packed 2048-token sequences per second, memory and time to first batch.

Three components (wiki 0.5, code 0.3, web_de 0.2) from local disk, batches of 8 through a
torch DataLoader with 0 and 2 workers, every tool in the same run and fed the same way:

- `memmap`: the mixture's first sequences, already packed, read straight from np.memmap
  in contiguous batches, handed over as tensors like mixplane's (with 0 workers: the limit
  of reading these bytes in one process);
- `mixplane`: `MixtureDataset` over the catalog (plan, packing, blending, reading), with
  per-token document ids; `mixplane-ids` without them;
- `mosaic`: MosaicML streaming's `StreamingDataset`, three `Stream`s in the same proportions
  over MDS shards of the same packed sequences (its own venv under bench/.venvs/streaming);
- `hf`: Hugging Face datasets' `interleave_datasets` over three Arrow datasets of them.

Each measurement is a fresh process (peak RSS of its whole tree, workers included); every
tool runs once per round and results are medians over the rounds. The clock starts after
`--warmup` batches, more than mixplane's read-ahead (2 blocks of about 2M tokens: 256
batches of 8 x 2048), so no tool is timed on work it did before the clock started. Ratios
against memmap are paired: one ratio per round (same moment of the machine), reported as
the median and the range over the rounds. mixplane's first run
starts with an empty plan cache (`cold`: it queries the catalog), later runs find the plan
cached. Goals: >= 2x MosaicML's throughput, >= 70% of the memmap limit, first batch < 1 s
on a 1-billion-token catalog.

    python bench/loader/run.py --tokens 1e9                 # full size (about 2 GB of tokens)
    python bench/loader/run.py --tokens 2e7 --batches 200   # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from data import prepare  # noqa: E402

from bench.measure import measure  # noqa: E402
from bench.peer_venv import ensure_venv  # noqa: E402

TOOLS = ("memmap", "mixplane", "mixplane-ids", "mosaic", "hf")
MOSAIC_PACKAGES = ["torch==2.13.0", "mosaicml-streaming"]


def run_tool(tool: str, folder: Path, workers: int, args, mosaic_python: str | None) -> dict:
    options = ["--workers", str(workers), "--batch", str(args.batch)]
    options += ["--batches", str(args.batches), "--warmup", str(args.warmup)]
    if tool == "mosaic":
        command = [mosaic_python, str(BENCH / "mosaic_runner.py"), "run", str(folder), *options]
    else:
        command = [sys.executable, str(BENCH / "runners.py"), tool, str(folder), *options]
    done = measure(command, env=os.environ | {"PYTHONWARNINGS": "ignore"})
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"{tool} with {workers} workers failed:\n{done.stderr[-3000:]}")
    return json.loads(line[len("RESULT ") :]) | {"peak_rss_mb": done.peak_rss_mb}


def median_of(runs: list[dict]) -> dict:
    keys = ("first_batch_seconds", "samples_per_second", "mb_per_second", "peak_rss_mb")
    keys += ("main_anon_mb", "main_file_mb")
    return {key: statistics.median(run[key] for run in runs) for key in keys if key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=float, default=1e9)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--batches", type=int, default=1500)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=TOOLS)
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "loader")
    args = parser.parse_args()

    tokens = int(args.tokens)
    folder = args.data / f"{tokens}"
    # Enough packed sequences for every run, with room for random interleaving.
    sequences = int((1 + args.warmup + args.batches) * args.batch * 1.6) + 1000
    prepared = prepare(folder, tokens, args.seq_len, sequences)
    print(f"data ready in {folder}: {json.dumps(prepared)}", file=sys.stderr)
    mosaic_python = None
    if "hf" in args.tools:
        measure([sys.executable, str(BENCH / "runners.py"), "hf-build", str(folder)])
    if "mosaic" in args.tools:
        mosaic_python = ensure_venv("streaming", MOSAIC_PACKAGES)
        built = measure([mosaic_python, str(BENCH / "mosaic_runner.py"), "build", str(folder)])
        if built.returncode != 0:
            raise RuntimeError(f"MDS build failed:\n{built.stderr[-3000:]}")

    # Every tool reads from the page cache, as a warm machine would serve it: without this,
    # the first tool of the first round pays for reading the files from disk.
    warm_page_cache(folder)
    # Repeats are the outer loop: every tool runs once per round, so a slower or faster
    # moment of the machine falls on all of them alike; the order rotates between rounds.
    runs: dict[str, list[dict]] = {}
    for repeat in range(args.repeats):
        for workers in args.workers:
            turn = repeat % len(args.tools)
            for tool in args.tools[turn:] + args.tools[:turn]:
                if tool.startswith("mixplane") and repeat == 0:
                    shutil.rmtree(folder / "cache", ignore_errors=True)
                run = run_tool(tool, folder, workers, args, mosaic_python)
                runs.setdefault(f"{tool}/{workers}", []).append(run)
                print(f"{tool} workers={workers} #{repeat}: {json.dumps(run)}", file=sys.stderr)
    results: dict[str, dict] = {}
    for key, measured in runs.items():
        summary = median_of(measured)
        if key.startswith("mixplane"):
            summary["cold_first_batch_seconds"] = measured[0]["first_batch_seconds"]
            summary["first_batch_seconds"] = statistics.median(
                r["first_batch_seconds"] for r in measured[1:] or measured
            )
        results[key] = summary | {"runs": measured}

    ratios = paired_ratios(runs, args.workers)
    output = {"tokens": tokens, "settings": vars(args) | {"data": str(args.data)}}
    output |= {"prepared": prepared, "results": results, "ratios": ratios}
    target = BENCH / f"results-{tokens}.json"
    # Paths inside the repository are written relative to it.
    target.write_text(json.dumps(output, indent=2, default=str).replace(f"{ROOT}/", ""))
    print_table(results, ratios)
    print(f"written {target}", file=sys.stderr)


def warm_page_cache(folder: Path) -> None:
    """Read every data file once, so that no tool's run includes reading from disk."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "cache" not in path.parts:
            with open(path, "rb") as handle:
                while handle.read(1 << 24):
                    pass


def paired_ratios(runs: dict[str, list[dict]], workers: list[int]) -> dict[str, dict]:
    """mixplane's throughput over each other tool's, round by round (the same moment of
    the machine): the median and the range of the per-round ratios."""
    ratios = {}
    for count in workers:
        for ours in ("mixplane", "mixplane-ids"):
            for other in ("memmap", "mosaic", "hf"):
                mine, theirs = runs.get(f"{ours}/{count}"), runs.get(f"{other}/{count}")
                if not mine or not theirs:
                    continue
                per_round = [
                    a["samples_per_second"] / b["samples_per_second"]
                    for a, b in zip(mine, theirs, strict=True)
                ]
                ratios[f"{ours}/{other}/{count}"] = {
                    "median": statistics.median(per_round),
                    "min": min(per_round),
                    "max": max(per_round),
                    "rounds": per_round,
                }
    return ratios


def print_table(results: dict, ratios: dict) -> None:
    print("| tool | workers | seq/s | MB/s | first batch (s) | peak RSS (MB) | anon / file (MB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for key, value in results.items():
        tool, workers = key.split("/")
        first = f"{value['first_batch_seconds']:.3f}"
        if "cold_first_batch_seconds" in value:
            first += f" (cold {value['cold_first_batch_seconds']:.3f})"
        split = f"{value.get('main_anon_mb', 0):,.0f} / {value.get('main_file_mb', 0):,.0f}"
        print(
            f"| {tool} | {workers} | {value['samples_per_second']:,.0f} | "
            f"{value['mb_per_second']:,.0f} | {first} | {value['peak_rss_mb']:,.0f} | {split} |"
        )
    for key, ratio in ratios.items():
        print(f"{key}: {ratio['median']:.2f}x (rounds {ratio['min']:.2f}-{ratio['max']:.2f})")


if __name__ == "__main__":
    main()
