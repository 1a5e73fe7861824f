"""A padded batch of whole documents: where their tokens are, and the arrays they fill.

Each row is one document cut to `seq_len` (its appended EOS included when it fits), left
aligned and followed by `pad_id` up to the batch's width: its longest row rounded up to
`pad_to_multiple_of`. `attention_mask` (int32) is 1 over the document's tokens and 0 over padding.
The copy itself is the packed loader's (`read.assemble.PlannedBlock`); the pads are
written after it by the same compiled kernel.

Example:
    >>> located = locate(dataset.stream, dataset.resolved, positions)  # doctest: +SKIP
    >>> batch = padded_batch(located, np.arange(3), dataset.source, 0, 8).fill()  # doctest: +SKIP
    >>> batch["input_ids"].shape, batch["attention_mask"].sum(1)  # doctest: +SKIP
    ((3, 16), array([13, 9, 16]))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load._pieces import number_pieces
from mixplane.load.plan.buckets import padded
from mixplane.load.plan.documents import DocumentStream
from mixplane.load.plan.resolved import ResolvedMixture
from mixplane.load.read.assemble import PlannedBlock
from mixplane.load.read.source import TokenSource


@dataclass(frozen=True)
class Located:
    """Documents at global `positions`: their component, component-local document, length
    cut to seq_len, shard number, first token's offset in it and stored token count (the
    appended EOS not counted). Found once per window, so a batch only indexes them."""

    positions: np.ndarray
    components: np.ndarray
    documents: np.ndarray
    lengths: np.ndarray
    shard: np.ndarray
    first: np.ndarray
    stored: np.ndarray


def locate(stream: DocumentStream, resolved: ResolvedMixture, positions: np.ndarray) -> Located:
    """Where the documents at global `positions` are stored."""
    positions = np.asarray(positions, dtype=np.int64)
    components, documents, lengths = stream.lookup(positions)
    shard, first, stored = (np.empty(len(positions), dtype=np.int64) for _ in range(3))
    for c in np.unique(components).tolist():
        mine = components == c
        docs = documents[mine]
        shard[mine] = resolved.ranges[c].shard_of(docs)
        first[mine] = resolved.starts[c][docs]
        stored[mine] = resolved.lengths[c][docs]
    stored -= resolved.appended[shard]
    return Located(positions, components, documents, lengths, shard, first, stored)


@dataclass
class PaddedBlock:
    """A planned batch: the documents' copy (the packed loader's `PlannedBlock`), then the
    pad id after each row's tokens (only there: a few percent of a bucketed batch) and the
    attention mask."""

    planned: PlannedBlock
    pad_id: int

    def fill(self) -> dict[str, np.ndarray]:
        planned = self.planned
        arrays = planned.fill()
        tokens, lengths, target = arrays["input_ids"], planned.lengths, planned.target
        after, pads = target + lengths, tokens.shape[1] - lengths
        number_pieces(tokens, after, pads, np.full(len(pads), self.pad_id, dtype=np.int64), 0)
        # int32 like `document_ids`: the kernel's fastest width (an int64 mask cost more CPU
        # than copying the tokens); models take any integer mask.
        mask = np.empty(tokens.shape, dtype=np.int32)
        number_pieces(mask, target, lengths, np.ones(len(lengths), dtype=np.int64), 0)
        number_pieces(mask, after, pads, np.zeros(len(pads), dtype=np.int64), 0)
        arrays["attention_mask"] = mask
        return arrays

    def release(self) -> None:
        """Let the cache evict the remote shards this batch read (once: filled or dropped)."""
        self.planned.release()


def padded_batch(
    located: Located, rows: np.ndarray, source: TokenSource, pad_id: int, multiple: int
) -> PaddedBlock:
    """Plan the padded batch of the documents `rows` of `located` (fill it to read)."""
    lengths = located.lengths[rows]
    count = len(rows)
    width = int(padded(lengths.max(), multiple)) if count else 0
    shard = located.shard[rows]
    take = np.minimum(lengths, located.stored[rows])
    target = np.arange(count, dtype=np.int64) * width
    eos_at = (target + take)[take < lengths]  # the appended EOS, where the cut keeps it
    if len(eos_at) and source.eos_id is None:
        raise ValueError("an appended EOS is needed but no eos_id is known")
    arrays = {
        "input_ids": np.empty((count, width), dtype=source.dtype),
        "component": located.components[rows],
        "index": located.positions[rows],
    }
    pinned = source.open(shard)
    zeros = np.zeros(count, dtype=np.int64)
    first = located.first[rows]
    planned = PlannedBlock(
        arrays, source, shard, first, take, target, lengths, zeros, eos_at, pinned=pinned
    )
    return PaddedBlock(planned, pad_id)


def pad_id_of(pad_id: int | None, datasets: list[Mapping[str, Any]], dtype: np.dtype) -> int:
    """The padding token: the mixture's `pad_id`, else the one every dataset's tokenizer
    records; refused when unknown or when `dtype` cannot hold it."""
    if pad_id is None:
        found = {(info.get("tokenizer") or {}).get("pad_id") for info in datasets}
        if len(found) != 1 or None in found:
            eos = sorted({str((i.get("tokenizer") or {}).get("eos_id")) for i in datasets})
            raise ConfigError(
                "packing: none pads batches, but the mixture's datasets record no single "
                f"padding token (their tokenizers' pad_id: {sorted(map(str, found))}); set "
                f"pad_id in the mixture (the tokenizer's pad token, or its EOS: {', '.join(eos)})"
            )
        pad_id = int(found.pop())  # type: ignore[arg-type]
    if pad_id > np.iinfo(dtype).max:
        raise ConfigError(f"pad_id {pad_id} does not fit dtype {dtype}; use int32 or int64")
    return pad_id
