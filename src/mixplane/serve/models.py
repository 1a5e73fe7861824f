"""The shapes of the API's requests and answers, which its OpenAPI spec publishes.

The spec says what the service enforces: a request it validates as a whole is refused when
the spec says so; what only the catalog can decide (does this column exist, does this
predicate hold together) is a documented 400 or 404.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SkipValidation,
    StringConstraints,
)
from pydantic.json_schema import WithJsonSchema

from mixplane.mix.spec import MEDIA_UNUSED, MixtureSpec
from mixplane.mix.spec import NAME as COMPONENT
from mixplane.refs import REF

JOB_NAME = r"^[A-Za-z0-9_.\-]{1,64}$"
COMPONENT_NAME = r"^[A-Za-z0-9_.\-/]{1,200}$"
# A dataset reference, as `mixplane.refs` parses it: NAME (the latest version) or NAME@N.
DATASET = f"^{REF}$"
DATASETS = f"^{REF}(,{REF})*$"  # one or several, comma-separated
# A property column's name: the catalog decides which exist (an unknown one is a 400).
COLUMN = r"^[^\x00-\x1f\x7f]{1,256}$"
SHARD = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,254}$"  # a shard's stem, as the catalog lists it
ComponentName = Annotated[str, StringConstraints(pattern=COMPONENT_NAME)]
Weight = Annotated[float, Field(ge=0, le=1)]
Weights = Annotated[
    dict[ComponentName, Weight],
    Field(max_length=256),
    # pydantic leaves other names open in the schema; the service refuses them.
    WithJsonSchema(
        {
            "type": "object",
            "patternProperties": {COMPONENT_NAME: {"type": "number", "minimum": 0, "maximum": 1}},
            "additionalProperties": False,
            "maxProperties": 256,
        }
    ),
]
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
    kind: str = "tokens"  # or "image_text", "audio_text": media shards, no tokens
    masks: bool = False  # fine-tuning data: loss masks beside the tokens
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
    thumbnail: str | None = Field(
        None, description="the path of its thumbnail (image-text documents only)"
    )
    audio: str | None = Field(
        None, description="the path of its audio clip (audio-text documents only)"
    )


class Samples(BaseModel):
    where: str
    offset: int = Field(description="documents of the selection before this page")
    total: int = Field(description="documents the selection holds")
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
    scale: str = Field(description="linear, or log (buckets of equal width in log10)")
    nulls: Counts = Field(description="NULL, NaN and infinite values")
    nonpositive: Counts | None = Field(None, description="values <= 0 (log scale only)")
    bins: list[Bin] = Field(description="each holds low <= value < high; the last, <= high")


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


def _mixture_rules(schema: dict[str, Any]) -> None:
    """What the spec's validators check across fields, said in JSON Schema."""
    schema["properties"]["components"]["propertyNames"] = {"pattern": COMPONENT.pattern}
    media = {"properties": {"kind": {"enum": ["image_text", "audio_text"]}}, "required": ["kind"]}
    unused = [{"required": [name]} for name in sorted(MEDIA_UNUSED)]
    needs_steps = [
        {
            "if": {"properties": {part: test}, "required": [part]},
            "then": {"required": ["global_batch_size"]},
        }
        for part, test in (("schedule", {"minItems": 1}), ("policy", {"type": "object"}))
    ]
    schema["allOf"] = [
        {"if": media, "then": {"not": {"anyOf": unused}}, "else": {"required": ["seq_len"]}},
        *needs_steps,
    ]


class Mixture(MixtureSpec):
    """A mixture spec as in a mixture YAML (`catalog`, `cache_dir`, `cache`, `cache_limit`,
    `storage_options` and `plan_url` are the service's own: given ones are ignored). Only
    the published shape: the service reads the mixture itself, for one-line errors."""

    model_config = ConfigDict(title="Mixture", json_schema_extra=_mixture_rules)


def _mapping(value: Any) -> Any:
    """A mixture must be a mapping (a 422 like any other wrong shape); what is in it is
    checked by the mixture parser, whose errors say what to do (a 400)."""
    if not isinstance(value, dict):
        raise ValueError("expected a mapping with seq_len and components")
    return value


class MixtureRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mixture: Annotated[SkipValidation[Mixture], BeforeValidator(_mapping)] = Field(
        description="a mixture spec, as in a mixture YAML"
    )


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
    # Pinned versions a takedown replaced, one message each: the client warns about them
    # (a mixture with `takedowns: refuse` is refused with a 400 instead).
    superseded: list[str] = []


def _integral(value: Any) -> Any:
    """2.0 is an integer in JSON Schema, as in the spec; 2.5, true and "2" are not."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# Strict: the JSON types the spec names, nothing converted (true is no count, "3" no rate).
Natural = Annotated[int, Field(ge=0), BeforeValidator(_integral)]


class CacheFigures(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    hits: Natural | None = None
    downloads: Natural | None = None
    bytes: Natural | None = None
    retries: Natural | None = None


class MetricSample(BaseModel):
    """One sample a training job pushes."""

    model_config = ConfigDict(extra="forbid", strict=True)

    step: Natural
    sequences_per_second: float | None = Field(None, ge=0, le=1e12)
    tokens_per_second: float | None = Field(None, ge=0, le=1e15)
    wait_seconds: float | None = Field(
        None, ge=0, le=1e9, description="time the loop waited for data since the last sample"
    )
    weights: Weights | None = Field(None, description="component -> weight in [0, 1]")
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
