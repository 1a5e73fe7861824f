"""Routes that read the catalog: datasets, counts, samples, composition, histograms,
documents and lineage. Everything that scans runs in a scan process through the service's
`QueryRunner`, by the request's deadline, its answer cached; the routes stay on the event
loop, so a health check or a cached answer never waits behind a scan."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query

from mixplane._version import __version__
from mixplane.catalog.composition import MAX_BINS
from mixplane.refs import split_refs
from mixplane.serve import models, scans
from mixplane.serve.service import Service, deadline, service

router = APIRouter(prefix="/api", tags=["catalog"])
MAX_SAMPLES = 50
EVERYTHING = "TRUE"

DatasetsQuery = Query(
    None, description="NAME@N or NAME (latest), repeated or comma-separated; default: all"
)
WhereQuery = Query(EVERYTHING, max_length=10_000, description="a predicate over properties")


@router.get("/health", response_model=models.Health)
async def health(svc: Service = Depends(service)) -> dict[str, Any]:
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
    until: float = Depends(deadline),
) -> dict[str, Any]:
    """Documents and tokens matching `where`, per dataset and in all."""
    return await svc.queries.answer(until, scans.count, where, split_refs(datasets))


@router.get("/samples", response_model=models.Samples)
async def samples(
    where: str = WhereQuery,
    datasets: list[str] | None = DatasetsQuery,
    k: int = Query(5, ge=1, le=MAX_SAMPLES),
    svc: Service = Depends(service),
    until: float = Depends(deadline),
) -> dict[str, Any]:
    """Up to `k` matching documents, spread over the selection, with their text."""
    found = await svc.queries.answer(until, scans.samples, where, split_refs(datasets), k)
    return {"where": where, "samples": found}


@router.get("/composition", response_model=models.Composition, response_model_exclude_none=True)
async def composition_of(
    by: str = Query(..., max_length=256, description="a property column"),
    where: str = WhereQuery,
    datasets: list[str] | None = DatasetsQuery,
    bins: int = Query(10, ge=1, le=MAX_BINS, description="buckets of a numeric column"),
    svc: Service = Depends(service),
    until: float = Depends(deadline),
) -> dict[str, Any]:
    """Documents and tokens grouped by a property (numbers in equal-width buckets)."""
    chosen = split_refs(datasets)
    return await svc.queries.answer(until, scans.composition_of, by, where, chosen, bins)


@router.get("/histogram", response_model=models.Histogram)
async def histogram_of(
    column: str = Query(..., max_length=256, description="a numeric property column"),
    where: str = WhereQuery,
    datasets: list[str] | None = DatasetsQuery,
    bins: int = Query(20, ge=1, le=MAX_BINS),
    svc: Service = Depends(service),
    until: float = Depends(deadline),
) -> dict[str, Any]:
    """Documents and tokens of a numeric property in equal-width buckets."""
    chosen = split_refs(datasets)
    return await svc.queries.answer(until, scans.histogram_of, column, where, chosen, bins)


@router.get("/documents/{dataset}/{shard}/{index}", response_model=models.DocumentWithLineage)
async def document(
    dataset: str,
    shard: str,
    index: int,
    svc: Service = Depends(service),
    until: float = Depends(deadline),
) -> dict[str, Any]:
    """One document: properties, text, and its way back to the raw input it came from."""
    return await svc.queries.answer(until, scans.document, dataset, shard, index)


@router.get("/lineage/{dataset}", response_model=models.Lineage)
async def lineage(
    dataset: str, svc: Service = Depends(service), until: float = Depends(deadline)
) -> dict[str, Any]:
    """The steps that made a dataset version, back to its raw inputs."""
    return await svc.queries.answer(until, scans.lineage, dataset)
