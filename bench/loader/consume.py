"""The fixed consumer every tool feeds: time to first batch, then steady batches per second
and CPU seconds of the whole process tree.

Imported by the runners of every tool, including those in other virtual environments, so it
needs only torch, numpy and the standard library. What a tool handed out is kept for the
driver to compare: a short hash of every sequence before the clock starts, and during the
timed batches the sum of their first tokens (which `touch` reads anyway).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options every runner takes: the data folder and how to feed the consumer."""
    parser.add_argument("data", type=Path)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--batches", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--hashes", action="store_true", help="report the untimed sequences")


def touch(batch: Any) -> int:
    """Use every batch the same way: read one token of every sequence (tensor or array)."""
    ids = batch["input_ids"] if isinstance(batch, dict) else batch
    return int(torch.as_tensor(ids[:, 0]).long().sum())


def sequence_hashes(batch: Any) -> list[str]:
    """A short hash of every sequence's token values (as uint16, whatever dtype the tool
    hands out): equal hashes, equal sequences."""
    ids = batch["input_ids"] if isinstance(batch, dict) else batch
    rows = np.ascontiguousarray(np.asarray(ids).astype("<u2"))
    return [hashlib.blake2b(row.tobytes(), digest_size=8).hexdigest() for row in rows]


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process and its live descendants,
    DataLoader workers included, from /proc (Linux; NaN elsewhere)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents, used = {}, {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return float("nan")
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        used[int(entry)] = int(fields[11]) + int(fields[12])  # utime, stime
    tree, grown = {os.getpid()}, True
    while grown:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grown = bool(more)
    return sum(used.get(pid, 0) for pid in tree) / ticks


def consume(
    make_loader: Callable[[], Iterable[Any]],
    batches: int,
    warmup: int,
    batch_size: int,
    seq_len: int,
    hashes: bool = False,
) -> dict[str, Any]:
    """Build the loader, take the first batch, skip `warmup`, then time `batches` batches.
    With `hashes`, the result lists a hash of every sequence before the clock started."""
    started = time.perf_counter()
    stream = iter(make_loader())
    first = next(stream)
    touch(first)
    first_batch = time.perf_counter() - started
    seen = sequence_hashes(first) if hashes else []
    for _ in range(warmup):
        batch = next(stream)
        touch(batch)
        seen += sequence_hashes(batch) if hashes else []
    cpu, steady = tree_cpu_seconds(), time.perf_counter()
    shape, checksum = None, 0
    for _ in range(batches):
        batch = next(stream)
        checksum += touch(batch)
        shape = tuple((batch["input_ids"] if isinstance(batch, dict) else batch).shape)
    seconds = time.perf_counter() - steady
    cpu = tree_cpu_seconds() - cpu
    samples = batches * batch_size
    return (
        memory()
        | {
            "first_batch_seconds": first_batch,
            "samples_per_second": samples / seconds,
            "tokens_per_second": samples * seq_len / seconds,
            "mb_per_second": samples * seq_len * 2 / seconds / 1e6,
            "cpu_seconds": cpu,
            "cpu_ms_per_batch": cpu / batches * 1e3,
            "batch_shape": list(shape or ()),
            "first_token_sum": checksum,
        }
        | ({"hashes": seen} if hashes else {})
    )


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
