"""`POST /api/mixtures/trace`: what a training step held on a rank, down to each document.

The request is the Python API's `TraceRequest` with the mixture (and, for an adaptive run,
its weight log) beside it; the answer lists at most `MAX_TRACE_SEQUENCES` sequences, and
is found in a scan process under the request's deadline like every scan.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mixplane.load.plan.steps import MAX_POSITION
from mixplane.load.tools.trace import TraceRequest
from mixplane.serve import models, scans
from mixplane.serve.service import Service, deadline, service

MAX_TRACE_SEQUENCES = 1024
MAX_WEIGHT_CHANGES = 10_000
INTEGER_FIELDS = ("step", "index", "rank", "world_size", "batch_size", "max_sequences")

router = APIRouter(prefix="/api")


class WeightChange(BaseModel):
    """One line of a run's weight log: from `step` on, these weights (what decided them,
    `details`, may come along; it is not needed)."""

    model_config = ConfigDict(extra="forbid")

    step: int = Field(ge=0, le=MAX_POSITION)
    weights: models.Weights
    details: dict[str, Any] | None = None


class TracePost(TraceRequest, models.MixtureRequest):
    """A mixture and what of it to trace."""

    model_config = ConfigDict(extra="forbid")

    max_sequences: int = Field(
        MAX_TRACE_SEQUENCES,
        ge=1,
        le=MAX_TRACE_SEQUENCES,
        description="refuse a step with more sequences than this",
    )

    @model_validator(mode="before")
    @classmethod
    def _json_integers(cls, data: Any) -> Any:
        """Counts are JSON integers (2.0 is one, as in JSON Schema); true, "3" and 2.5 are
        not, though pydantic would take some of them."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name in INTEGER_FIELDS:
            value = data.get(name)
            if isinstance(value, float) and value.is_integer():
                data[name] = int(value)
            elif value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{name} must be an integer")
        return data

    weight_log: list[WeightChange] | None = Field(
        None,
        max_length=MAX_WEIGHT_CHANGES,
        description="the run's weight changes (its weight log's lines): needed for the "
        "steps of an adaptive mixture after its policy's first possible change",
    )


class TracedDocument(BaseModel):
    component: str
    dataset: str = Field(description="NAME@VERSION")
    folder: str
    shard: str
    document: int = Field(description="index in the shard")
    id: str
    tokens: list[int] = Field(
        min_length=2, max_length=2, description="[begin, end) of the document's tokens"
    )
    eos: bool = Field(description="the range ends in the EOS the loader appends")
    column: int = Field(description="where the piece starts in the sequence")
    source: str | None = None
    url: str | None = None
    properties: dict[str, Any]
    origin: list[dict[str, Any]] | None = None


class TracedSequence(BaseModel):
    index: int
    step: int | None
    micro_batch: int
    row: int
    component: str
    documents: list[TracedDocument]


class Trace(BaseModel):
    mixture_fingerprint: str
    packing: str = Field(description="sequences (packed), or none: each row one document")
    seq_len: int
    step: int | None
    index: int | None
    rank: int
    world_size: int
    batch_size: int | None
    global_batch_size: int | None
    properties: list[str]
    positions: list[int]
    weights: dict[str, float]
    sequences: list[TracedSequence]


@router.post("/mixtures/trace", response_model=Trace, tags=["mixtures"])
async def trace(
    body: TracePost, svc: Service = Depends(service), until: float = Depends(deadline)
) -> dict[str, Any]:
    """The sequences of a training step on a rank (or one sequence, `index`) of a mixture
    resolved on the service's catalog: each document's dataset version, id, token range,
    source, url and properties."""
    request = body.model_dump(exclude={"mixture", "weight_log"})
    log = None
    if body.weight_log is not None:
        log = [change.model_dump(exclude_none=True) for change in body.weight_log]
    return await svc.queries.answer(until, scans.trace_step, body.mixture, request, log)
