"""What the first steps of a mixture read, document by document, from the pure order.

The plan says which document pieces fill each position without reading a token; summing
the pieces' token ranges per document gives the tokens a run took from it. No metadata is
read here: callers join the shard and row numbers with the shards' `.meta.parquet`
(`mixplane.report` does, in DuckDB).

Example:
    >>> dataset = MixtureDataset("mixture.yaml", prefetch=0)  # doctest: +SKIP
    >>> for shard, row, tokens in tokens_taken(dataset, 64):  # doctest: +SKIP
    ...     print(shard[:3], row[:3], tokens[:3])
    [0 0 2] [17 4 9] [256 31 225]
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.dataset import MixtureDataset
from mixplane.load.plan.steps import MAX_POSITION, StepLayout

# Positions planned at once: bounds the pieces held in memory, whatever the steps.
BLOCK = 1 << 15


def first_steps(
    dataset: MixtureDataset, steps: int, world_size: int, batch_size: int | None
) -> int:
    """How many sequences the first `steps` training steps read on all ranks (positions 0
    to that count), as `trace` and the loader lay steps out; the stream's end cuts them
    short.

    Example:
        >>> first_steps(dataset, 2, world_size=2, batch_size=4)  # doctest: +SKIP
        16
    """
    layout = StepLayout.of(dataset.spec.global_batch_size, world_size, batch_size)
    end = steps * layout.step_size
    if end > MAX_POSITION:
        raise ConfigError(f"{steps:,} steps of {layout.step_size:,} sequences pass any stream")
    if dataset.plan.length is not None:
        end = min(end, dataset.plan.length)
    return end


def tokens_taken(
    dataset: MixtureDataset, sequences: int, block: int | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`(shard, row, tokens)` arrays for the first `sequences` positions, a block at a
    time: for each document piece, the shard number (`dataset.resolved.shards`), the
    document's row in that shard's metadata, and the tokens taken from it (the EOS the
    loader appends included: it is in the batch). A document cut over several sequences
    appears once per piece."""
    resolved = dataset.resolved
    block = block or BLOCK
    for start in range(0, sequences, block):
        positions = np.arange(start, min(start + block, sequences), dtype=np.int64)
        found = dataset.plan.block(positions)
        spans = found.spans
        shard = np.empty(len(spans), dtype=np.int64)
        row = np.empty(len(spans), dtype=np.int64)
        for c, lo, hi in found.groups:
            shard[lo:hi], row[lo:hi] = resolved.ranges[c].locate(spans.document[lo:hi])
        yield shard, row, (spans.stop - spans.begin).astype(np.int64)
