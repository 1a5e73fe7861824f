"""Worker transfer benchmark: CPU per batch of handing batches out of DataLoader workers,
mixplane against the floor of the same DataLoader doing nothing else.

For each batch shape (8 x 2048 and 64 x 2048 by default) and worker count (2 and 0), two
tools run the same DataLoader options that `torch_loader` sets (`batch_size=None`, a
pass-through `collate_fn`, default `prefetch_factor`):

- `floor`: a dataset that reads and makes nothing: every worker hands out, again and again,
  one ready-made batch of the same shape (mixplane's first batch, read before the workers
  start) as a dict of numpy arrays, which the DataLoader pickles into the worker's pipe its
  ordinary way. What it costs is the DataLoader's own cost of asking a worker for a batch and
  moving those bytes. With 0 workers it is the DataLoader's single-process loop.
- `mixplane`: `torch_loader` over the catalog (plan, packing, reading, per-token
  `document_ids`), its batches sent by `load/torch/transfer.py`. With 0 workers it reads in the
  training process and skips the DataLoader's loop.
- `floor-grouped` (not run by default): the floor with `--per-message` batches in each
  message, split into batches in the training process: what sending several batches per
  message would save of the DataLoader's cost per message.
- `mixplane-baseline` (with `--baseline-src DIR`): `mixplane` run from another source tree
  (another version's `src`), to compare two versions round by round.

The figure is CPU milliseconds per batch of the whole process tree (the training process and
its workers, user + system, from /proc) over the timed batches, which counts a worker's or a
read-ahead thread's second core. Beside it: the training process's share, the training
thread's alone (what the loop waits on), and wall milliseconds per batch. Every
measurement is a fresh process; each round runs every tool once per shape and worker count
(the order alternates between rounds), and ratios are paired within a round. Before the
clock, mixplane's first batches are checked against `read_positions`: the same bytes.

    python bench/loader/transfer.py                   # 5 rounds of 8 and 64 x 2048, 2 and 0 workers
    python bench/loader/transfer.py --rounds 1 --sequences 4000   # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from consume import touch, tree_cpu_seconds  # noqa: E402

TOOLS = ("floor", "mixplane", "floor-grouped", "mixplane-baseline")
FIGURES = ("cpu_ms", "main_cpu_ms", "thread_cpu_ms", "wall_ms")


def ready_made_loader(batch: dict, workers: int):
    """The floor: the same DataLoader over a dataset that hands out `batch` forever."""
    from torch.utils.data import DataLoader, IterableDataset

    from mixplane.load.torch.adapter import as_is

    class Ready(IterableDataset):
        def __iter__(self):
            while True:
                yield batch

    return DataLoader(Ready(), batch_size=None, num_workers=workers, collate_fn=as_is)


def split(stream, batch: int):
    """Batches of `batch` rows from a stream of larger ones (views, no copy)."""
    for group in stream:
        rows = len(next(iter(group.values())))
        for start in range(0, rows, batch):
            yield {key: value[start : start + batch] for key, value in group.items()}


def run(args) -> dict:
    """One measurement in this process: build the loader, check, warm up, time."""
    import numpy as np
    import torch

    from mixplane.load import MixtureDataset

    try:
        from mixplane.load.torch import torch_loader
    except ImportError:  # a --baseline-src from before the loader's split into sub-packages
        from mixplane.load.torch_adapter import torch_loader

    torch.set_num_threads(1)
    dataset = MixtureDataset(args.mixture, dtype="uint16")
    if args.tool.startswith("mixplane"):
        stream = iter(torch_loader(dataset, args.batch, num_workers=args.workers))
    else:
        rows = args.batch * (args.per_message if args.tool == "floor-grouped" else 1)
        loader = ready_made_loader(dataset.read_positions(np.arange(rows)), args.workers)
        stream = split(iter(loader), args.batch)
    check = MixtureDataset(args.mixture, dtype="uint16")
    for number in range(max(1, args.warmup // args.batch)):
        batch = next(stream)
        if args.tool.startswith("mixplane") and number < args.checked:
            rows = np.arange(number * args.batch, (number + 1) * args.batch)
            for key, want in check.read_positions(rows).items():
                if not np.array_equal(np.asarray(batch[key]), want):
                    raise AssertionError(f"batch {number}: {key} differs from read_positions")
        touch(batch)
    count = args.sequences // args.batch
    cpu, main_cpu, thread_cpu = tree_cpu_seconds(), time.process_time(), time.thread_time()
    started = time.perf_counter()
    for _ in range(count):
        touch(next(stream))
    wall = time.perf_counter() - started
    thread_cpu = time.thread_time() - thread_cpu
    cpu, main_cpu = tree_cpu_seconds() - cpu, time.process_time() - main_cpu
    return {
        "tool": args.tool,
        "batch": args.batch,
        "workers": args.workers,
        "batches": count,
        "cpu_ms": cpu / count * 1e3,
        "main_cpu_ms": main_cpu / count * 1e3,
        "thread_cpu_ms": thread_cpu / count * 1e3,
        "wall_ms": wall / count * 1e3,
    }


def measure_one(tool: str, mixture: str, batch: int, workers: int, args) -> dict:
    """One measurement in a fresh process."""
    from bench.measure import measure

    command = [sys.executable, __file__, "run", tool, mixture, "--batch", str(batch)]
    command += ["--workers", str(workers), "--sequences", str(args.sequences)]
    command += ["--warmup", str(args.warmup), "--per-message", str(args.per_message)]
    env = os.environ | {"PYTHONWARNINGS": "ignore"}
    if tool == "mixplane-baseline":
        env["PYTHONPATH"] = str(args.baseline_src)
    done = measure(command, env=env)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), "")
    if done.returncode != 0 or not line:
        raise RuntimeError(f"{tool} {batch}/{workers} failed:\n{done.stderr[-3000:]}")
    return json.loads(line[len("RESULT ") :])


def drive(args) -> None:
    from data import prepare

    from bench.measure import paired_ratios, rotated, spread

    folder = args.data / f"{int(args.tokens)}"
    mixture = prepare(folder, int(args.tokens), 2048, 1000)["mixture"]
    rounds: dict[str, list[dict]] = {}  # "batch/workers" -> one {tool: result} per round
    for number in range(args.rounds):
        for batch in args.batch:
            for workers in args.workers:
                measured = {}
                for tool in rotated(list(args.tools), number):
                    measured[tool] = measure_one(tool, mixture, batch, workers, args)
                    print(f"#{number} {json.dumps(measured[tool])}", file=sys.stderr)
                rounds.setdefault(f"{batch}/{workers}", []).append(measured)
    summary = {}
    for key, measured in rounds.items():
        figures = {}
        for tool in args.tools:
            for figure in FIGURES:
                figures[f"{tool}/{figure}"] = spread([r[tool][figure] for r in measured])
        flat = [{f"{t}/{k}": v for t, r in m.items() for k, v in r.items()} for m in measured]
        for ours, theirs in (("mixplane", "floor"), ("mixplane", "mixplane-baseline")):
            if {ours, theirs} <= set(args.tools):
                for figure in ("cpu_ms", "wall_ms"):
                    figures[f"{ours}/{theirs}/{figure}"] = paired_ratios(
                        flat, f"{ours}/{figure}", f"{theirs}/{figure}"
                    )
        summary[key] = figures | {"rounds": measured}
    # Paths relative to the project where they lie in it; another source tree only by name.
    data = args.data.resolve()
    data = data.relative_to(ROOT) if data.is_relative_to(ROOT) else data
    baseline = args.baseline_src and "BEFORE/src"
    settings = vars(args) | {"data": str(data), "baseline_src": baseline}
    output = {"settings": settings, "load": os.getloadavg()}
    target = ROOT / "bench" / "results" / "loader-transfer.json"
    target.write_text(json.dumps(output | {"results": summary}, indent=2, default=str) + "\n")
    print_table(summary, args.tools)
    print(f"written {target}", file=sys.stderr)


def print_table(summary: dict, tools: list[str]) -> None:
    print(
        "| batch | workers | tool | CPU ms/batch (tree) | training process | training thread "
        "| wall ms |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for key, figures in summary.items():
        batch, workers = key.split("/")
        for tool in tools:
            cells = [figures[f"{tool}/{f}"] for f in FIGURES]
            text = " | ".join(f"{c['median']:.3f} ({c['min']:.3f}-{c['max']:.3f})" for c in cells)
            print(f"| {batch} x 2048 | {workers} | {tool} | {text} |")
    for key, figures in summary.items():
        for name, ratio in figures.items():
            if name.count("/") == 2 and ratio:
                print(
                    f"{key} {name}: {ratio['median']:.2f}x "
                    f"(rounds {ratio['min']:.2f}-{ratio['max']:.2f}, 95% {ratio['ci95']})"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode")
    one = sub.add_parser("run", help="one measurement (run by the driver)")
    one.add_argument("tool", choices=TOOLS)
    one.add_argument("mixture")
    one.add_argument("--batch", type=int, default=8)
    one.add_argument("--workers", type=int, default=2)
    one.add_argument("--sequences", type=int, default=32_000)
    one.add_argument("--warmup", type=int, default=4096)
    one.add_argument("--checked", type=int, default=20)
    one.add_argument("--per-message", type=int, default=4)
    parser.add_argument("--tokens", type=float, default=3e8)
    parser.add_argument("--batch", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 0])
    parser.add_argument("--tools", nargs="+", default=list(TOOLS[:2]), choices=TOOLS)
    parser.add_argument("--per-message", type=int, default=4, help="batches, floor-grouped")
    parser.add_argument("--baseline-src", type=Path, help="source tree of mixplane-baseline")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sequences", type=int, default=32_000, help="timed, per run")
    parser.add_argument("--warmup", type=int, default=4096, help="sequences before the clock")
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "transfer")
    args = parser.parse_args()
    if args.mode == "run":
        print("RESULT " + json.dumps(run(args)), flush=True)
    else:
        drive(args)


if __name__ == "__main__":
    main()
