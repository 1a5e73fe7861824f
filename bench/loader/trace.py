"""Batch forensics at scale: how long `trace` takes to say what a step held, on a catalog of
1e9 tokens (the loader benchmark's three synthetic datasets: 1.43M documents, uint16 tokens,
shards of 64 MB; mixture wiki 0.5, code 0.3, web_de 0.2, seq_len 2048).

Measured, each on random steps far into the stream (up to step 100,000 of 64 sequences, a
run of 13B tokens: tens of epochs of the components):

- `mixplane trace ... --json` as a user runs it: a fresh process (imports, the mixture's plan,
  the trace, the JSON), with the plan cache cold (the catalog queried and the plan written,
  as the first start of a loader does) and warm (the plan a loader or an earlier trace of the
  same mixture cached);
- `trace(mixture, step=...)` in a process that has imported mixplane: opening the mixture
  (plan cache, epoch orders mapped) and tracing, what a notebook or a service scan pays;
- `trace_dataset` on a dataset already open: the trace alone (plan lookup, document ids,
  source and properties from the shards' metadata);
- the same for a whole global step of 64 sequences with two properties, and one sequence.

The catalog's shards hold constant token ids (a trace reads the plan, the index and the
metadata, never a token; writing 1e9 random ones took most of the time). Results go to
bench/results/loader-trace.json.

    python bench/loader/trace.py --tokens 1e9
    python bench/loader/trace.py --tokens 1e7   # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))

from bench.loader.data import dataset_settings, mixture_spec  # noqa: E402

SEQ_LEN = 2048
WORLD_SIZE = 8
BATCH_SIZE = 8  # per rank: a step of 64 sequences
LAST_STEP = 100_000
REPEATS = 15
COLD_RUNS = 3  # fresh processes without a plan cache
WARM_RUNS = 8  # fresh processes with the plan cached


def constant_tokens(rng: np.random.Generator, count: int) -> np.ndarray:
    """Token ids for the shards: what they are does not matter to a trace, and drawing 1e9
    random ones took most of the catalog's writing time."""
    return np.ones(count, dtype=np.uint16)


def prepare(folder: Path, tokens: float) -> Path:
    """The catalog and mixture, written once under `folder` (reused when the size matches)."""
    from mixplane.load.tools.synthetic import write_catalog

    folder.mkdir(parents=True, exist_ok=True)
    mixture = folder / "mixture.yaml"
    stamp = folder / "_bench.json"
    wanted = {"tokens": tokens, "format": 2}
    if not stamp.exists() or json.loads(stamp.read_text()) != wanted:
        started = time.perf_counter()
        settings = dataset_settings(tokens)
        for options in settings.values():
            options["tokens"] = constant_tokens
        write_catalog(str(folder), settings, catalog=str(folder / "catalog.duckdb"))
        spec = mixture_spec(folder / "catalog.duckdb", SEQ_LEN)
        mixture.write_text(yaml.safe_dump(spec, sort_keys=False))
        stamp.write_text(json.dumps(wanted))
        print(f"catalog written in {time.perf_counter() - started:.0f} s", flush=True)
    return mixture


CPU: list[float] = []  # CPU seconds of the last `timed` call (this process and children)


def cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(call) -> tuple[float, object]:
    started, cpu = time.perf_counter(), cpu_seconds()
    result = call()
    CPU.append(cpu_seconds() - cpu)
    return time.perf_counter() - started, result


def summary(seconds: list[float]) -> dict:
    """Wall seconds of the last len(seconds) calls, and their CPU seconds (which a machine
    shared with other jobs stretches less)."""
    cpu = CPU[-len(seconds) :]
    return {
        "median_seconds": statistics.median(seconds),
        "max_seconds": max(seconds),
        "median_cpu_seconds": statistics.median(cpu),
        "runs": len(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=float, default=1e9)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    folder = ROOT / "bench" / "data" / "trace" / str(int(args.tokens))
    mixture = prepare(folder, args.tokens)

    from mixplane.load import MixtureDataset
    from mixplane.load.tools.trace import TraceRequest, trace, trace_dataset

    results: dict = {"tokens": args.tokens, "seq_len": SEQ_LEN, "world_size": WORLD_SIZE}
    layout = {"world_size": WORLD_SIZE, "batch_size": BATCH_SIZE}
    rng = np.random.default_rng(7)
    steps = rng.integers(0, LAST_STEP, args.repeats).tolist()
    ranks = rng.integers(0, WORLD_SIZE, args.repeats).tolist()

    results["load_average_at_start"] = list(os.getloadavg())

    # The command as an installed package runs it: with its modules' bytecode compiled (pip
    # does at install; an environment with PYTHONDONTWRITEBYTECODE recompiles every start).
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(folder / "bytecode")

    def cli(step: int, rank: int) -> float:
        command = [sys.executable, "-m", "mixplane", "trace", str(mixture), "--step", str(step)]
        command += ["--rank", str(rank), "--world-size", str(WORLD_SIZE)]
        command += ["--batch-size", str(BATCH_SIZE), "--json"]
        seconds, done = timed(
            lambda: subprocess.run(command, capture_output=True, check=True, env=environment)
        )
        assert json.loads(done.stdout)["positions"], done.stderr
        return seconds

    cli(steps[0], ranks[0])  # compiles the bytecode, once

    # Cold: no plan cache, so the fresh process queries the catalog and writes the plan, as
    # the first trace (or the first start of a loader) of a mixture does.
    cold = []
    for step, rank in zip(steps[:COLD_RUNS], ranks[:COLD_RUNS], strict=True):
        shutil.rmtree(folder / "cache", ignore_errors=True)
        cold.append(cli(step, rank))
    results["cli_rank_step_cold_plan"] = summary(cold)
    # Warm: the plan the first trace (or a loader of the same mixture) cached.
    warm = [cli(s, r) for s, r in zip(steps[:WARM_RUNS], ranks[:WARM_RUNS], strict=True)]
    results["cli_rank_step"] = summary(warm)

    report = trace(mixture, step=steps[0], rank=ranks[0], **layout)
    dataset = MixtureDataset(mixture, prefetch=0)
    results["documents"] = int(sum(len(p) for p in dataset.plan.components))

    opened = []
    for step, rank in zip(steps, ranks, strict=True):
        opened.append(timed(lambda s=step, r=rank: trace(mixture, step=s, rank=r, **layout))[0])
    results["python_rank_step"] = summary(opened)

    def alone(request: TraceRequest) -> list[float]:
        return [timed(lambda: trace_dataset(dataset, request))[0] for _ in range(args.repeats)]

    def requests(**fields) -> list[TraceRequest]:
        return [TraceRequest(step=s, rank=r, **fields) for s, r in zip(steps, ranks, strict=True)]

    results["open_dataset_rank_step"] = summary(
        [timed(lambda q=q: trace_dataset(dataset, q))[0] for q in requests(**layout)]
    )
    whole = [TraceRequest(step=s, batch_size=64, properties=["language", "quality"]) for s in steps]
    results["open_dataset_global_step_64_with_properties"] = summary(
        [timed(lambda q=q: trace_dataset(dataset, q))[0] for q in whole]
    )
    results["open_dataset_one_sequence"] = summary(
        alone(TraceRequest(index=int(steps[0]) * 64 + 5))
    )
    results["load_average_at_end"] = list(os.getloadavg())
    results["example"] = {
        "step": report["step"],
        "rank": report["rank"],
        "sequences": len(report["sequences"]),
        "documents": sum(len(s["documents"]) for s in report["sequences"]),
    }
    out = ROOT / "bench" / "results" / "loader-trace.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
