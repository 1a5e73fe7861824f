"""Resolved mixtures cached on disk, so ranks and restarts skip the catalog queries.

The key is the mixture's fingerprint plus the catalog file's size and modification time:
catalog versions are immutable and registering data rewrites the file, so a changed catalog
never matches an old entry. An entry is one `.npy` file per array and a JSON description,
each written atomically, the JSON last. The arrays are memory-mapped when loaded: a start
reads only the pages it uses, and the ranks and workers of one machine share one copy.

Example:
    >>> cached = load_resolved(spec, "/data/catalog.duckdb", "/tmp/cache")  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import io
import json
import os

import numpy as np

from mixplane.io.atomic import write_bytes
from mixplane.load.cache import cache_root
from mixplane.load.ranges import DocumentRanges
from mixplane.load.resolved import ResolvedMixture
from mixplane.mix.spec import MixtureSpec
from mixplane.mix.tree import MixtureTree

CACHE_FORMAT = 3


def entry_folder(spec: MixtureSpec, catalog_path: str, cache_dir: str | None) -> str:
    info = os.stat(catalog_path)
    key = json.dumps(
        [
            CACHE_FORMAT,
            spec.fingerprint(),
            os.path.abspath(catalog_path),
            info.st_size,
            info.st_mtime_ns,
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return os.path.join(cache_root(cache_dir), "plans", digest)


def save_resolved(resolved: ResolvedMixture, folder: str) -> None:
    """Write a resolved mixture's arrays and description under `folder`."""
    arrays: dict[str, np.ndarray] = {"appended": resolved.appended}
    for i, (ranges, lengths) in enumerate(zip(resolved.ranges, resolved.lengths, strict=True)):
        arrays[f"shard{i}"] = ranges.shard
        arrays[f"start{i}"] = ranges.start
        arrays[f"end{i}"] = ranges.end
        arrays[f"lengths{i}"] = lengths.astype(np.int64)  # the dtype the plan uses: no copy
        arrays[f"starts{i}"] = resolved.starts[i]
    for name, array in arrays.items():
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array))
        write_bytes(os.path.join(folder, f"{name}.npy"), buffer.getvalue())
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
    ranges, lengths, starts = [], [], []
    for i in range(len(tree.leaves)):
        ranges.append(
            DocumentRanges(shards, arrays[f"shard{i}"], arrays[f"start{i}"], arrays[f"end{i}"])
        )
        lengths.append(arrays[f"lengths{i}"])
        starts.append(arrays[f"starts{i}"])
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
    )
