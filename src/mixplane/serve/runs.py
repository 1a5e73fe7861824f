"""The processing history behind a catalog: every step found on the way back from its
registered datasets, with what each kept, excluded and quarantined.

A run's id is a hash of its manifest's URL, so requests name runs without naming files.

Example:
    >>> runs = find_runs(Catalog("catalog.duckdb"))  # doctest: +SKIP
    >>> runs[0]["kind"], runs[0]["excluded"]  # doctest: +SKIP
    ('process', 273)
"""

from __future__ import annotations

from typing import Any

import xxhash

from mixplane.catalog import Catalog
from mixplane.errors import MixplaneError
from mixplane.io.atomic import join_url
from mixplane.lineage import Step, trace
from mixplane.manifest import read_json

COUNTS = ("documents_in", "kept", "excluded", "quarantined")
DETAILS = ("excluded_by", "quarantined_by", "quarantine_examples", "seconds")


def run_id(manifest_url: str) -> str:
    """A run's id: stable for its manifest's URL, and no path.

    Example:
        >>> len(run_id("/data/clean/_manifest.json"))
        16
    """
    return xxhash.xxh3_64_hexdigest(manifest_url.encode())


def find_runs(catalog: Catalog) -> list[dict[str, Any]]:
    """Every step behind the catalog's datasets, newest first, with the datasets made from it
    (the step's own summary counts; `run_details` adds the breakdown by stage and reason)."""
    runs: dict[str, dict[str, Any]] = {}
    for version in catalog.versions():
        try:
            steps = trace(version.lineage_root, catalog.storage_options)
        except MixplaneError:
            continue  # a dataset registered without a manifest chain has no history to show
        for step in steps:
            run = runs.setdefault(step.manifest_url, _summary(step))
            if version.ref not in run["datasets"]:
                run["datasets"].append(version.ref)
    return sorted(runs.values(), key=lambda run: str(run["created_at"] or ""), reverse=True)


def run_details(
    runs: list[dict[str, Any]], run: str, storage_options: dict[str, Any]
) -> dict[str, Any] | None:
    """One of `runs` (from `find_runs`) with its statistics by stage and reason (None: no
    such run)."""
    for found in runs:
        if found["id"] == run:
            return found | _details(found["folder"], storage_options)
    return None


def _summary(step: Step) -> dict[str, Any]:
    stats = step.manifest.get("stats") or {}
    return {
        "id": run_id(step.manifest_url),
        "kind": step.kind,
        "folder": step.folder,
        "created_at": step.manifest.get("created_at"),
        "config_hash": step.manifest.get("config_hash"),
        **{name: stats.get(name) for name in COUNTS},
        "datasets": [],
    }


def _details(folder: str, storage_options: dict[str, Any]) -> dict[str, Any]:
    """The breakdown a processing step writes beside its manifest (`_stats.json`)."""
    try:
        stats = read_json(join_url(folder, "_stats.json"), storage_options)
    except (FileNotFoundError, ValueError):
        stats = {}
    return {name: stats.get(name) or {} for name in DETAILS}
