"""Loader benchmark: packed 2048-token sequences per second, CPU per batch, memory and time
to first batch.

Three components (wiki 0.5, code 0.3, web_de 0.2) from local disk, batches of 8 through a
torch DataLoader with 0 and 2 workers, every tool in the same run and fed the same way:

- `memmap`: the mixture's first sequences, already packed, read straight from np.memmap
  in contiguous batches and handed over as tensors the way mixplane's are: with 0 workers
  iterated in the training process without the DataLoader's loop (as `torch_loader` does),
  with workers sent through the same `WorkerBatch` transfer. The limit of reading these
  bytes in order;
- `mixplane`: `MixtureDataset` over the catalog (plan, packing, blending, reading), with
  per-token document ids; `mixplane-ids` without them;
- `mosaic`: MosaicML streaming's `StreamingDataset`, three `Stream`s in the same proportions
  over MDS shards of the same packed sequences (its own venv under bench/.venvs/streaming);
- `hf`: Hugging Face datasets' `interleave_datasets` over three Arrow datasets of them.

Each measurement is a fresh process (peak RSS of its whole tree, workers included); every
tool runs once per round and results are medians over the rounds. The clock starts after
`--warmup` batches, more than mixplane's read-ahead (2 blocks of about 2M tokens: 256
batches of 8 x 2048), so no tool is timed on work it did before the clock started. CPU is
user + system seconds of the whole process tree over the timed batches (mixplane's
read-ahead thread and the workers use other cores). Ratios against memmap are paired: one
ratio per round (same moment of the machine), reported as the median and the range over the
rounds. mixplane's first run starts with an empty plan cache (`cold`: it queries the
catalog), later runs find the plan cached.

Outputs are compared, not only shapes: memmap, mixplane and mixplane-ids must hand out the
mixture's first sequences byte for byte (every sequence before the clock, hashed; the first
token of every timed one, summed), and every sequence MosaicML and HF hand out must be one of
the packed sequences. Goals: >= 2x MosaicML's throughput, >= 70% of the memmap limit, first
batch < 1 s on a 1-billion-token catalog.

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

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from consume import sequence_hashes  # noqa: E402
from data import prepare  # noqa: E402

from bench.measure import measure, paired_ratios  # noqa: E402
from bench.peer_venv import ensure_venv  # noqa: E402

TOOLS = ("memmap", "mixplane", "mixplane-ids", "mosaic", "hf")
MOSAIC_PACKAGES = ["torch==2.13.0", "mosaicml-streaming"]


def run_tool(tool: str, folder: Path, workers: int, args, mosaic_python: str | None) -> dict:
    options = ["--workers", str(workers), "--batch", str(args.batch)]
    options += ["--batches", str(args.batches), "--warmup", str(args.warmup), "--hashes"]
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
    keys += ("cpu_ms_per_batch", "main_anon_mb", "main_file_mb")
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
    expected = Expected(folder, args)
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
                run["outputs"] = expected.verdict(tool, run.pop("hashes"), run["first_token_sum"])
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

    ratios = ratios_to_others(runs, args.workers)
    output = {"tokens": tokens, "settings": vars(args) | {"data": str(args.data)}}
    output |= {"load": os.getloadavg(), "prepared": prepared, "results": results}
    output |= {"ratios": ratios}
    target = BENCH / f"results-{tokens}.json"
    # Paths inside the repository are written relative to it.
    target.write_text(json.dumps(output, indent=2, default=str).replace(f"{ROOT}/", ""))
    print_table(results, ratios)
    print(f"written {target}", file=sys.stderr)
    wrong = [f"{key} #{n}: {r['outputs']}" for key, rs in runs.items() for n, r in enumerate(rs)]
    wrong = [line for line in wrong if not line.endswith(": equal")]
    if wrong:
        raise SystemExit("outputs differ:\n" + "\n".join(wrong))


class Expected:
    """What every tool must hand out: the packed sequences of the mixture's stream."""

    def __init__(self, folder: Path, args):
        packed = np.load(folder / "packed" / "all.npy", mmap_mode="r")
        self.before = (1 + args.warmup) * args.batch  # sequences hashed before the clock
        timed = packed[self.before : self.before + args.batches * args.batch, 0]
        self.first_token_sum = int(timed.astype(np.int64).sum())
        self.hashes = sequence_hashes(packed)
        self.known = set(self.hashes)

    def verdict(self, tool: str, hashes: list[str], first_token_sum: int) -> str:
        """`equal`, or what differs. memmap and mixplane hand out the stream in order;
        MosaicML and HF blend on their own, so each sequence must be one of the packed."""
        if len(hashes) != self.before:
            return f"{len(hashes)} sequences before the clock, {self.before} expected"
        if tool in ("mosaic", "hf"):
            unknown = sum(h not in self.known for h in hashes)
            return f"{unknown} sequences not in the packed data" if unknown else "equal"
        first = next((n for n, h in enumerate(hashes) if h != self.hashes[n]), None)
        if first is not None:
            return f"sequence {first} differs from the stream"
        if first_token_sum != self.first_token_sum:
            return f"timed first tokens sum to {first_token_sum}, not {self.first_token_sum}"
        return "equal"


def warm_page_cache(folder: Path) -> None:
    """Read every data file once, so that no tool's run includes reading from disk."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "cache" not in path.parts:
            with open(path, "rb") as handle:
                while handle.read(1 << 24):
                    pass


def ratios_to_others(runs: dict[str, list[dict]], workers: list[int]) -> dict[str, dict]:
    """Per worker count, round by round (the same moment of the machine): mixplane's
    throughput over each other tool's (`seq/s`), and each other tool's CPU per batch over
    mixplane's (`cpu`: how many times the CPU mixplane spends on a batch)."""
    ratios = {}
    for count in workers:
        for ours in ("mixplane", "mixplane-ids"):
            for other in ("memmap", "mosaic", "hf"):
                mine, theirs = runs.get(f"{ours}/{count}"), runs.get(f"{other}/{count}")
                if not mine or not theirs:
                    continue
                rounds = [
                    {"ours": a["samples_per_second"], "theirs": b["samples_per_second"]}
                    | {"our_cpu": a["cpu_ms_per_batch"], "their_cpu": b["cpu_ms_per_batch"]}
                    for a, b in zip(mine, theirs, strict=True)
                ]
                ratios[f"{ours}/{other}/{count}"] = {
                    "seq/s": paired_ratios(rounds, "ours", "theirs"),
                    "cpu": paired_ratios(rounds, "their_cpu", "our_cpu"),
                }
    return ratios


def print_table(results: dict, ratios: dict) -> None:
    print(
        "| tool | workers | seq/s | MB/s | CPU ms/batch | first batch (s) | peak RSS (MB) "
        "| anon / file (MB) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for key, value in results.items():
        tool, workers = key.split("/")
        first = f"{value['first_batch_seconds']:.3f}"
        if "cold_first_batch_seconds" in value:
            first += f" (cold {value['cold_first_batch_seconds']:.3f})"
        split = f"{value.get('main_anon_mb', 0):,.0f} / {value.get('main_file_mb', 0):,.0f}"
        print(
            f"| {tool} | {workers} | {value['samples_per_second']:,.0f} | "
            f"{value['mb_per_second']:,.0f} | {value['cpu_ms_per_batch']:.3f} | {first} | "
            f"{value['peak_rss_mb']:,.0f} | {split} |"
        )
    for key, pair in ratios.items():
        for name, ratio in pair.items():
            print(
                f"{key} {name}: {ratio['median']:.2f}x "
                f"(rounds {ratio['min']:.2f}-{ratio['max']:.2f}, 95% {ratio['ci95']})"
            )


if __name__ == "__main__":
    main()
