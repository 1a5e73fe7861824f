"""Carrying out a gc plan: record every version to collect in the catalog, then, version by
version, check again that no process of this host holds its files and remove them.

The record comes first (a catalog on object storage is changed in a copy and uploaded,
refused if another writer changed it meanwhile), so a loader that starts meanwhile is
refused with a clear error rather than finding half a version; when the check finds a
holder after all, the version is left whole (listed as skipped) and its record taken back.
A gc stopped halfway leaves versions recorded with files left: the next gc removes them.
Names are unlinked, never followed: a symlink goes as a link, its target stays; a hard
link's other names stay.

Example:
    >>> result = apply_plan(plan, "catalog.duckdb")  # doctest: +SKIP
    >>> result.files, result.bytes, result.skipped  # doctest: +SKIP
    (12, 81234, ())
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mixplane.catalog.gc.liveness import OpenFiles, open_files
from mixplane.catalog.gc.plan import GcPlan, Removal
from mixplane.catalog.gc.record import mark_collected, unmark_collected
from mixplane.catalog.registry import Registry
from mixplane.catalog.remote_file import catalog_file
from mixplane.io.atomic import is_local, local_path
from mixplane.io.urls import url_filesystem


@dataclass(frozen=True)
class GcResult:
    """What was removed, and the versions left whole because they were found in use."""

    removed: tuple[Removal, ...]
    skipped: tuple[tuple[str, str], ...]  # (ref, who holds it)

    @property
    def files(self) -> int:
        return sum(len(removal.files) for removal in self.removed)

    @property
    def bytes(self) -> int:
        return sum(removal.bytes for removal in self.removed)

    def summary(self) -> dict[str, Any]:
        return {
            "removed": [
                {"dataset": r.ref, "files": len(r.files), "bytes": r.bytes} for r in self.removed
            ],
            "skipped": [{"dataset": ref, "why": why} for ref, why in self.skipped],
            "files": self.files,
            "bytes": self.bytes,
        }


def apply_plan(
    plan: GcPlan,
    catalog: str | os.PathLike,
    storage_options: dict[str, Any] | None = None,
    holders: Callable[[], OpenFiles] = open_files,
) -> GcResult:
    """Remove the files `plan` lists, version by version (see the module's docstring).
    `holders` reads what the host's processes hold (the real `/proc` unless given)."""
    at = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    if not plan.removals:
        return GcResult((), ())
    with _registry(catalog, storage_options) as registry:
        for r in plan.removals:
            if r.collected_on is None:  # one an earlier gc recorded keeps its date
                mark_collected(registry.connection, r.name, r.version, len(r.files), r.bytes, at)
    removed, skipped = [], []
    for removal in plan.removals:
        local = [f.identity for f in (*removal.files, *removal.shared) if is_local(f.url)]
        found = holders().holders(local) if local else []
        if found:
            pid, path = found[0]
            skipped.append((removal, f"process {pid} opened {path} since the plan"))
            continue
        _remove([file.url for file in removal.files], storage_options)
        removed.append(removal)
    # Skipped versions are whole again, except those an earlier gc had started on.
    whole = [removal for removal, _ in skipped if removal.collected_on is None]
    if whole:
        with _registry(catalog, storage_options) as registry:
            for removal in whole:
                unmark_collected(registry.connection, removal.name, removal.version)
    return GcResult(tuple(removed), tuple((r.ref, why) for r, why in skipped))


@contextlib.contextmanager
def _registry(catalog: str | os.PathLike, storage_options: dict[str, Any] | None):
    """The catalog's registry, writable (a remote catalog's copy, uploaded after)."""
    with (
        catalog_file(catalog, storage_options, writable=True) as copy,
        Registry(copy.path, writable=True) as registry,
    ):
        yield registry


def _remove(urls: list[str], storage_options: dict[str, Any] | None) -> None:
    remote = [url for url in urls if not is_local(url)]
    for url in urls:
        if is_local(url):
            with contextlib.suppress(FileNotFoundError):  # gone since the plan: nothing to do
                os.unlink(local_path(url))
    if remote:
        fs, _ = url_filesystem(remote[0], storage_options)
        fs.rm([url_filesystem(url, storage_options)[1] for url in remote])
        fs.invalidate_cache()
