"""Routes that read the catalog: datasets, counts, samples, composition, histograms,
documents and lineage. Every query runs through the service's `QueryRunner` (time limit,
cached answers)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query

from mixplane._version import __version__
from mixplane.catalog.catalog import CatalogSession
from mixplane.catalog.composition import MAX_BINS, composition, histogram
from mixplane.catalog.sample import json_value, read_document, sample_documents
from mixplane.errors import MixplaneError
from mixplane.lineage import document_origin, trace
from mixplane.refs import split_refs
from mixplane.serve import models
from mixplane.serve.service import Service, service

router = APIRouter(prefix="/api", tags=["catalog"])
MAX_SAMPLES = 50
MAX_TEXT = 2000  # characters of a sample's text
MAX_DOCUMENT_TEXT = 1 << 20  # of one document's
EVERYTHING = "TRUE"

DatasetsQuery = Query(
    None, description="NAME@N or NAME (latest), repeated or comma-separated; default: all"
)
WhereQuery = Query(EVERYTHING, max_length=10_000, description="a predicate over properties")


@router.get("/health", response_model=models.Health)
def health(svc: Service = Depends(service)) -> dict[str, Any]:
    return {"status": "ok", "version": __version__, "catalog": svc.settings.catalog}


@router.get("/datasets", response_model=list[models.DatasetInfo])
def datasets(all: bool = False, svc: Service = Depends(service)) -> list[dict[str, Any]]:
    """The latest version of every dataset (with `all`, every version)."""
    catalog = svc.queries.catalog
    versions = catalog.versions() if all else catalog.latest()
    return [version.summary() for version in versions]


@router.get("/datasets/{name}", response_model=models.DatasetVersions)
def dataset_versions(name: str, svc: Service = Depends(service)) -> dict[str, Any]:
    """Every version of one dataset, oldest first."""
    found = [v.summary() for v in svc.queries.catalog.versions() if v.name == name]
    if not found:
        raise HTTPException(404, f"no dataset named {name!r}; see /api/datasets")
    return {"name": name, "versions": found}


@router.get("/count", response_model=models.Count)
async def count(
    where: str = WhereQuery,
    datasets: list[str] | None = DatasetsQuery,
    svc: Service = Depends(service),
) -> dict[str, Any]:
    """Documents and tokens matching `where`, per dataset and in all."""
    chosen = split_refs(datasets)
    return await svc.queries.answer(
        ("count", where, chosen), lambda s: s.select(where, chosen or None).summary()
    )


@router.get("/samples", response_model=models.Samples)
async def samples(
    where: str = WhereQuery,
    datasets: list[str] | None = DatasetsQuery,
    k: int = Query(5, ge=1, le=MAX_SAMPLES),
    svc: Service = Depends(service),
) -> dict[str, Any]:
    """Up to `k` matching documents, spread over the selection, with their text."""
    chosen = split_refs(datasets)

    def query(session: CatalogSession) -> list[dict[str, Any]]:
        found = []
        for part in session.select(where, chosen or None):
            found += sample_documents(part, k - len(found))
            if len(found) >= k:
                break
        return [
            _document(row.pop("dataset"), row.pop("shard"), row.pop("index"), row.pop("text"), row)
            for row in found
        ]

    found = await svc.queries.answer(("samples", where, chosen, k), query)
    return {"where": where, "samples": found}


@router.get("/composition", response_model=models.Composition, response_model_exclude_none=True)
async def composition_of(
    by: str = Query(..., max_length=256, description="a property column"),
    where: str = WhereQuery,
    datasets: list[str] | None = DatasetsQuery,
    bins: int = Query(10, ge=1, le=MAX_BINS, description="buckets of a numeric column"),
    svc: Service = Depends(service),
) -> dict[str, Any]:
    """Documents and tokens grouped by a property (numbers in equal-width buckets)."""
    chosen = split_refs(datasets)
    return await svc.queries.answer(
        ("composition", by, where, chosen, bins),
        lambda s: composition(s, by, where, chosen or None, bins),
    )


@router.get("/histogram", response_model=models.Histogram)
async def histogram_of(
    column: str = Query(..., max_length=256, description="a numeric property column"),
    where: str = WhereQuery,
    datasets: list[str] | None = DatasetsQuery,
    bins: int = Query(20, ge=1, le=MAX_BINS),
    svc: Service = Depends(service),
) -> dict[str, Any]:
    """Documents and tokens of a numeric property in equal-width buckets."""
    chosen = split_refs(datasets)
    return await svc.queries.answer(
        ("histogram", column, where, chosen, bins),
        lambda s: histogram(s, column, where, chosen or None, bins),
    )


@router.get("/documents/{dataset}/{shard}/{index}", response_model=models.DocumentWithLineage)
def document(
    dataset: str, shard: str, index: int, svc: Service = Depends(service)
) -> dict[str, Any]:
    """One document: properties, text, and its way back to the raw input it came from."""
    version = _version(svc, dataset)
    stems = {entry.stem: entry for entry in version.shards}
    if shard not in stems:  # only the catalog's own shard names reach a file path
        raise HTTPException(404, f"{version.ref} has no shard {shard!r}")
    if not 0 <= index < stems[shard].documents:
        raise HTTPException(404, f"{version.ref} {shard} has {stems[shard].documents} documents")
    options = svc.queries.catalog.storage_options
    found = read_document(version.uri, shard, index, options)
    steps = trace(version.uri, options)
    document_id = found["properties"].get("id")
    origin = document_origin(steps, str(document_id), options) if document_id else []
    text, properties = found["text"], found["properties"]
    return _document(version.ref, shard, index, text, properties, MAX_DOCUMENT_TEXT) | {
        "lineage": [json_value(step.summary()) for step in steps],
        "origin": origin,
    }


@router.get("/lineage/{dataset}", response_model=models.Lineage)
def lineage(dataset: str, svc: Service = Depends(service)) -> dict[str, Any]:
    """The steps that made a dataset version, back to its raw inputs."""
    version = _version(svc, dataset)
    steps = trace(version.uri, svc.queries.catalog.storage_options)
    folders = {step.folder for step in steps}
    raw = [item for step in steps for item in step.raw_inputs(folders)]
    return {
        "dataset": version.ref,
        "steps": [json_value(step.summary()) for step in steps],
        "raw_inputs": raw,
    }


def _version(svc: Service, ref: str):
    try:
        return svc.queries.catalog.get(ref)
    except MixplaneError as error:
        raise HTTPException(404, str(error)) from None


def _document(
    dataset: str,
    shard: str,
    index: int,
    text: str | None,
    properties: dict[str, Any],
    limit: int = MAX_TEXT,
) -> dict[str, Any]:
    truncated = text is not None and len(text) > limit
    return {
        "dataset": dataset,
        "shard": shard,
        "index": index,
        "properties": json_value(properties),
        "text": text[:limit] if truncated else text,
        "truncated": truncated,
    }
