"""Routes about what was done and what runs: processing runs, mixture previews, the plan
service and the metrics training jobs push."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query
from fastapi.responses import FileResponse

from mixplane.load.resolve.plan_service import FILE_NAME, PLAN_ID
from mixplane.serve import models, scans
from mixplane.serve.plans import UnknownPlan
from mixplane.serve.service import Service, deadline, service

router = APIRouter(prefix="/api")


class PlanFileResponse(FileResponse):
    chunk_size = 1 << 20  # a plan's arrays are large: fewer, bigger reads and writes


JobName = Path(pattern=models.JOB_NAME, description="letters, digits, '_', '-', '.'")
RunId = Path(pattern=r"^[0-9a-f]{16}$", description="a run's id, as /api/runs lists it")
PlanId = Path(pattern=PLAN_ID.pattern, description="a plan's id, as POST /api/plans answers")
PlanFile = Path(pattern=FILE_NAME.pattern, description="one of the plan's files")


@router.get("/runs", response_model=list[models.Run], tags=["runs"])
async def runs(
    svc: Service = Depends(service), until: float = Depends(deadline)
) -> list[dict[str, Any]]:
    """Processing steps behind the catalog's datasets, newest first."""
    return await svc.queries.answer(until, scans.runs)


@router.get("/runs/{run}", response_model=models.RunDetails, tags=["runs"])
async def run(
    run: str = RunId, svc: Service = Depends(service), until: float = Depends(deadline)
) -> dict[str, Any]:
    """One run, with what it excluded and quarantined by stage and reason."""
    return await svc.queries.answer(until, scans.run, run)


@router.post("/mixtures/preview", tags=["mixtures"])
async def preview(
    body: models.PreviewRequest, svc: Service = Depends(service), until: float = Depends(deadline)
) -> dict[str, Any]:
    """Requested vs realized shares per component over the first `steps` of a mixture,
    resolved on the service's catalog."""
    return await svc.queries.answer(until, scans.preview, body.mixture, body.steps, body.show)


@router.post("/plans", response_model=models.Plan, tags=["mixtures"])
async def plan(
    body: models.MixtureRequest, svc: Service = Depends(service), until: float = Depends(deadline)
) -> dict[str, Any]:
    """Resolve a mixture on the service's catalog (once) and list the plan's files."""
    return svc.plans.register(await svc.queries.answer(until, scans.plan, body.mixture))


@router.get(
    "/plans/{plan}/{name}",
    tags=["mixtures"],
    response_class=PlanFileResponse,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
def plan_file(
    plan: str = PlanId, name: str = PlanFile, svc: Service = Depends(service)
) -> PlanFileResponse:
    """One file of a resolved plan, byte for byte."""
    try:
        path = svc.plans.path(plan, name)
    except UnknownPlan as error:
        raise HTTPException(404, str(error)) from None
    return PlanFileResponse(path, media_type="application/octet-stream")


@router.post(
    "/jobs/{job}/metrics",
    response_model=models.StoredSample,
    response_model_exclude_none=True,
    tags=["jobs"],
)
def push(
    sample: models.MetricSample, job: str = JobName, svc: Service = Depends(service)
) -> dict[str, Any]:
    """A training job's loader figures at a step (the job is created by its first sample)."""
    return svc.jobs.push(job, sample.model_dump(exclude_none=True))


@router.get(
    "/jobs",
    response_model=list[models.JobSummary],
    response_model_exclude_none=True,
    tags=["jobs"],
)
def jobs(svc: Service = Depends(service)) -> list[dict[str, Any]]:
    """Jobs that pushed metrics, the most recent first."""
    return svc.jobs.list()


@router.get(
    "/jobs/{job}/metrics",
    response_model=models.JobSamples,
    response_model_exclude_none=True,
    tags=["jobs"],
)
def job_metrics(
    job: str = JobName,
    since: int = Query(0, ge=0, description="samples the reader already has"),
    svc: Service = Depends(service),
) -> dict[str, Any]:
    """A job's samples after the first `since`, in arrival order."""
    found = svc.jobs.samples(job, since)
    if found is None:
        raise HTTPException(404, f"no job {job!r} has pushed metrics")
    return {"job": job, "samples": found}
