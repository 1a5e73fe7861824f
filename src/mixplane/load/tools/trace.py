"""Batch forensics: what a training step held on a rank, down to each document.

The stream is a function of the mixture, its seed and its weight changes, so the sequences
of step S on rank R are known without running anything: `StepLayout` says which positions
they are (as `MixtureDataset.batches` and `torch_loader` hand them out, with or without
DataLoader workers), the plan says which document pieces fill them, and the shards'
metadata gives each document's id, source, url and properties. With `origin`, each
document is also followed back through the lineage to its raw input file and byte range.

An adaptive mixture's weights follow the run's losses: its trace is exact with the run's
weight log, and without one only for the steps before the policy's first possible change;
past those it raises, saying what to supply.

A `packing: none` mixture is traced the same way (`trace_unpacked`): a step is one padded
batch per rank, each row one document cut to seq_len, found as `UnpackedDataset` plans its
windows (`mixplane.load.unpacked.forensics`); the report says `packing: none`, and its
"sequences" are the batch's rows, each with its one document.

Example:
    >>> report = trace("mixture.yaml", step=120, rank=3, world_size=8)  # doctest: +SKIP
    >>> sequence = report["sequences"][0]  # doctest: +SKIP
    >>> sequence["index"], [(d["dataset"], d["id"], d["tokens"]) for d in sequence["documents"]]
    ... # doctest: +SKIP
    (963, [('wiki@1', 'wiki-1-77', [120, 2168])])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from mixplane.configs import validate_config
from mixplane.errors import ConfigError
from mixplane.load.dataset import MixtureDataset
from mixplane.load.plan.steps import MAX_POSITION, StepLayout, delivered
from mixplane.load.read.pieces import ShardMetadata, sequence_pieces
from mixplane.load.unpacked.dataset import UnpackedDataset
from mixplane.load.unpacked.forensics import document_pieces, step_positions, token_weights
from mixplane.mix.policy.spec import PolicySpec
from mixplane.mix.spec import MixtureSpec, load_mixture

# A document's raw input, from its dataset folder and id (`mixplane.lineage.Origins.find`).
OriginFinder = Callable[[str, str], Any]
MAX_SEQUENCES = 4096  # sequences one trace lists, unless asked for more
MAX_PROPERTIES = 64
MAX_WORLD_SIZE = 1 << 20
_NO_ORIGINS = (
    "origin needs a way to follow documents to their raw inputs: pass "
    "origins=mixplane.lineage.Origins(storage_options).find (the command line and the service do)"
)
Column = Annotated[str, StringConstraints(pattern=r"^[^\x00-\x1f\x7f]{1,256}$")]


class TraceRequest(BaseModel):
    """What to trace: a training `step` (on `rank` of `world_size`, in micro-batches of
    `batch_size`) or one sequence by its global `index`; shared by the Python API, the
    `mixplane trace` command and the service."""

    model_config = ConfigDict(extra="forbid")

    step: int | None = Field(
        None, ge=0, le=MAX_POSITION, description="the training (optimizer) step"
    )
    index: int | None = Field(
        None, ge=0, le=MAX_POSITION, description="one sequence, by global position"
    )
    rank: int = Field(0, ge=0, lt=MAX_WORLD_SIZE, description="the rank whose part to show")
    world_size: int = Field(1, ge=1, le=MAX_WORLD_SIZE, description="ranks of the run")
    batch_size: int | None = Field(
        None,
        ge=1,
        le=MAX_POSITION,
        description="sequences per rank per micro-batch (needed when the mixture has no "
        "global_batch_size; with one, a step holds global_batch_size / (world_size x "
        "batch_size) micro-batches per rank)",
    )
    properties: list[Column] = Field(
        default_factory=list,
        max_length=MAX_PROPERTIES,
        description="columns to show per document: the shards' metadata, or added to the "
        "version by `mixplane annotate`",
    )
    origin: bool = Field(
        False,
        description="follow each document back to its raw input file and byte range "
        "(reads the processing steps' parts: slower)",
    )
    max_sequences: int = Field(
        MAX_SEQUENCES, ge=1, description="refuse a step with more sequences than this"
    )

    @model_validator(mode="after")
    def _one_target(self) -> TraceRequest:
        if (self.step is None) == (self.index is None):
            raise ValueError("give either step (a training step) or index (one sequence)")
        if self.rank >= self.world_size:
            raise ValueError(f"rank must be in [0, world_size), got {self.rank}")
        return self


def trace(
    mixture: MixtureSpec | dict[str, Any] | str | Path,
    request: TraceRequest | Mapping[str, Any] | None = None,
    *,
    catalog: Any = None,
    weight_log: Sequence[Mapping[str, Any]] | None = None,
    origins: OriginFinder | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """The documents of a step (or one sequence) of `mixture`, as the run received them.

    `request` (or its `fields`: step, index, rank, world_size, batch_size, properties,
    origin) says what to trace; `weight_log` is the run's weight changes (see
    `mixplane.load.adaptive.weight_log.read_weight_log`); with `origin`, `origins` finds
    each document's raw input: `mixplane.lineage.Origins(storage_options).find` (lineage
    belongs to processing, which the loader does not import).

    Example:
        >>> trace("mixture.yaml", step=5, rank=1, world_size=2, batch_size=4,
        ...       properties=["language"])["positions"]  # doctest: +SKIP
        [41, 43, 45, 47]
    """
    request = _request(request, fields)
    spec = load_mixture(mixture)
    if spec.packing == "none":
        return _trace_unpacked(spec, request, catalog, weight_log, origins)
    dataset = MixtureDataset(spec, catalog=catalog, prefetch=0, audit=False)
    try:
        if weight_log:
            dataset.apply_weight_changes(weight_log)
        return trace_dataset(dataset, request, weight_log is not None, origins)
    finally:
        dataset.close()


def _trace_unpacked(
    spec: MixtureSpec,
    request: TraceRequest,
    catalog: Any,
    weight_log: Sequence[Mapping[str, Any]] | None,
    origins: OriginFinder | None,
) -> dict[str, Any]:
    if weight_log:
        raise ConfigError(
            "this mixture has packing: none, whose weights never change (no policy or "
            "schedule): trace it without a weight log"
        )
    batch_size = request.batch_size
    if spec.bucketing is not None and batch_size is not None:
        raise ConfigError(
            "this mixture buckets its batches by max_tokens_per_batch, so a batch's size is "
            "the plan's: trace it without batch_size"
        )
    if spec.bucketing is None and batch_size is None:
        if request.step is not None:
            raise ConfigError(
                "this mixture has packing: none without bucketing: pass batch_size (documents "
                "per rank per step, as given to UnpackedDataset)"
            )
        batch_size = 1  # one document by index: the batch size does not matter
    dataset = UnpackedDataset(
        spec,
        rank=request.rank,
        world_size=request.world_size,
        batch_size=batch_size,
        catalog=catalog,
        prefetch=0,
        audit=False,
    )
    try:
        return trace_unpacked(dataset, request, origins)
    finally:
        dataset.close()


def trace_dataset(
    dataset: MixtureDataset,
    request: TraceRequest,
    exact_weights: bool = False,
    origins: OriginFinder | None = None,
) -> dict[str, Any]:
    """`trace` over a dataset already built (its weight changes are the run's when
    `exact_weights`, or when it is not adaptive)."""
    if request.origin and origins is None:
        raise ConfigError(_NO_ORIGINS)
    spec, plan = dataset.spec, dataset.plan
    if request.step is not None:
        layout = StepLayout.of(spec.global_batch_size, request.world_size, request.batch_size)
        _check_count(layout.per_rank, request.max_sequences)
        all_positions = layout.positions(request.step, request.rank)
        micro = layout.micro_batches()
        positions = delivered(all_positions, request.world_size, plan.length)
        if len(positions) == 0:
            raise ConfigError(
                f"the stream ends after {plan.length:,} sequences, before step "
                f"{request.step} (step {plan.length // layout.step_size} is its last)"
            )
        micro = micro[: len(positions)]
        step_size: int | None = layout.step_size
        batch = layout.batch_size
    else:
        positions = np.array([request.index], dtype=np.int64)
        if plan.length is not None and request.index >= plan.length:
            raise ConfigError(f"the stream ends after {plan.length:,} sequences")
        micro = np.zeros(1, dtype=np.int64)
        step_size, batch = spec.global_batch_size, 1
    if spec.policy is not None and not exact_weights:
        check_before_adapting(spec.policy, int(positions.max()), spec.sequences_per_step())
    metadata = ShardMetadata(dataset, request.properties)
    pieces = sequence_pieces(dataset, positions, request.properties, metadata)
    components = [dataset.names[c] for c in plan.blend.lookup(positions)[0].tolist()]
    steps = [p // step_size if step_size else None for p in positions.tolist()]
    rows = [row % batch for row in range(len(positions))]
    report = _report(dataset, request, metadata, positions, _weights_at(dataset, int(positions[0])))
    report["sequences"] = _sequences(
        request, positions, pieces, components, steps, micro.tolist(), rows, origins
    )
    return report


def trace_unpacked(
    dataset: UnpackedDataset, request: TraceRequest, origins: OriginFinder | None = None
) -> dict[str, Any]:
    """`trace` over an unpacked dataset (`packing: none`) built for the request's rank and
    world size: each "sequence" is a row of the rank's padded batch, one document (cut to
    seq_len) whose `tokens` start at 0."""
    if request.origin and origins is None:
        raise ConfigError(_NO_ORIGINS)
    if request.step is not None:
        positions = step_positions(dataset, request.step, request.rank)
        _check_count(len(positions), request.max_sequences)
    else:
        length = dataset.stream.length
        if length is not None and request.index >= length:
            raise ConfigError(f"the stream ends after {length:,} documents")
        positions = np.array([request.index], dtype=np.int64)
    metadata = ShardMetadata(dataset, request.properties)
    pieces = document_pieces(dataset, positions, metadata)
    components = [documents[0]["component"] for documents in pieces]
    count = len(positions)
    report = _report(dataset, request, metadata, positions, token_weights(dataset))
    report["sequences"] = _sequences(
        request,
        positions,
        pieces,
        components,
        [request.step] * count,
        [0] * count,
        list(range(count)),
        origins,
    )
    return report


def _report(
    dataset: MixtureDataset | UnpackedDataset,
    request: TraceRequest,
    metadata: ShardMetadata,
    positions: np.ndarray,
    weights: dict[str, float],
) -> dict[str, Any]:
    spec = dataset.spec
    return {
        "mixture_fingerprint": dataset.fingerprint,
        "packing": spec.packing,
        "seq_len": spec.seq_len,
        "step": request.step,
        "index": request.index,
        "rank": request.rank,
        "world_size": request.world_size,
        "batch_size": request.batch_size,
        "global_batch_size": spec.global_batch_size,
        "properties": metadata.properties,
        "positions": positions.tolist(),
        "weights": weights,
    }


def _sequences(
    request: TraceRequest,
    positions: np.ndarray,
    pieces: list[list[dict[str, Any]]],
    components: Sequence[str],
    steps: Sequence[int | None],
    micro_batches: Sequence[int],
    rows: Sequence[int],
    origins: OriginFinder | None,
) -> list[dict[str, Any]]:
    sequences = []
    for k, position in enumerate(positions.tolist()):
        documents = pieces[k]
        if request.origin and origins is not None:
            for entry in documents:
                entry["origin"] = origins(entry["folder"], entry["id"])
        sequences.append(
            {
                "index": position,
                "step": steps[k],
                "micro_batch": int(micro_batches[k]),
                "row": rows[k],
                "component": components[k],
                "documents": documents,
            }
        )
    return sequences


def _request(request: TraceRequest | Mapping[str, Any] | None, fields: dict) -> TraceRequest:
    if isinstance(request, TraceRequest):
        request = request.model_dump()
    data = {**(request or {}), **fields}
    return validate_config(TraceRequest, data, "trace")


def _check_count(sequences: int, most: int) -> None:
    if sequences > most:
        raise ConfigError(
            f"the step holds {sequences:,} sequences on this rank, more than max_sequences "
            f"{most:,}; raise it or trace one sequence (index)"
        )


def first_adapted_step(policy: PolicySpec) -> int:
    """The first step whose weights a policy may have changed: its first decision comes at
    the end of the first `update_every` steps past `warmup_steps` and applies `delay` later.

    Example:
        >>> first_adapted_step(PolicySpec(name="static", update_every=10, warmup_steps=25,
        ...                               delay=2))
        31
    """
    first_update = (policy.warmup_steps // policy.update_every + 1) * policy.update_every
    return first_update - 1 + policy.delay


def check_before_adapting(policy: PolicySpec, last_position: int, step_size: int) -> None:
    first = first_adapted_step(policy)
    if last_position >= first * step_size:
        raise ConfigError(
            f"the mixture's policy ({policy.name}) changes the weights from the run's losses, "
            f"so from step {first} on the stream is the run's own: give the run's weight log "
            "(--weight-log weights.jsonl, the file Feedback(loader, log=...) writes, or "
            "dataset.weight_log() saved) to trace what it saw"
        )


def _weights_at(dataset: MixtureDataset, position: int) -> dict[str, float]:
    """The components' weights in force at `position`."""
    segments = dataset.plan.blend.segments
    weights = next(s.weights for s in reversed(segments) if s.start <= position)
    return {name: float(w) for name, w in zip(dataset.names, weights, strict=True)}
