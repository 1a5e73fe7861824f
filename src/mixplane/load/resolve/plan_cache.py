"""Resolved mixtures cached on disk, so ranks and restarts skip the catalog queries.

The key is the mixture's fingerprint plus the catalog's identity (`LocalCatalog`): a local
file's path, size and modification time (registering data rewrites it), or the content
hash of a remote catalog's copy. So a changed catalog never matches an old entry, and the
ranks of a machine, or a later start, find the entry of the catalog they copied, however
often it was copied. An entry is one `.npy` file per array and a JSON description,
each written atomically, the JSON last. The arrays are memory-mapped when loaded: a start
reads only the pages it uses, and the ranks and workers of one machine share one copy.

The entry also holds the components' epoch orders (`EpochOrders`), computed by one process
of the machine when first needed and memory-mapped by every rank and worker, so that no
process holds a per-document array of its own.

Example:
    >>> folder = entry_folder(spec, open_catalog(spec.catalog, None), None)  # doctest: +SKIP
    >>> cached = load_resolved(spec, folder)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import shutil
from collections.abc import Callable

import numpy as np

from mixplane.io.atomic import TEMPORARY_SUFFIX, atomic_open, write_bytes
from mixplane.io.locks import locked
from mixplane.io.machine_cache import cache_root
from mixplane.load.plan.ranges import DocumentRanges, ShardKey
from mixplane.load.plan.resolved import ResolvedMixture
from mixplane.load.remote.catalog_copy import LocalCatalog
from mixplane.mix.spec import MixtureSpec
from mixplane.mix.tree import MixtureTree

CACHE_FORMAT = 6  # 5: remote datasets' registered manifests in `datasets`; 6: added columns


def entry_folder(spec: MixtureSpec, catalog: LocalCatalog, cache_dir: str | None) -> str:
    """The folder of the plan of `spec` over `catalog` (present or not)."""
    # The arrays are per leaf, in the order the spec lists them; the fingerprint sorts the
    # components, so the order is part of the key (a reordered spec has its own entry).
    leaves = [leaf.name for leaf in MixtureTree(spec).leaves]
    key = json.dumps([CACHE_FORMAT, spec.fingerprint(), catalog.identity, leaves])
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return os.path.join(cache_root(cache_dir), "plans", digest)


def save_resolved(resolved: ResolvedMixture, folder: str) -> None:
    """Write a resolved mixture's arrays and description under `folder` (the caller holds
    the entry's lock). A writer killed before `plan.json` leaves only files no reader takes
    (no description, or temporaries); the temporaries are removed here."""
    for stale in glob.glob(os.path.join(folder, f".*{TEMPORARY_SUFFIX}")):
        with contextlib.suppress(FileNotFoundError):
            os.remove(stale)  # a killed writer's
    arrays: dict[str, np.ndarray] = {"appended": resolved.appended}
    for i, (ranges, lengths) in enumerate(zip(resolved.ranges, resolved.lengths, strict=True)):
        arrays[f"shard{i}"] = ranges.shard
        arrays[f"start{i}"] = ranges.start
        arrays[f"end{i}"] = ranges.end
        arrays[f"bases{i}"] = ranges.bases
        arrays[f"lengths{i}"] = lengths.astype(np.int64)  # the dtype the plan uses: no copy
        arrays[f"starts{i}"] = resolved.starts[i]
        arrays[f"used{i}"] = resolved.shards_of(i)
    for name, array in arrays.items():
        with atomic_open(os.path.join(folder, f"{name}.npy")) as handle:
            np.save(handle, np.ascontiguousarray(array))
    description = {
        "format": CACHE_FORMAT,
        "arrays": sorted(arrays),
        "shards": [list(key) for key in resolved.shards],
        "eos_id": resolved.eos_id,
        "datasets": resolved.datasets,
        "fingerprint": resolved.fingerprint,
    }
    write_bytes(os.path.join(folder, "plan.json"), json.dumps(description).encode())


def load_resolved(spec: MixtureSpec, folder: str) -> ResolvedMixture | None:
    """The cached resolved mixture in `folder` (arrays memory-mapped), or None."""
    try:
        with open(os.path.join(folder, "plan.json")) as handle:
            description = json.load(handle)
        if description.get("format") != CACHE_FORMAT:
            return None
        arrays = {
            name: np.load(os.path.join(folder, f"{name}.npy"), mmap_mode="r")
            for name in description["arrays"]
        }
    except (FileNotFoundError, ValueError, OSError, KeyError):
        return None
    tree = MixtureTree(spec)
    shards = tuple((uri, stem) for uri, stem in description["shards"])
    ranges, lengths, starts, used = [], [], [], []
    for i in range(len(tree.leaves)):
        fields = (arrays[f"{name}{i}"] for name in ("shard", "start", "end", "bases"))
        ranges.append(PresummedRanges(shards, *fields))
        lengths.append(arrays[f"lengths{i}"])
        starts.append(arrays[f"starts{i}"])
        used.append(arrays[f"used{i}"])
    return ResolvedMixture(
        spec,
        tree,
        shards,
        ranges,
        lengths,
        starts,
        np.asarray(arrays["appended"]),
        description["eos_id"],
        description["datasets"],
        description["fingerprint"],
        folder,
        used,
    )


def drop_entries_reading(versions: dict[str, str], cache_dir: str | None) -> int:
    """Remove this machine's cached plans that read any of `versions` (`NAME@N` -> its
    folder: versions whose files gc removed); returns how many. A process that mapped one
    keeps its mapping."""
    if not versions:
        return 0
    dropped = 0
    for description in glob.glob(os.path.join(cache_root(cache_dir), "plans", "*", "plan.json")):
        try:
            with open(description) as handle:
                datasets = json.load(handle).get("datasets") or []
        except (OSError, ValueError):
            continue  # being written, or not a plan: left to its writer
        if any(
            isinstance(info, dict) and versions.get(info.get("dataset")) == info.get("uri")
            for info in datasets
        ):
            shutil.rmtree(os.path.dirname(description), ignore_errors=True)
            dropped += 1
    return dropped


class PresummedRanges(DocumentRanges):
    """`DocumentRanges` given their running document counts (`bases`): mapped from the cache,
    or those of ranges over the same documents. Summed again, they would cost each process a
    pass over the ranges and 8 bytes per range (about one range per two documents for a
    predicate on a property scattered through shards)."""

    def __init__(
        self,
        shards: tuple[ShardKey, ...],
        shard: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        bases: np.ndarray,
    ):
        values = {"shards": shards, "shard": shard, "start": start, "end": end, "bases": bases}
        for name, value in values.items():
            object.__setattr__(self, name, value)  # frozen, as its parent


Order = tuple[np.ndarray, np.ndarray]


class EpochOrders:
    """Components' epoch orders beside a cached plan: `orders/NAME-EPOCH.order.npy` and
    `.ends.npy` per component and epoch (NAME from `PackedComponent.name`).

    The first process of a machine to need one computes it under the component's lock file
    and writes both files atomically; the others wait for the lock, then map them. A file is
    only ever seen complete, so a killed writer leaves nothing that is read: its temporaries
    are removed by the next writer, which holds the lock. A process that maps epoch e deletes
    the component's epochs before e - 1: disk stays at about three epochs per component (12
    bytes per document each) however long training runs, and a rank that lags just behind
    an epoch boundary still finds the previous one. An older epoch is computed again if asked
    for (a restart from an old checkpoint); processes that mapped it keep their mapping.
    """

    def __init__(self, folder: str):
        self.folder = os.path.join(folder, "orders")

    def load(self, name: str, epoch: int, build: Callable[[], Order]) -> Order:
        paths = [os.path.join(self.folder, f"{name}-{epoch}.{part}.npy") for part in ORDER_PARTS]
        found = _mapped(paths)
        if found is None:
            os.makedirs(self.folder, exist_ok=True)
            with locked(os.path.join(self.folder, f"{name}.lock")):
                found = _mapped(paths)  # computed by the process this one waited for
                if found is None:
                    for stale in glob.glob(os.path.join(self.folder, f".{name}-*.tmp")):
                        os.remove(stale)  # a killed writer's
                    for path, array in zip(paths, build(), strict=True):
                        with atomic_open(path) as handle:
                            np.save(handle, array)
                    found = _mapped(paths)
        if found is None:
            raise OSError(f"{paths[0]}: written, but cannot be read back")
        self._prune(name, epoch)
        return found

    def _prune(self, name: str, epoch: int) -> None:
        old = [
            path
            for path in glob.glob(os.path.join(self.folder, f"{name}-*.npy"))
            if int(os.path.basename(path)[len(name) + 1 :].split(".")[0]) < epoch - 1
        ]
        if not old:
            return
        # Not while another process writes this component's orders (it may be an old one).
        with locked(os.path.join(self.folder, f"{name}.lock"), wait=False) as held:
            for path in old if held else []:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)


ORDER_PARTS = ("order", "ends")


def _mapped(paths: list[str]) -> Order | None:
    try:
        # Plain views of the mappings: slicing an np.memmap costs far more.
        order, ends = (np.load(path, mmap_mode="r").view(np.ndarray) for path in paths)
    except (FileNotFoundError, ValueError):
        return None
    return order, ends


def epoch_orders(resolved: ResolvedMixture) -> EpochOrders | None:
    """Where the plan of `resolved` keeps its epoch orders (None when it is not cached)."""
    return EpochOrders(resolved.folder) if resolved.folder is not None else None
