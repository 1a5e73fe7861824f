"""From stream positions to sample arrays, in two steps: plan, then copy.

`plan_block` does the array arithmetic (which document pieces fill each sequence, where they
are stored and where they go) and allocates the outputs; `PlannedBlock.fill` copies the
tokens and numbers the document pieces in compiled code that releases the GIL. Split this
way, a reading thread fills one block while the training loop consumes the previous one,
and the two hardly compete for the interpreter.

Example:
    >>> planned = plan_block(dataset.context, np.arange(8))  # doctest: +SKIP
    >>> planned.fill()["input_ids"].shape  # doctest: +SKIP
    (8, 2048)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mixplane.load._pieces import copy_pieces, number_pieces
from mixplane.load.read.labels import loss_mask, with_unshifted_labels
from mixplane.load.read.refs import DocumentNumbers, fill_refs
from mixplane.load.read.source import TokenSource

if TYPE_CHECKING:
    from mixplane.load.plan.resolved import ResolvedMixture
    from mixplane.load.plan.samples import Block, SamplePlan


@dataclass(frozen=True)
class ReadContext:
    """What reading a mixture's sequences needs: the plan, the resolved documents, the open
    token shards, which boundary arrays to produce and, for `document_refs`, how documents
    are numbered."""

    plan: SamplePlan
    resolved: ResolvedMixture
    source: TokenSource
    boundaries: str
    refs: DocumentNumbers | None = None


@dataclass
class PlannedBlock:
    """Output arrays allocated for a block of sequences and the pieces that fill them.

    Index arrays are int64, one entry per piece: `take` stored tokens of shard `shard` from
    token `first` go to flat position `target`; `lengths` counts the piece's tokens with its
    appended EOS (at `eos_at` in the flat output), `ordinal` is its place in its sequence.
    """

    arrays: dict[str, np.ndarray]
    source: TokenSource
    shard: np.ndarray
    first: np.ndarray
    take: np.ndarray
    target: np.ndarray
    lengths: np.ndarray
    ordinal: np.ndarray
    eos_at: np.ndarray
    # The spec's `labels`: True, rows hold one token more, the last label; "huggingface".
    labels: bool | str = False
    pinned: np.ndarray | None = None  # remote shards held in the cache until filled
    by_ranges: bool = False  # remote pieces fetched by ranges, not from cached shards
    linger: bool = False  # once filled, its shards stay pinned until `TokenSource.settle`
    refs: tuple[np.ndarray, np.ndarray] | None = None  # per piece: dataset, document number

    def fill(self) -> dict[str, np.ndarray]:
        """Copy the tokens and write the boundaries; returns the filled arrays."""
        tokens = self.arrays["input_ids"]
        mask = None
        try:
            sources, shard, first = self.source.piece_sources(
                self.shard, self.first, self.take, self.by_ranges
            )
            copy_pieces(tokens, sources, shard, first, self.take, self.target)
            if self.labels:
                mask = loss_mask(self.source, tokens.shape, self)
        finally:
            self.release()
        if len(self.eos_at):
            tokens.reshape(-1)[self.eos_at] = self.source.eos_id
        if "document_ids" in self.arrays:
            number_pieces(self.arrays["document_ids"], self.target, self.lengths, self.ordinal, 0)
        if "position_ids" in self.arrays:
            zero = np.zeros(len(self.target), dtype=np.int64)
            number_pieces(self.arrays["position_ids"], self.target, self.lengths, zero, 1)
        if self.refs is not None:
            fill_refs(self.arrays["document_refs"], self.target, self.lengths, *self.refs)
        if self.labels == "huggingface":
            return with_unshifted_labels(self.arrays, mask, self.target)
        return with_labels(self.arrays, mask) if self.labels else self.arrays

    def release(self) -> None:
        """Let the cache evict the remote shards this block read (once: filled or dropped)."""
        pinned, self.pinned = self.pinned, None
        if pinned is not None and len(pinned):
            self.source.release(pinned, self.linger)


@dataclass
class FilledBlock:
    """A block whose arrays were filled elsewhere: a DataLoader worker's first batch, read
    by the training process as the worker started (`MixtureDataset.open_for_workers`)."""

    arrays: dict[str, np.ndarray]

    def fill(self) -> dict[str, np.ndarray]:
        return self.arrays

    def release(self) -> None:
        """Nothing is held: the training process read it."""


def with_labels(
    arrays: dict[str, np.ndarray], mask: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Rows of seq_len + 1 tokens as Megatron's samples: inputs, the next token of each
    (`labels`) and a `loss_mask`: the mask of each label token (ones without `mask`). The
    token arrays are views, nothing is copied."""
    tokens = arrays["input_ids"]
    out = {"input_ids": tokens[:, :-1], "labels": tokens[:, 1:]}
    if mask is None:
        out["loss_mask"] = np.ones(out["labels"].shape, dtype=np.float32)
    else:
        out["loss_mask"] = mask[:, 1:].astype(np.float32)
    for key, value in arrays.items():
        if key not in out:
            out[key] = value[:, :-1] if value.ndim >= 2 else value
    return out


def plan_block(
    context: ReadContext,
    positions: np.ndarray,
    by_ranges: bool = False,
    block: Block | None = None,
    linger: bool = False,
) -> PlannedBlock:
    """Plan the sequences at global `positions` (sorted or not) of the stream; `by_ranges`:
    fetch its remote pieces by ranges, not from cached shards (a reader's opening block, see
    `TokenSource.opening_by_ranges`); `block`: `plan.block(positions)`, if already known;
    `linger`: keep its remote shards pinned once filled, until the reader's next block."""
    plan, resolved, source = context.plan, context.resolved, context.source
    if block is None or not np.array_equal(block.positions, positions):
        block = plan.block(positions)
    spans = block.spans
    rows, width = len(positions), plan.spec.seq_len + int(plan.spec.shifted_labels)
    shard = np.empty(len(spans), dtype=np.int64)
    first = np.empty(len(spans), dtype=np.int64)
    stored = np.empty(len(spans), dtype=np.int64)
    for c, lo, hi in block.groups:
        documents = spans.document[lo:hi]
        shard[lo:hi] = resolved.ranges[c].shard_of(documents)
        first[lo:hi] = resolved.starts[c][documents]
        stored[lo:hi] = resolved.lengths[c][documents]
    first += spans.begin
    stored -= resolved.appended[shard]
    lengths = spans.stop - spans.begin
    take = np.minimum(spans.stop, stored) - spans.begin
    target = spans.row * width + spans.column
    # A piece reaching past its document's stored tokens ends in the appended EOS.
    eos_at = (target + take)[take < lengths]
    if len(eos_at) and source.eos_id is None:
        raise ValueError("an appended EOS is needed but no eos_id is known")
    pinned = source.open(shard, pin=not by_ranges)
    arrays = {
        "input_ids": np.empty((rows, width), dtype=source.dtype),
        "component": block.components.astype(np.int64),
        "index": positions.astype(np.int64),
    }
    if context.boundaries in ("document_ids", "both"):
        arrays["document_ids"] = np.empty((rows, width), dtype=np.int32)
    # Hugging Face models find packed documents by their position_ids restarting.
    if context.boundaries in ("position_ids", "both") or plan.spec.labels == "huggingface":
        arrays["position_ids"] = np.empty((rows, width), dtype=np.int32)
    refs = None
    if context.refs is not None:
        index = np.empty(len(spans), dtype=np.int64)
        for c, lo, hi in block.groups:
            index[lo:hi] = resolved.ranges[c].locate(spans.document[lo:hi])[1]
        refs = context.refs.refs(shard, index)
        arrays["document_refs"] = np.empty((rows, width, 2), dtype=np.int64)
    return PlannedBlock(
        arrays,
        source,
        shard,
        first,
        take,
        target,
        lengths,
        spans.ordinal,
        eos_at,
        plan.spec.labels,
        pinned,
        by_ranges,
        linger,
        refs,
    )
