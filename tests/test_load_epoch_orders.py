"""Epoch orders kept beside the cached plan: computed once per machine, memory-mapped by every
rank and worker, and the same stream as the orders computed in memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mixtures import three_sources

from mixplane.catalog import Catalog
from mixplane.load import MixtureDataset
from mixplane.load.plan import samples
from mixplane.load.plan.packing import PackedComponent
from mixplane.load.resolve.plan_cache import EpochOrders
from mixplane.load.tools.synthetic import write_catalog
from mixplane.load.torch import torch_loader

SEQ_LEN = 32


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    # Small components in several shards each: a few hundred sequences go through several
    # epochs of every one, and a shuffle window has shards to choose from.
    folder = tmp_path_factory.mktemp("orders")
    return write_catalog(
        str(folder),
        {
            "wiki": {"documents": 60, "seed": 1, "source": "wiki", "mean_tokens": 20},
            "code": {"documents": 40, "seed": 2, "source": "code", "mean_tokens": 30},
            "web": {"documents": 90, "seed": 3, "source": "web", "mean_tokens": 15},
        },
    )


def mixture(catalog: str, cache: Path, **fields) -> dict:
    return {
        "catalog": catalog,
        "cache_dir": str(cache),
        "seq_len": SEQ_LEN,
        "seed": 7,
        "eos_id": 0,
        "components": three_sources(),
        **fields,
    }


def order_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("plans/*/orders/*.npy"))


def lengths_of(documents: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 50, documents)


@pytest.mark.parametrize("window", [None, 2])
def test_orders_on_disk_are_the_orders_in_memory(tmp_path, window):
    lengths = lengths_of(500, 0)
    runs = (np.arange(10) % 7, np.full(10, 50))  # ten runs of 50 documents over 7 shards
    options = {"seq_len": 16, "seed": 3, "key": "wiki", "runs": runs, "window": window}
    memory = PackedComponent(lengths, **options)
    disk = PackedComponent(lengths, **options, orders=EpochOrders(str(tmp_path)))
    for epoch in (0, 1, 2, 5, 1):
        for mine, theirs in zip(disk.order(epoch), memory.order(epoch), strict=True):
            assert np.array_equal(mine, theirs) and mine.dtype == theirs.dtype
            assert isinstance(mine.base, np.memmap)  # mapped, not a copy
    indices = np.arange(0, 6 * disk.sequences_per_epoch, 3)
    for field in ("row", "document", "begin", "stop", "column", "ordinal"):
        assert np.array_equal(
            getattr(disk.spans(indices), field), getattr(memory.spans(indices), field)
        )


@pytest.fixture
def shared_orders(monkeypatch) -> None:
    """The catalog's small components keep their orders on disk too, as large ones do."""
    monkeypatch.setattr(samples, "SHARED_ORDERS_FROM", 0)  # forked workers inherit it


@pytest.mark.parametrize("window", [None, 1])
def test_the_stream_with_orders_on_disk_is_the_stream_in_memory(
    catalog, tmp_path, window, shared_orders
):
    spec = mixture(catalog, tmp_path / "cache", shuffle_window=window)
    on_disk = MixtureDataset(spec)
    in_memory = MixtureDataset(spec, catalog=Catalog(catalog))  # no cache entry: in memory
    assert on_disk.resolved.folder is not None and in_memory.resolved.folder is None
    positions = np.arange(600)
    epochs = on_disk.plan.epochs_at(len(positions))
    assert epochs.min() > 3  # every component goes through several epochs
    got, want = on_disk.read_positions(positions), in_memory.read_positions(positions)
    for key in ("input_ids", "document_ids", "component"):
        assert np.array_equal(got[key], want[key]), key
    # On disk, epochs before the previous one were deleted as the reader moved on.
    kept = {int(path.name.split("-")[1].split(".")[0]) for path in order_files(tmp_path / "cache")}
    assert min(kept) >= int(epochs.min()) - 2 and 0 not in kept
    # An old epoch asked for again (a restart from an old checkpoint) is computed again.
    for mine, theirs in zip(on_disk.plan.components, in_memory.plan.components, strict=True):
        for got_array, want_array in zip(mine.order(0), theirs.order(0), strict=True):
            assert isinstance(got_array.base, np.memmap)
            assert np.array_equal(got_array, want_array)


COUNTED = """
import hashlib, os, sys, time
import numpy as np
from mixplane.load.plan.packing import PackedComponent
from mixplane.load.resolve.plan_cache import EpochOrders

folder, counter, ready, peers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
build = PackedComponent.build_order

def counted(self, epoch):
    with open(counter, "a") as handle:
        handle.write(f"{os.getpid()} {epoch}\\n")
    time.sleep(0.5)  # long enough for the other process to ask meanwhile
    return build(self, epoch)

PackedComponent.build_order = counted
lengths = np.random.default_rng(0).integers(1, 50, 20_000)
packed = PackedComponent(lengths, 16, seed=3, key="wiki", orders=EpochOrders(folder))
open(f"{ready}-{os.getpid()}", "w").close()
while len([n for n in os.listdir(os.path.dirname(ready)) if n.startswith("ready-")]) < peers:
    time.sleep(0.01)  # start together
order, ends = packed.order(0)
print(int(ends[-1]), hashlib.sha256(order.tobytes()).hexdigest())
"""


def test_processes_starting_together_compute_an_order_once(tmp_path):
    script, counter = tmp_path / "counted.py", tmp_path / "counter"
    script.write_text(COUNTED)
    (tmp_path / "sync").mkdir()
    args = [str(tmp_path / "cache"), str(counter), str(tmp_path / "sync" / "ready"), "3"]
    processes = [
        subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outputs = [process.communicate(timeout=120)[0] for process in processes]
    assert all(process.returncode == 0 for process in processes)
    assert len(set(outputs)) == 1  # the same order everywhere
    assert len(counter.read_text().splitlines()) == 1  # computed by one of them


KILLED = """
import os, signal, sys
import numpy as np
from mixplane.load.resolve.plan_cache import EpochOrders

folder, victim = sys.argv[1], sys.argv[2]
save = np.save

def dying(handle, array):
    # Half of the file, then the writer is killed as by the OOM killer or a preemption.
    if array.dtype == np.dtype(victim):
        handle.write(b"\\x93NUMPY" + b"\\0" * (array.nbytes // 2))
        handle.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    save(handle, array)

np.save = dying
EpochOrders(folder).load("c", 0, lambda: (np.arange(1000, dtype=np.int32), np.arange(1000)))
"""


@pytest.mark.parametrize("victim", ["int32", "int64"])  # the first file, or the second
def test_a_killed_writer_leaves_nothing_read_as_complete(tmp_path, victim):
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    killed = subprocess.run([sys.executable, str(script), str(tmp_path), victim], check=False)
    assert killed.returncode == -9
    folder = tmp_path / "orders"
    assert list(folder.glob(".c-0.*.tmp"))  # what it was writing, under a temporary name
    assert not (folder / "c-0.ends.npy").exists()
    calls = []

    def build() -> tuple[np.ndarray, np.ndarray]:
        calls.append(1)
        return np.arange(1000, dtype=np.int32)[::-1].copy(), np.arange(1000) * 2

    order, ends = EpochOrders(str(tmp_path)).load("c", 0, build)
    assert calls == [1]  # computed again: a lone or partial file is not taken as complete
    assert order[0] == 999 and ends[-1] == 1998
    assert not list(folder.glob(".*.tmp"))  # the killed writer's temporaries are gone


def test_dataloader_workers_map_the_same_files(catalog, tmp_path, monkeypatch, shared_orders):
    spec = mixture(catalog, tmp_path / "cache", global_batch_size=4)
    expected = MixtureDataset(spec, catalog=Catalog(catalog)).batches(4)
    log, load = tmp_path / "mapped", EpochOrders.load
    orders = str(tmp_path / "cache" / "plans")  # not what other tests' processes mapped

    def logged(self, name, epoch, build):
        found = load(self, name, epoch, build)
        with open("/proc/self/maps") as maps:
            # address, permissions, offset, device, inode, path: the files as mapped
            mapped = {tuple(line.split()[4:6]) for line in maps if orders in line}
        with open(log, "a") as handle:
            for inode, path in sorted(mapped):
                handle.write(f"{os.getpid()} {inode} {path}\n")
        return found

    monkeypatch.setattr(EpochOrders, "load", logged)  # forked workers inherit the patch
    dataset = MixtureDataset(spec, read_ahead=64)  # workers read blocks of 8 sequences
    loader = torch_loader(dataset, batch_size=4, num_workers=2, multiprocessing_context="fork")
    for count, batch in enumerate(loader):
        want = next(expected)
        assert np.array_equal(batch["input_ids"].numpy(), want["input_ids"])
        if count == 60:  # several epochs of every component
            break
    by_process: dict[str, set[tuple[str, str]]] = {}
    for line in log.read_text().splitlines():
        pid, inode, path = line.split()
        by_process.setdefault(pid, set()).add((inode, path))
    assert len(by_process) == 2 and str(os.getpid()) not in by_process  # the two workers
    first, second = by_process.values()
    assert first & second  # the same files (same inodes) mapped in both workers
    # Each order was written once: every path seen always had the same inode.
    assert len({path for _, path in first | second}) == len(first | second)


def test_small_components_keep_their_orders_in_memory(catalog, tmp_path, monkeypatch):
    """A block of the tiny catalog spans hundreds of epochs of each component: none is
    written to disk (a file and an fsync for each cost seconds), and the stream is the
    one whose orders are kept on disk."""
    spec = mixture(catalog, tmp_path / "cache")
    dataset = MixtureDataset(spec)
    assert dataset.resolved.folder is not None  # a cached plan, which could hold orders
    positions = np.arange(dataset.read_ahead)
    assert dataset.plan.epochs_at(len(positions)).min() > 100
    got = dataset.read_positions(positions)
    assert order_files(tmp_path / "cache") == []
    monkeypatch.setattr(samples, "SHARED_ORDERS_FROM", 0)
    want = MixtureDataset(mixture(catalog, tmp_path / "shared")).read_positions(positions[:600])
    assert order_files(tmp_path / "shared")
    for key in ("input_ids", "document_ids", "component"):
        assert np.array_equal(got[key][:600], want[key]), key
