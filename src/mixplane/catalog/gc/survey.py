"""Gathering what a gc plan is made from: the catalog's versions and their files on disk
or object storage, the audit trail's runs, and the files this host's processes hold.

Example:
    >>> retention = Retention(keep_latest=2, pins={"web@1": "--keep"})
    >>> plan = survey("catalog.duckdb", retention)  # doctest: +SKIP
    >>> [removal.ref for removal in plan.removals]  # doctest: +SKIP
    ['web@2']
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from typing import Any

from mixplane.catalog.audit import runs
from mixplane.catalog.gc.files import version_files
from mixplane.catalog.gc.liveness import OpenFiles, open_files
from mixplane.catalog.gc.plan import GcPlan, InUse, Retention, VersionOnDisk, plan_gc
from mixplane.catalog.gc.record import collected
from mixplane.catalog.registry import Registry
from mixplane.catalog.remote_file import catalog_file
from mixplane.errors import ConfigError
from mixplane.io.atomic import is_local


def survey(
    catalog: str | os.PathLike,
    retention: Retention,
    storage_options: dict[str, Any] | None = None,
    holders: Callable[[], OpenFiles] = open_files,
) -> GcPlan:
    """The gc plan for the catalog at `catalog` (a local file, or one on object storage,
    read from a copy) under `retention`."""
    with catalog_file(catalog, storage_options) as copy:
        if copy.path is None:
            raise ConfigError(f"{os.fspath(catalog)}: no catalog there")
        with Registry(copy.path) as registry:
            versions = [registry.get(name, number) for name, number in registry.versions()]
            gone = collected(registry.connection)
    on_disk = [
        VersionOnDisk(
            version.name,
            version.version,
            tuple(version_files(version, storage_options)),
            gone.get(version.ref),
            version.uri,
        )
        for version in versions
    ]
    held = holders()
    live = {
        version.ref: held.holders([f.identity for f in version.files if is_local(f.url)])
        for version in on_disk
    }
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    in_use = InUse(now, runs(catalog, storage_options), live, held.hidden)
    return plan_gc(on_disk, retention, in_use)
