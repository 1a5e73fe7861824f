"""Applying a takedown to a catalog: find, write, register, record.

For the latest version of every dataset, the documents the request names are found (see
`matches`); each dataset holding some gets a new version without them (see `version`),
registered as its next version, so mixtures that name datasets without `@N` read it from
then on. The new versions and the request's rows in the catalog's `takedowns` table are
committed in one transaction. A request that matches nothing changes nothing, so running
the same takedown twice is a no-op.

Example:
    >>> request = TakedownRequest.build(domains=["example.com"], reference="T-1")
    >>> result = apply_takedown(Catalog("catalog.duckdb"), request)  # doctest: +SKIP
    >>> [(d["from"], d["to"], d["documents"]) for d in result.datasets]  # doctest: +SKIP
    [('web@3', 'web@4', 41)]
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mixplane.catalog.catalog import Catalog
from mixplane.catalog.dataset import MEDIA_KINDS
from mixplane.catalog.registry import Registry
from mixplane.catalog.remote_file import catalog_to_update
from mixplane.catalog.takedown import ledger
from mixplane.catalog.takedown.matches import find_matches
from mixplane.catalog.takedown.plan import VersionPlan, new_folder
from mixplane.catalog.takedown.request import TakedownRequest
from mixplane.catalog.takedown.version import write_version
from mixplane.errors import MixplaneError
from mixplane.io.atomic import is_local


@dataclass
class TakedownResult:
    """What a takedown found and did (or, in a dry run, would do)."""

    request: TakedownRequest
    at: str
    dry_run: bool
    datasets: list[dict[str, Any]] = field(default_factory=list)
    # Latest versions without a `url` property, where domains and URLs cannot match (only
    # ids were looked for): listed when the request has domains or URLs.
    without_url: list[str] = field(default_factory=list)

    @property
    def documents(self) -> int:
        return sum(d["documents"] for d in self.datasets)

    @property
    def tokens(self) -> int:
        return sum(d["tokens"] for d in self.datasets)

    def to_json(self) -> dict[str, Any]:
        return self.request.describe() | {
            "at": self.at,
            "dry_run": self.dry_run,
            "removed": {"documents": self.documents, "tokens": self.tokens},
            "datasets": self.datasets,
            "without_url": self.without_url,
        }


def plan_takedown(
    catalog: Catalog, request: TakedownRequest, output: str | None = None
) -> tuple[list[VersionPlan], list[str]]:
    """What the request removes from the latest version of each dataset, and the versions
    without a `url` property (where only ids can match); refuses datasets it cannot change
    (image-text data, or a request that would remove every document)."""
    with catalog.session() as session:
        versions = session.registry.latest()
        if not versions:
            raise MixplaneError(f"{catalog.path} has no datasets yet; nothing to take down")
        without_url = [
            version.ref
            for version in versions
            if (request.domains or request.urls)
            and not any(name.lower() == "url" for name in version.schema)
        ]
        found = find_matches(session, versions, request)
        plans = []
        for ref, matches in sorted(found.items()):
            version = matches.version
            if version.kind in MEDIA_KINDS:
                what = version.kind.replace("_", "-")
                raise MixplaneError(
                    f"{ref}: {matches.documents:,} {what} samples match the takedown; "
                    "takedowns rewrite token shards only: filter the media data with a "
                    "processing run (opt_out stage with domains_files) and register it again"
                )
            if matches.documents == version.documents:
                raise MixplaneError(
                    f"{ref}: the takedown would remove all {version.documents:,} documents; "
                    "a version cannot be empty: stop using the dataset instead"
                )
            manifest = session.registry.manifest(version.name, version.version)
            plans.append(VersionPlan(matches, manifest, new_folder(version, output)))
    return plans, without_url


@dataclass(frozen=True)
class Progress:
    """Callbacks while a takedown writes: `on_planned(shards to rewrite)`, then
    `on_shard(name)` after each."""

    on_planned: Callable[[int], None] = lambda _: None
    on_shard: Callable[[str], None] = lambda _: None


def apply_takedown(
    catalog: Catalog,
    request: TakedownRequest,
    output: str | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> TakedownResult:
    """Remove the documents `request` names from the latest version of every dataset (see
    the module's description); with `dry_run`, only say what would be removed. A catalog
    on object storage is copied, changed and uploaded (refused if it changed meanwhile)."""
    progress = progress or Progress()
    if is_local(catalog.path):
        return _apply(catalog, request, output, dry_run, progress)
    with catalog_to_update(catalog.path, catalog.storage_options) as copy:
        local = Catalog(copy.path, catalog.storage_options, catalog.metadata_cache)
        result = _apply(local, request, output, dry_run, progress)
        copy.changed = bool(result.datasets) and not dry_run
    return result


def _apply(
    catalog: Catalog,
    request: TakedownRequest,
    output: str | None,
    dry_run: bool,
    progress: Progress,
) -> TakedownResult:
    at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    plans, without_url = plan_takedown(catalog, request, output)
    result = TakedownResult(request, at, dry_run, without_url=without_url)
    for plan in plans:
        result.datasets.append(
            {
                "from": plan.version.ref,
                "to": None,  # the version registered, once it is
                "folder": plan.folder,
                "documents": plan.matches.documents,
                "tokens": plan.matches.tokens,
                "shards_rewritten": plan.rewritten(),
                "shards": len(plan.version.shards),
            }
        )
    if dry_run or not plans:
        return result
    options = catalog.storage_options
    progress.on_planned(sum(plan.rewritten() for plan in plans))
    scans = [write_version(plan, request, at, options, progress.on_shard) for plan in plans]
    with Registry(catalog.path, writable=True) as registry:
        made = _record(registry, plans, scans, request, at)
    for described, ref in zip(result.datasets, made, strict=True):
        described["to"] = ref
    return result


def _record(registry, plans, scans, request: TakedownRequest, at: str) -> list[str]:
    ledger.create_table(registry)
    refs = []
    with registry.transaction():
        for plan, scan in zip(plans, scans, strict=True):
            old = plan.version
            version, _ = registry.add_next(scan, old.name, after=old.version)
            row = ledger.TakedownRow(
                request.request_id,
                request.reference,
                request.criteria,
                at,
                old.name,
                old.version,
                version.version,
                plan.matches.documents,
                plan.matches.tokens,
                plan.rewritten(),
            )
            ledger.insert(registry, row)
            refs.append(version.ref)
    return refs
