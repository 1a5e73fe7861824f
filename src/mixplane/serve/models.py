"""The shapes of the API's requests and answers, which its OpenAPI spec publishes."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

JOB_NAME = r"^[A-Za-z0-9_.\-]{1,64}$"
ComponentName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.\-/]{1,200}$")]
Weight = Annotated[float, Field(ge=0, le=1)]
MAX_PREVIEW_STEPS = 1_000_000  # optimizer steps a preview covers (its time limit holds too)


class Problem(BaseModel):
    """An error: what went wrong and what to do."""

    detail: str


class Health(BaseModel):
    status: str
    version: str
    catalog: str


class DatasetInfo(BaseModel):
    dataset: str
    name: str
    version: int
    uri: str
    documents: int
    tokens: int
    kind: str = "tokens"  # or "image_text": image shards, whose documents hold no tokens
    shards: int
    tokenizer: dict[str, Any]
    columns: dict[str, str]
    fingerprint: str
    registered_at: str


class DatasetVersions(BaseModel):
    name: str
    versions: list[DatasetInfo]


class PartCount(BaseModel):
    dataset: str
    documents: int
    tokens: int
    total_documents: int
    total_tokens: int
    ranges: int
    shards_touched: int


class Count(BaseModel):
    where: str
    documents: int
    tokens: int
    datasets: list[PartCount]


class Document(BaseModel):
    dataset: str
    shard: str
    index: int
    properties: dict[str, Any]
    text: str | None
    truncated: bool = False


class Samples(BaseModel):
    where: str
    samples: list[Document]


class Group(BaseModel):
    value: str | int | float | bool
    documents: int
    tokens: int
    low: float | None = None
    high: float | None = None
    groups: int | None = Field(None, description="how many groups '(other)' sums")


class Composition(BaseModel):
    by: str
    where: str
    documents: int
    tokens: int
    groups: list[Group]


class Counts(BaseModel):
    documents: int
    tokens: int


class Bin(BaseModel):
    low: float
    high: float
    documents: int
    tokens: int


class Histogram(BaseModel):
    column: str
    where: str
    nulls: Counts
    bins: list[Bin]


class Origin(BaseModel):
    folder: str
    part: str
    input: dict[str, Any] | None


class DocumentWithLineage(Document):
    lineage: list[dict[str, Any]]
    origin: list[Origin]


class Lineage(BaseModel):
    dataset: str
    steps: list[dict[str, Any]]
    raw_inputs: list[dict[str, Any]]


class Run(BaseModel):
    id: str
    kind: str
    folder: str
    created_at: str | None
    config_hash: str | None
    documents_in: int | None
    kept: int | None
    excluded: int | None
    quarantined: int | None
    datasets: list[str]


class RunDetails(Run):
    excluded_by: dict[str, dict[str, int]]
    quarantined_by: dict[str, dict[str, int]]
    quarantine_examples: dict[str, Any]
    seconds: dict[str, float]


class MixtureRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mixture: dict[str, Any] = Field(description="a mixture spec, as in a mixture YAML")


class PreviewRequest(MixtureRequest):
    steps: int = Field(1000, ge=1, le=MAX_PREVIEW_STEPS)
    show: int = Field(0, ge=0, le=5, description="first sequences to decode")


class PlanFile(BaseModel):
    name: str
    size: int
    hash: str


class Plan(BaseModel):
    plan: str
    fingerprint: str
    files: list[PlanFile]


class CacheFigures(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hits: int | None = Field(None, ge=0)
    downloads: int | None = Field(None, ge=0)
    bytes: int | None = Field(None, ge=0)
    retries: int | None = Field(None, ge=0)


class MetricSample(BaseModel):
    """One sample a training job pushes."""

    model_config = ConfigDict(extra="forbid")

    step: int = Field(ge=0)
    sequences_per_second: float | None = Field(None, ge=0, le=1e12)
    tokens_per_second: float | None = Field(None, ge=0, le=1e15)
    wait_seconds: float | None = Field(
        None, ge=0, le=1e9, description="time the loop waited for data since the last sample"
    )
    weights: dict[ComponentName, Weight] | None = Field(None, max_length=256)
    cache: CacheFigures | None = None


class StoredSample(MetricSample):
    time: float


class JobSummary(BaseModel):
    job: str
    samples: int
    last: StoredSample


class JobSamples(BaseModel):
    job: str
    samples: list[StoredSample]
