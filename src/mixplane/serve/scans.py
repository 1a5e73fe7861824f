"""The work of the service's scan processes: every catalog query, document read, lineage
walk, mixture preview and plan resolution a request asks for runs here, in a child process
that the service kills when the request's time is up (`mixplane.serve.pool`).

Each scan is a module-level function of the process's `Scope` and plain values; it returns
JSON values, which cross the pipe as JSON. `SCANS` lists every function a process runs: a
request chooses among them only through the routes, never by name.

Example:
    >>> scope = Scope(ScopeSpec("catalog.duckdb", cache_dir=None))  # doctest: +SKIP
    >>> count(scope, "source = 'wiki'", ())["documents"]  # doctest: +SKIP
    312
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import numpy as np

from mixplane.catalog import Catalog
from mixplane.catalog.composition import composition, histogram
from mixplane.catalog.dataset import AUDIO_TEXT, IMAGE_TEXT
from mixplane.catalog.sample import documents_at, json_value, read_document
from mixplane.errors import MixplaneError
from mixplane.lineage import document_origin, trace
from mixplane.load.remote.catalog_copy import open_catalog
from mixplane.load.resolve.plan_cache import entry_folder
from mixplane.load.resolve.query import resolve_mixture
from mixplane.load.resolve.takedowns import cached_pins
from mixplane.load.tools.preview import preview_mixture
from mixplane.serve.plans import plan_files, posted_spec, release_memory
from mixplane.serve.runs import find_runs, run_details

MAX_OFFSET = 1 << 53  # past any selection; a page there is empty
MAX_TEXT = 2000  # characters of a sample's text
MAX_DOCUMENT_TEXT = 1 << 20  # of one document's


class NotFound(MixplaneError):
    """A dataset, shard, document or run the request names does not exist (404)."""


@dataclass(frozen=True)
class ScopeSpec:
    """What a scan process works on: the service's catalog and cache folder, and the policy
    import paths posted mixtures may name besides the built-in ones."""

    catalog: str
    cache_dir: str | None
    policies: tuple[str, ...] = ()


class Scope:
    """A scan process's catalog (opened per scan, as `Catalog` always is)."""

    def __init__(self, spec: ScopeSpec):
        self.spec = spec
        self.catalog_path = os.path.abspath(spec.catalog)
        self.catalog = Catalog(self.catalog_path)

    def posted(self, mixture: dict[str, Any]):
        return posted_spec(mixture, self.catalog_path, self.spec.cache_dir, self.spec.policies)


def count(scope: Scope, where: str, datasets: list[str]) -> dict[str, Any]:
    """Documents and tokens matching `where`, per dataset and in all."""
    with scope.catalog.session() as session:
        return session.select(where, datasets or None).summary()


def samples(scope: Scope, where: str, datasets: list[str], k: int, offset: int) -> dict[str, Any]:
    """A page of matching documents with their text: `k` of them from the `offset`-th, in the
    catalog's order (datasets, shards, documents), and how many match in all."""
    with scope.catalog.session() as session:
        kinds = {v.ref: v.kind for v in session.resolve(datasets or None)}
        selection = session.select(where, datasets or None)
        found, skip = [], offset
        for part in selection:
            if skip >= part.documents:
                skip -= part.documents
                continue
            positions = np.arange(skip, min(part.documents, skip + k - len(found)))
            found += [(row, kinds.get(part.dataset)) for row in documents_at(part, positions)]
            skip = 0
            if len(found) >= k:
                break
        total = sum(part.documents for part in selection)
    return {
        "where": where,
        "offset": offset,
        "total": total,
        "samples": [_sample(row, kind) for row, kind in found],
    }


def composition_of(
    scope: Scope, by: str, where: str, datasets: list[str], bins: int, scale: str
) -> dict[str, Any]:
    with scope.catalog.session() as session:
        return composition(session, by, where, datasets or None, bins, scale=scale)


def histogram_of(
    scope: Scope, column: str, where: str, datasets: list[str], bins: int, scale: str
) -> dict[str, Any]:
    with scope.catalog.session() as session:
        return histogram(session, column, where, datasets or None, bins, scale)


def document(scope: Scope, dataset: str, shard: str, index: int) -> dict[str, Any]:
    """One document: properties, text, and its way back to the raw input it came from."""
    version = _version(scope, dataset)
    check_document(version, shard, index)
    options = scope.catalog.storage_options
    added = [(column.name, column.folder) for column in version.added]
    found = read_document(version.uri, shard, index, options, added)
    steps = trace(version.lineage_root, options)
    document_id = found["properties"].get("id")
    origin = document_origin(steps, str(document_id), options) if document_id else []
    text, properties = found["text"], found["properties"]
    return _document(
        version.ref, shard, index, text, properties, MAX_DOCUMENT_TEXT, version.kind
    ) | {
        "lineage": [json_value(step.summary()) for step in steps],
        "origin": json_value(origin),
    }


def lineage(scope: Scope, dataset: str) -> dict[str, Any]:
    """The steps that made a dataset version, back to its raw inputs."""
    version = _version(scope, dataset)
    steps = trace(version.lineage_root, scope.catalog.storage_options)
    folders = {step.folder for step in steps}
    raw = [item for step in steps for item in step.raw_inputs(folders)]
    return {
        "dataset": version.ref,
        "steps": [json_value(step.summary()) for step in steps],
        "raw_inputs": json_value(raw),
    }


def runs(scope: Scope) -> list[dict[str, Any]]:
    """Processing steps behind the catalog's datasets, newest first."""
    return json_value(find_runs(scope.catalog))


def run(scope: Scope, run_id: str) -> dict[str, Any]:
    """One run, with what it excluded and quarantined by stage and reason."""
    found = run_details(find_runs(scope.catalog), run_id, scope.catalog.storage_options)
    if found is None:
        raise NotFound(f"no run {run_id!r}; see /api/runs")
    return json_value(found)


def preview(scope: Scope, mixture: dict[str, Any], steps: int, show: int) -> dict[str, Any]:
    """Requested vs realized shares of a posted mixture over its first `steps`."""
    report = preview_mixture(scope.posted(mixture), steps, show=show, catalog=scope.catalog)
    release_memory()
    return json_value(report)


def plan(scope: Scope, mixture: dict[str, Any]) -> dict[str, Any]:
    """Resolve a posted mixture into the plan cache (or find it there): `{plan, fingerprint,
    files, folder}`. A process killed while resolving leaves no entry that reads as whole:
    each file is written under a temporary name and `plan.json`, which marks it whole, last."""
    spec = scope.posted(mixture)
    folder = entry_folder(spec, open_catalog(scope.catalog_path, None), spec.cache_dir)
    resolved = resolve_mixture(spec)  # refuses what takedowns: refuse refuses
    release_memory()
    if resolved.folder != folder:
        raise MixplaneError(f"the plan was resolved into {resolved.folder}, not {folder}")
    return {
        "plan": os.path.basename(folder),
        "fingerprint": resolved.fingerprint,
        "files": plan_files(folder),
        "folder": folder,
        # What the client warns about: the findings kept beside the plan.
        "superseded": cached_pins(spec, scope.catalog_path, folder),
    }


def trace_step(
    scope: Scope,
    mixture: dict[str, Any],
    request: dict[str, Any],
    weight_log: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    """What a step (or one sequence) of a posted mixture held: each document of each
    sequence, as `mixplane.load.tools.trace.trace` finds it (`weight_log`: the run's)."""
    from mixplane.lineage import Origins
    from mixplane.load.tools.trace import trace  # the loader only when asked

    spec = scope.posted(mixture)
    origins = Origins(spec.storage_options).find
    found = trace(spec, request, catalog=scope.catalog, weight_log=weight_log, origins=origins)
    return json_value(found)


SCANS = {
    scan.__name__: scan
    for scan in (
        count,
        samples,
        composition_of,
        histogram_of,
        document,
        lineage,
        runs,
        run,
        preview,
        plan,
        trace_step,
    )
}


def _version(scope: Scope, ref: str):
    try:
        return scope.catalog.get(ref)
    except MixplaneError as error:
        raise NotFound(str(error)) from None


def check_document(version, shard: str, index: int) -> None:
    """`NotFound` unless the version lists `shard` and it holds document `index`: only the
    catalog's own shard names reach a file path."""
    stems = {entry.stem: entry for entry in version.shards}
    if shard not in stems:
        raise NotFound(f"{version.ref} has no shard {shard!r}")
    if not 0 <= index < stems[shard].documents:
        raise NotFound(f"{version.ref} {shard} has {stems[shard].documents} documents")


def _sample(row: dict[str, Any], kind: str | None) -> dict[str, Any]:
    """A row of `documents_at` as the API shows a document."""
    place = (row.pop("dataset"), row.pop("shard"), row.pop("index"))
    return _document(*place, row.pop("text"), row, kind=kind)


def _document(
    dataset: str,
    shard: str,
    index: int,
    text: str | None,
    properties: dict[str, Any],
    limit: int = MAX_TEXT,
    kind: str | None = None,
) -> dict[str, Any]:
    """A document as the API shows it; `kind` (its version's) says which media route holds
    its image (`thumbnail`) or clip (`audio`)."""
    truncated = text is not None and len(text) > limit
    place = f"{dataset}/{quote(shard, safe='')}/{index}"
    return {
        "dataset": dataset,
        "shard": shard,
        "index": index,
        "properties": json_value(properties),
        "text": text[:limit] if truncated else text,
        "truncated": truncated,
        "thumbnail": f"/api/thumbnails/{place}" if kind == IMAGE_TEXT else None,
        "audio": f"/api/audio/{place}" if kind == AUDIO_TEXT else None,
    }
