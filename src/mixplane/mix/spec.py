"""The mixture spec: one pydantic model shared by YAML files, the CLI and the Python API.

A mixture names components (a predicate over catalog properties and a weight over tokens),
possibly nested, and says how to pack them (`seq_len`), shuffle them (`seed`) and change the
weights over time (`schedule`). A mixture of `kind: image_text` (or `audio_text`) names
image-caption (or audio clip) components the same way, weighted by samples instead of
tokens (no `seq_len`); an audio mixture may weigh seconds of audio instead (`weigh_by`).

Example:
    >>> spec = MixtureSpec.parse({
    ...     "catalog": "work/catalog.duckdb",
    ...     "seq_len": 2048,
    ...     "components": {
    ...         "wiki": {"where": "source = 'wiki'", "weight": 0.7},
    ...         "code": {"where": "source = 'code'", "weight": 0.3},
    ...     },
    ... })
    >>> spec.seq_len, list(spec.components)
    (2048, ['wiki', 'code'])
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.json_schema import WithJsonSchema

from mixplane.configs import read_yaml_overridden, validate_config
from mixplane.errors import ConfigError, MixplaneError
from mixplane.io.sizes import parse_size
from mixplane.mix.policy.spec import PolicySpec
from mixplane.mix.unpacked import UNPACKED_ONLY, BucketingSpec, unpacked_problems
from mixplane.refs import REF, parse_ref

NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
MAX_RESOLUTION = 1 << 22


class Weighting(BaseModel):
    """How the weights of sibling components are chosen.

    `explicit` takes each component's `weight`; the others compute weights from the token
    counts of the selections: `natural` (proportional to tokens), `temperature`
    (q_i^(1/T), normalized) and `unimax` (uniform budget, capped at `max_epochs` per component;
    needs the mixture's `total_tokens`). `max_epochs` also caps temperature and natural weights.
    """

    model_config = ConfigDict(extra="forbid")

    method: Literal["explicit", "natural", "temperature", "unimax"] = "explicit"
    temperature: float = Field(1.0, gt=0, description="tau; 1 is natural, large is uniform")
    max_epochs: float | None = Field(None, gt=0, description="epoch cap over total_tokens")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"method": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _unimax_needs_cap(self) -> Weighting:
        if self.method == "unimax" and self.max_epochs is None:
            raise ValueError("unimax weighting needs max_epochs (the per-component epoch cap)")
        if self.method == "explicit" and self.max_epochs is not None:
            raise ValueError("max_epochs caps computed weights; explicit weights are used as given")
        return self


# What the validators `check_datasets` and `_where` accept, said in JSON Schema (the service
# publishes it); their messages stay the ones users read.
DatasetRefs = Annotated[
    list[str],
    WithJsonSchema(
        {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": f"^{REF}$"}}
    ),
]
Predicate = Annotated[str, WithJsonSchema({"type": "string", "pattern": r"\S"})]


class ComponentSpec(BaseModel):
    """A named slice of the catalog with a weight, or a group of nested components.

    A nested component's `where` and `datasets` apply to all its children. `max_epochs` and
    `on_exhausted` given on a group are the defaults of its children.
    """

    model_config = ConfigDict(extra="forbid")

    where: Predicate | None = Field(None, description="SQL predicate over document properties")
    datasets: DatasetRefs | None = Field(
        None, description="restrict to these catalog datasets: NAME (latest) or NAME@N (pinned)"
    )
    weight: float | None = Field(None, ge=0, description="share of tokens among its siblings")
    weighting: Weighting | None = Field(None, description="how the children's weights are set")
    components: dict[str, ComponentSpec] | None = None
    max_epochs: float | None = Field(None, gt=0, description="passes over the data at most")
    on_exhausted: Literal["stop", "drop"] | None = Field(
        None, description="at max_epochs: end the stream, or drop the component and renormalize"
    )

    @field_validator("components")
    @classmethod
    def _names(cls, value: dict[str, ComponentSpec] | None) -> dict[str, ComponentSpec] | None:
        if value is not None:
            check_names(value)
        return value

    @field_validator("where")
    @classmethod
    def _where(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("where is empty; leave it out to select everything")
        return value

    @field_validator("datasets")
    @classmethod
    def _datasets(cls, value: list[str] | None) -> list[str] | None:
        return check_datasets(value)


class ScheduleEntry(BaseModel):
    """From `step` on, the named components take these weights (relative to their siblings).

    A step is `global_batch_size` sequences of the global stream. Components not named keep
    their weights; naming one component of a group means naming all its siblings.
    """

    model_config = ConfigDict(extra="forbid")

    step: int = Field(ge=0)
    weights: dict[str, float] = Field(min_length=1)

    @field_validator("weights")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        for name, weight in value.items():
            if not weight >= 0:
                raise ValueError(f"weight of {name!r} must be a number >= 0, got {weight}")
        return value


class MixtureSpec(BaseModel):
    """A whole mixture: where the data is, the components, packing, order and schedule."""

    model_config = ConfigDict(extra="forbid")

    catalog: str | None = Field(None, description="catalog path or URL (.duckdb)")
    datasets: DatasetRefs | None = Field(
        None, description="restrict every component to these: NAME (latest) or NAME@N (pinned)"
    )
    kind: Literal["text", "image_text", "audio_text"] = Field(
        "text",
        description="text: packed token sequences (MixtureDataset); image_text: image-caption "
        "samples with weights over samples (mixplane.load.images.ImageTextDataset); "
        "audio_text: audio clips with transcripts (mixplane.load.audio.AudioTextDataset)",
    )
    weigh_by: Literal["samples", "seconds"] = Field(
        "samples",
        description="audio_text only: the weights are shares of clips (samples) or of "
        "seconds of audio (seconds)",
    )
    seq_len: int | None = Field(
        None, gt=0, description="tokens per packed sequence (required for text mixtures)"
    )
    seed: int = Field(0, ge=0, description="shuffle seed; the same seed gives the same stream")
    shuffle_window: int | None = Field(
        None,
        gt=0,
        description="shuffle shard by shard: each epoch visits a component's shards in a "
        "seeded order, this many at a time, and shuffles the documents of each group; so a "
        "reader needs only a few shards at once (a bounded cache of remote data). None: "
        "shuffle all the component's documents together",
    )
    components: dict[str, ComponentSpec] = Field(min_length=1)
    weighting: Weighting | None = Field(None, description="how top-level weights are set")
    schedule: list[ScheduleEntry] = Field(default_factory=list)
    policy: PolicySpec | None = Field(
        None, description="adapt the weights to the training loss while training"
    )
    takedowns: Literal["warn", "refuse"] = Field(
        "warn",
        description="a pinned NAME@N that a takedown replaced (`mixplane takedown`): warn "
        "at start-up (SupersededVersionWarning and the log), or refuse with an error",
    )
    overlap: Literal["error", "first", "allow"] = Field(
        "error",
        description="a document matched by several components: error, goes to the first "
        "listed, or is allowed in each",
    )
    max_epochs: float | None = Field(None, gt=0, description="default for every component")
    on_exhausted: Literal["stop", "drop"] = Field("stop", description="default at max_epochs")
    total_tokens: float | None = Field(None, gt=0, description="training budget (UniMax, caps)")
    global_batch_size: int | None = Field(
        None,
        ge=1,
        description="sequences per optimizer step over all ranks (world size x batch size x "
        "gradient accumulation); schedule steps and set_weights count these steps",
    )
    weight_resolution: int = Field(
        1 << 16, ge=2, le=MAX_RESOLUTION, description="weights are multiples of 1/this"
    )
    labels: bool | Literal["huggingface"] = Field(
        False,
        description="true (or megatron): Megatron-style samples: each sequence packs "
        "seq_len + 1 tokens (the last one shared with the next sequence), and batches add "
        "`labels` (the inputs shifted by one) and `loss_mask` (0 where a fine-tuning "
        "dataset's mask says not to train); huggingface: batches add `labels` as Hugging "
        "Face models take them (the inputs, -100 at each document's first token and where "
        "the mask says not to train) and `position_ids`",
    )
    append_eos: bool = Field(
        True, description="add an EOS after each document, unless tokenizing already did"
    )
    eos_id: int | None = Field(None, ge=0, description="override the catalog's EOS id")
    document_refs: bool = Field(
        False,
        description="batches add `document_refs`: for each token, its dataset's index and "
        "its document's number in that dataset (for a loss by property, e.g. by language); "
        "not part of the stream's identity",
    )
    cache_dir: str | None = Field(None, description="local copies of a remote catalog's data")
    cache_limit: int | str | None = Field(
        None,
        description="most bytes of remote shards the machine's cache holds (200GB, 512MiB; "
        "default $MIXPLANE_CACHE_LIMIT, else no limit)",
    )
    cache: Literal["shards", "ranges"] = Field(
        "shards",
        description="how remote shards are read: shards (copied whole into the machine's "
        "cache, read from there) or ranges (only the bytes of the document pieces or image "
        "samples read, fetched in ranged requests and checked against the shards' .sums or "
        "the image index's sample digests; for shards too big or too many to cache whole)",
    )
    storage_options: dict[str, Any] = Field(default_factory=dict)
    plan_url: str | None = Field(
        None,
        description="a `mixplane serve` service that resolves the mixture on its catalog, "
        "once for all ranks (http://HOST:PORT; its token from $MIXPLANE_SERVE_TOKEN)",
    )
    audit: bool = Field(
        True,
        description="record in the catalog's audit trail (CATALOG.audit/) when each rank "
        "starts, checkpoints and stops, and which dataset versions it reads; false: record "
        "nothing (see docs/governance.md)",
    )
    run_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:=+-]{0,127}$",
        description="the run's name in the audit trail, shared by its ranks and kept on "
        "resume (default: the launcher's job id, else derived; see docs/governance.md)",
    )
    # Unpacked samples (mixplane.load.unpacked.UnpackedDataset; see mix.unpacked).
    packing: Literal["sequences", "none"] = Field(
        "sequences",
        description="sequences: documents packed into seq_len tokens; none: one document per "
        "sample, cut to seq_len, batches padded (UnpackedDataset)",
    )
    pad_id: int | None = Field(None, ge=0, description="padding token (default: tokenizer's)")
    pad_to_multiple_of: int = Field(8, ge=1, description="padded lengths are multiples of this")
    bucketing: BucketingSpec | None = Field(
        None, description="batch samples of similar length within a padded-token budget"
    )

    @field_validator("components")
    @classmethod
    def _names(cls, value: dict[str, ComponentSpec]) -> dict[str, ComponentSpec]:
        check_names(value)
        return value

    @field_validator("labels", mode="before")
    @classmethod
    def _label_style(cls, value: Any) -> Any:
        # "megatron" is `true`'s name: the same stream, so the same fingerprint.
        words = ("megatron", "huggingface", *_BOOL_WORDS)
        if isinstance(value, str) and value.lower() not in words:
            raise ValueError(
                f"labels must be false, true (or megatron) or huggingface, got {value!r}"
            )
        return True if value == "megatron" else value

    @field_validator("cache_limit")
    @classmethod
    def _size(cls, value: int | str | None) -> int | str | None:
        if value is not None and (parse_size(value) or 0) <= 0:
            raise ValueError(f"cache_limit must be a positive size, not {value!r}")
        return value

    @field_validator("datasets")
    @classmethod
    def _datasets(cls, value: list[str] | None) -> list[str] | None:
        return check_datasets(value)

    @field_validator("schedule")
    @classmethod
    def _ordered(cls, value: list[ScheduleEntry]) -> list[ScheduleEntry]:
        steps = [entry.step for entry in value]
        if len(set(steps)) != len(steps):
            raise ValueError(f"schedule has repeated steps: {steps}")
        return sorted(value, key=lambda entry: entry.step)

    @model_validator(mode="after")
    def _kind_fields(self) -> MixtureSpec:
        if self.kind == "text":
            if self.seq_len is None:
                raise ValueError("seq_len: a text mixture needs seq_len (tokens per sequence)")
            if self.weigh_by != "samples":
                raise ValueError("weigh_by: seconds is for audio_text mixtures; remove it")
            return self
        # A media mixture draws whole samples: packing, token budgets and steps of
        # sequences mean nothing there, so setting them is a mistake worth naming.
        kind = self.kind
        ignored = sorted(MEDIA_UNUSED & self.model_fields_set)
        if ignored:
            raise ValueError(
                f"an {kind} mixture weighs samples, not tokens; remove {', '.join(ignored)}"
            )
        if _caps_epochs(self.weighting, self.components):
            raise ValueError(
                f"an {kind} mixture takes explicit, natural or temperature weights over "
                "samples, without max_epochs"
            )
        if self.weigh_by != "samples" and kind != "audio_text":
            raise ValueError("weigh_by: seconds is for audio_text mixtures; remove it")
        return self

    @model_validator(mode="after")
    def _packing(self) -> MixtureSpec:
        problems = unpacked_problems(self, self.model_fields_set)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _steps_need_a_batch_size(self) -> MixtureSpec:
        for part in ("schedule", "policy"):
            if getattr(self, part) and self.global_batch_size is None:
                raise ValueError(
                    f"a {part} counts optimizer steps, so the mixture needs global_batch_size "
                    "(sequences per step over all ranks: world size x batch size x "
                    "accumulation)"
                )
        if self.schedule and self.policy is not None:
            raise ValueError(
                "a mixture has a schedule or a policy, not both: the policy decides the "
                "weights (its warmup_steps keep the declared ones at first)"
            )
        return self

    def sequences_per_step(self, why: str = "steps") -> int:
        """`global_batch_size`, or a clear error naming what needed it."""
        if self.global_batch_size is None:
            raise ConfigError(
                f"{why} count optimizer steps: set global_batch_size in the mixture "
                "(sequences per step over all ranks: world size x batch size x accumulation)"
            )
        return self.global_batch_size

    @property
    def shifted_labels(self) -> bool:
        """Whether each sequence holds one token more, the last label (`labels: true`)."""
        return self.labels is True

    def fingerprint(self) -> str:
        """Hash of everything that decides the stream (not where files are cached)."""
        local = {"cache", "cache_dir", "cache_limit", "storage_options", "plan_url"}
        local.add("document_refs")  # what batches carry beside the tokens, not which tokens
        local.add("takedowns")  # whether to start, not what is read
        local.update(("audit", "run_id"))  # what is recorded of a run, not what it reads
        if self.kind == "text":
            local.add("kind")  # text mixtures keep the fingerprints they had before `kind`
        if self.packing == "sequences":  # packed mixtures keep theirs from before `packing`
            local.update(("packing", *UNPACKED_ONLY))
        decisive = self.model_dump(mode="json", exclude=local)
        return hashlib.sha256(orjson.dumps(decisive, option=orjson.OPT_SORT_KEYS)).hexdigest()

    @classmethod
    def parse(
        cls, data: dict[str, Any], where: str = "mixture", policies: Collection[str] | None = None
    ) -> MixtureSpec:
        """Validate a dict, turning pydantic's report into one readable line.

        `policies`: for a mixture from someone else (posted to a service), the only import
        paths its `policy` may name besides the built-in policies; none is imported otherwise.
        """
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a mapping with seq_len and components")
        context = None if policies is None else {"policies": frozenset(policies)}
        return validate_config(cls, data, where, context)

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> MixtureSpec:
        """Load a YAML file; `overrides` (e.g. `seed=7`) win over the file.

        A relative `catalog` path is taken relative to the YAML file's folder.
        """
        data = read_yaml_overridden(path, "seq_len and components", overrides)
        catalog = data.get("catalog")
        if isinstance(catalog, str) and "://" not in catalog and not Path(catalog).is_absolute():
            candidate = Path(path).parent / catalog
            if candidate.exists() or not Path(catalog).exists():
                data["catalog"] = str(candidate)
        return cls.parse(data, where=str(path))


# Strings pydantic reads as booleans (as an override on the command line gives them).
_BOOL_WORDS = ("true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n")

# Fields of a text mixture that an image-text or audio-text mixture refuses.
MEDIA_UNUSED = frozenset(
    {
        "seq_len",
        "shuffle_window",
        "schedule",
        "policy",
        "max_epochs",
        "on_exhausted",
        "total_tokens",
        "global_batch_size",
        "labels",
        "append_eos",
        "eos_id",
        "plan_url",
        "packing",
        *UNPACKED_ONLY,
        "document_refs",
        "takedowns",  # takedowns rewrite token shards only: no image version is superseded
    }
)


def _caps_epochs(weighting: Weighting | None, components: dict[str, ComponentSpec]) -> bool:
    """Whether a weighting (unimax always has max_epochs) or a component at or below this
    level caps epochs."""
    if weighting is not None and weighting.max_epochs is not None:
        return True
    return any(
        c.max_epochs is not None
        or c.on_exhausted is not None
        or _caps_epochs(c.weighting, c.components or {})
        for c in components.values()
    )


def check_names(components: dict[str, Any]) -> None:
    for name in components:
        if not NAME.match(name):
            raise ValueError(
                f"component name {name!r} may only use letters, digits, '_', '-' and '.'"
            )


def check_datasets(refs: list[str] | None) -> list[str] | None:
    """A `datasets:` list: references `NAME` or `NAME@N`, each dataset named once.

    Example:
        >>> check_datasets(["web@1", "wiki"])
        ['web@1', 'wiki']
        >>> check_datasets(["web@1", "web@2"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: dataset 'web' is listed twice (web@1, web@2); ...
    """
    if refs is None:
        return None
    if not refs:
        raise ValueError("datasets is empty; leave it out to draw from every dataset")
    seen: dict[str, str] = {}
    for ref in refs:
        try:
            name, _ = parse_ref(ref)
        except MixplaneError as error:
            raise ValueError(str(error)) from None
        if name in seen:
            raise ValueError(
                f"dataset {name!r} is listed twice ({seen[name]}, {ref}); a component reads "
                "one version of each dataset"
            )
        seen[name] = ref
    return refs


def load_mixture(mixture: MixtureSpec | dict[str, Any] | str | Path) -> MixtureSpec:
    """A `MixtureSpec` from a spec, a dict or a YAML path.

    Example:
        >>> load_mixture({"seq_len": 8, "components": {"a": {"weight": 1}}}).seq_len
        8
    """
    if isinstance(mixture, MixtureSpec):
        return mixture
    if isinstance(mixture, dict):
        return MixtureSpec.parse(mixture)
    return MixtureSpec.from_yaml(mixture)
