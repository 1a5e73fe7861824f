"""Batch forensics of an unpacked mixture (`packing: none`): which documents a rank's batch
of a step holds, each with where its tokens come from (what `trace` and `explain` show).

A step is one padded batch per rank, planned window by window (`plan.buckets`): with fixed
batches every full window holds the same number of steps, so step S's window is found by
division; with bucketing a window's step count depends on its documents' lengths, so the
windows before S are planned in turn (at most `MAX_WINDOWS` of them: a few ms of CPU each
for windows of 8192 documents, so a step deep into a long run takes seconds). Each row is one
document cut to seq_len: its entry is the packed trace's, with `tokens` [0, row length)
(the appended EOS included when the cut keeps it) and `column` 0.

Example:
    >>> dataset = UnpackedDataset("sft.yaml", world_size=8)  # doctest: +SKIP
    >>> positions = step_positions(dataset, step=40, rank=3)  # doctest: +SKIP
    >>> [d["id"] for [d] in document_pieces(dataset, positions, ShardMetadata(dataset, []))]
    ... # doctest: +SKIP
    ['chat-2-77', 'chat-2-1041', 'chat-2-9']
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.read.pieces import ShardMetadata, piece_entries
from mixplane.load.unpacked.batch import locate

if TYPE_CHECKING:
    from mixplane.load.unpacked.dataset import UnpackedDataset

# Bucketed windows planned to find one step (33M documents at the default window of 8192):
# a bound on what one trace, and one request to the service, may cost.
MAX_WINDOWS = 4096


def step_positions(dataset: UnpackedDataset, step: int, rank: int) -> np.ndarray:
    """Global document positions of rank `rank`'s batch of step `step` (counted from the
    stream's start) for the dataset's world size, in row order."""
    plan = dataset.plan
    if plan.batch_size is not None:  # every full window holds the same number of steps
        per_window = plan.window_size // plan.unit
        number, within = divmod(step, per_window)
        window = dataset.window(number)
        if within >= window.steps:
            ends = number * per_window + window.steps
            raise ConfigError(f"the stream ends after step {ends - 1} (it has {ends:,} steps)")
        return window.batch(within, rank)
    before = 0
    for number in range(MAX_WINDOWS):
        window = dataset.window(number)
        if window.steps == 0:
            raise ConfigError(f"the stream ends after step {before - 1} (it has {before:,} steps)")
        if step < before + window.steps:
            return window.batch(step - before, rank)
        before += window.steps
    raise ConfigError(
        f"step {step} lies past the first {MAX_WINDOWS:,} bucketing windows ({before:,} steps), "
        "which a trace does not plan; trace its documents by index (batch['index'] holds each "
        "row's position)"
    )


def document_pieces(
    dataset: UnpackedDataset, positions: np.ndarray, metadata: ShardMetadata
) -> list[list[dict[str, Any]]]:
    """For each of `positions`, the one document its row holds, as a one-entry list (the
    shape `sequence_pieces` gives packed sequences)."""
    located = locate(dataset.stream, dataset.resolved, np.asarray(positions, dtype=np.int64))
    zeros = np.zeros(len(located.positions), dtype=np.int64)
    entries = piece_entries(
        dataset,
        metadata,
        located.components,
        located.documents,
        zeros,
        located.lengths,
        zeros,
    )
    return [[entry] for entry in entries]


def documents_taken(
    dataset: UnpackedDataset, steps: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`(shard, row, tokens)` arrays of the documents the first `steps` steps read on all
    ranks (the dataset's world size), a window at a time: for each row of each batch, the
    shard number (`dataset.resolved.shards`), the document's row in that shard's metadata,
    and the tokens the row holds (cut to seq_len; padding is not counted). The stream's
    end cuts the steps short."""
    done, number = 0, 0
    while done < steps:
        window, located = dataset.planned_window(number)
        if window.steps == 0:  # past the end of the stream
            return
        taken = min(window.steps, steps - done)
        rows = np.concatenate(window.batches[: taken * window.world_size])
        components, documents = located.components[rows], located.documents[rows]
        shard = np.empty(len(rows), dtype=np.int64)
        row = np.empty(len(rows), dtype=np.int64)
        for component in np.unique(components):
            chosen = components == component
            locate_in = dataset.resolved.ranges[int(component)].locate
            shard[chosen], row[chosen] = locate_in(documents[chosen])
        yield shard, row, located.lengths[rows].astype(np.int64)
        done, number = done + taken, number + 1


def token_weights(dataset: UnpackedDataset) -> dict[str, float]:
    """The components' shares of tokens (the mixture's weights; documents are drawn in
    proportion to these over their mean lengths)."""
    stream = dataset.stream
    weights = stream.tree.leaf_weights(stream.leaf_tokens)
    weights = weights / weights.sum()
    return {name: float(w) for name, w in zip(stream.names, weights, strict=True)}
