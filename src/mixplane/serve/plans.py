"""The plan service's side: resolve a posted mixture once on the service's catalog and hand
out the plan-cache entry's files, so a thousand ranks make one catalog query, not a thousand.

The files are those `plan_cache.save_resolved` writes (`plan.json` and one `.npy` per
array), byte for byte: a rank that downloads them holds what its own resolution would have
written (`mixplane.load.resolve.plan_service` is the other side). The resolution itself runs in a
scan process (`mixplane.serve.scans.plan`); `PlanStore` remembers what it resolved, so that
only those files are ever served.

Example:
    >>> store = PlanStore()
    >>> store.path("..", "passwd")
    Traceback (most recent call last):
    ...
    mixplane.serve.plans.UnknownPlan: no plan file ../passwd
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import threading
from collections.abc import Collection
from typing import Any

from mixplane.errors import MixplaneError
from mixplane.load.resolve.plan_service import FILE_NAME, LOCAL_FIELDS, PLAN_ID
from mixplane.manifest import file_digest
from mixplane.mix.spec import MixtureSpec

# Where a posted mixture would point the service at files or other services: the service
# decides these, so they are dropped from what is posted.
SERVICE_FIELDS = LOCAL_FIELDS


class UnknownPlan(MixplaneError):
    """A plan id or file the service did not resolve."""


def posted_spec(
    mixture: dict[str, Any], catalog: str, cache_dir: str | None, policies: Collection[str]
) -> MixtureSpec:
    """A posted mixture as a spec on the service's catalog and cache. Its `policy` may name
    the built-in policies and `policies` only: nothing a request names is imported."""
    if not isinstance(mixture, dict):
        raise MixplaneError("mixture: expected a mapping with seq_len and components")
    mine = {"catalog": catalog, "cache_dir": cache_dir}
    data = {k: v for k, v in mixture.items() if k not in SERVICE_FIELDS} | mine
    return MixtureSpec.parse(data, where="mixture", policies=policies)


class PlanStore:
    """Resolved plans of this service: their folders and file lists, by plan id."""

    def __init__(self) -> None:
        self._plans: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.served = 0

    def register(self, resolved: dict[str, Any]) -> dict[str, Any]:
        """Remember a resolution (`scans.plan`'s answer) and count it served; returns what
        the client is told: `{plan, fingerprint, files, superseded}`."""
        with self._lock:
            self._plans[resolved["plan"]] = resolved
            self.served += 1
        return {key: resolved[key] for key in ("plan", "fingerprint", "files", "superseded")}

    def path(self, plan: str, name: str) -> str:
        """The local path of one file of a resolved plan; `UnknownPlan` for anything else."""
        if not PLAN_ID.match(plan) or not FILE_NAME.match(name):
            raise UnknownPlan(f"no plan file {plan}/{name}")
        with self._lock:
            known = self._plans.get(plan)
        if known is None or name not in {f["name"] for f in known["files"]}:
            raise UnknownPlan(f"no plan file {plan}/{name}; post the mixture to /api/plans first")
        return os.path.join(known["folder"], name)


def plan_files(folder: str) -> list[dict[str, Any]]:
    """`plan.json` first, then the arrays it names: name, size and xxh3_128 of each."""
    with open(os.path.join(folder, "plan.json")) as handle:
        arrays = json.load(handle)["arrays"]
    names = ["plan.json", *(f"{name}.npy" for name in arrays)]
    return [_describe(os.path.join(folder, name)) for name in names]


def _describe(path: str) -> dict[str, Any]:
    size, digest = file_digest(path)
    return {"name": os.path.basename(path), "size": size, "hash": digest}


def release_memory() -> None:
    """Hand the memory a resolution freed back to the system: the scan process that ran it
    would otherwise keep hundreds of MB of a large catalog's arrays."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").malloc_trim(0)
