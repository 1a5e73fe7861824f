"""The plan service's side: resolve a posted mixture once on the service's catalog and hand
out the plan-cache entry's files, so a thousand ranks make one catalog query, not a thousand.

The files are those `plan_cache.save_resolved` writes (`plan.json` and one `.npy` per
array), byte for byte: a rank that downloads them holds what its own resolution would have
written (`mixplane.load.plan_service` is the other side).

Example:
    >>> store = PlanStore("catalog.duckdb", cache_dir="/var/cache/mixplane")  # doctest: +SKIP
    >>> store.resolve({"seq_len": 2048, "components": {...}})["files"][0]["name"]
    'plan.json'
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import threading
from typing import Any

from mixplane.errors import MixplaneError
from mixplane.load.catalog_copy import open_catalog
from mixplane.load.plan_cache import entry_folder
from mixplane.load.plan_service import FILE_NAME, LOCAL_FIELDS, PLAN_ID
from mixplane.load.resolve import resolve_mixture
from mixplane.manifest import file_digest
from mixplane.mix.spec import MixtureSpec

# Where a posted mixture would point the service at files: the service decides these.
SERVICE_FIELDS = LOCAL_FIELDS


class UnknownPlan(MixplaneError):
    """A plan id or file the service did not resolve."""


class PlanStore:
    """Resolved plans of this service: their folders and file lists, by plan id."""

    def __init__(self, catalog: str, cache_dir: str | None):
        self.catalog = os.path.abspath(catalog)
        self.cache_dir = cache_dir
        self._plans: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.served = 0

    def spec(self, mixture: dict[str, Any]) -> MixtureSpec:
        """A posted mixture as a spec on the service's catalog and cache."""
        if not isinstance(mixture, dict):
            raise MixplaneError("mixture: expected a mapping with seq_len and components")
        mine = {"catalog": self.catalog, "cache_dir": self.cache_dir}
        data = {k: v for k, v in mixture.items() if k not in SERVICE_FIELDS} | mine
        return MixtureSpec.parse(data, where="mixture")

    def resolve(self, mixture: dict[str, Any]) -> dict[str, Any]:
        """Resolve (or find already resolved) `mixture`: `{plan, fingerprint, files}`."""
        spec = self.spec(mixture)
        folder = entry_folder(spec, open_catalog(self.catalog, None), self.cache_dir)
        plan = os.path.basename(folder)
        with self._lock:
            known = self._plans.get(plan)
        if known is None:
            resolved = resolve_mixture(spec)  # one process of the machine queries, under a lock
            release_memory()
            if resolved.folder != folder:
                raise MixplaneError(f"the plan was resolved into {resolved.folder}, not {folder}")
            known = {"plan": plan, "fingerprint": resolved.fingerprint, "files": _files(folder)}
            with self._lock:
                self._plans[plan] = known | {"folder": folder}
        with self._lock:
            self.served += 1
        return {key: known[key] for key in ("plan", "fingerprint", "files")}

    def path(self, plan: str, name: str) -> str:
        """The local path of one file of a resolved plan; `UnknownPlan` for anything else."""
        if not PLAN_ID.match(plan) or not FILE_NAME.match(name):
            raise UnknownPlan(f"no plan file {plan}/{name}")
        with self._lock:
            known = self._plans.get(plan)
        if known is None or name not in {f["name"] for f in known["files"]}:
            raise UnknownPlan(f"no plan file {plan}/{name}; post the mixture to /api/plans first")
        return os.path.join(known["folder"], name)


def _files(folder: str) -> list[dict[str, Any]]:
    """`plan.json` first, then the arrays it names: name, size and xxh3_128 of each."""
    with open(os.path.join(folder, "plan.json")) as handle:
        arrays = json.load(handle)["arrays"]
    names = ["plan.json", *(f"{name}.npy" for name in arrays)]
    return [_describe(os.path.join(folder, name)) for name in names]


def _describe(path: str) -> dict[str, Any]:
    size, digest = file_digest(path)
    return {"name": os.path.basename(path), "size": size, "hash": digest}


def release_memory() -> None:
    """Hand the memory a resolution freed back to the system. It ran on a worker thread,
    whose allocator arena would otherwise keep hundreds of MB of a large catalog's arrays."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").malloc_trim(0)
