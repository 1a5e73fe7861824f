"""The fixed consumer every tool feeds: time to first batch, then steady batches per second.

Imported by the runners of every tool, including those in other virtual environments, so it
needs only torch and the standard library.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options every runner takes: the data folder and how to feed the consumer."""
    parser.add_argument("data", type=Path)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--batches", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seq-len", type=int, default=2048)


def touch(batch: Any) -> int:
    """Use every batch the same way: read one token of every sequence."""
    ids = batch["input_ids"] if isinstance(batch, dict) else batch
    return int(ids[:, 0].long().sum())


def consume(
    make_loader: Callable[[], Iterable[Any]],
    batches: int,
    warmup: int,
    batch_size: int,
    seq_len: int,
) -> dict[str, float]:
    """Build the loader, take the first batch, skip `warmup`, then time `batches` batches."""
    started = time.perf_counter()
    stream = iter(make_loader())
    first = next(stream)
    touch(first)
    first_batch = time.perf_counter() - started
    for _ in range(warmup):
        touch(next(stream))
    steady = time.perf_counter()
    shape = None
    for _ in range(batches):
        batch = next(stream)
        touch(batch)
        shape = tuple((batch["input_ids"] if isinstance(batch, dict) else batch).shape)
    seconds = time.perf_counter() - steady
    samples = batches * batch_size
    return memory() | {
        "first_batch_seconds": first_batch,
        "samples_per_second": samples / seconds,
        "tokens_per_second": samples * seq_len / seconds,
        "mb_per_second": samples * seq_len * 2 / seconds / 1e6,
        "batch_shape": list(shape or ()),
    }


def memory() -> dict[str, float]:
    """This process's resident memory split into anonymous and file-backed (mapped files,
    which the kernel can drop and processes share), in MB; empty where /proc is missing."""
    found = {}
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(("RssAnon", "RssFile")):
                    key, value = line.split(":")
                    found[f"main_{key[3:].lower()}_mb"] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return found


def report(result: dict[str, Any]) -> None:
    print("RESULT " + json.dumps(result), flush=True)
