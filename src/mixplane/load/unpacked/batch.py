"""A padded batch of whole documents: where their tokens are, and the arrays they fill.

Each row is one document cut to `seq_len` (its appended EOS included when it fits), left
aligned and followed by `pad_id` up to the batch's width: its longest row rounded up to
`pad_to_multiple_of`. `attention_mask` (int32) is 1 over the document's tokens and 0 over padding.
With labels (`labels: huggingface`), `labels` are the inputs with -100 over padding, at each
row's first token and where a fine-tuning shard's loss mask says not to train.
The copy itself is the packed loader's (`read.assemble.PlannedBlock`); the pads are
written after it by the same compiled kernel.

Example:
    >>> located = locate(dataset.stream, dataset.resolved, positions)  # doctest: +SKIP
    >>> [batch] = padded_batches(located, [np.arange(3)], dataset.source, 0, 8).fill()
    ... # doctest: +SKIP
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
from mixplane.load.read.labels import IGNORE_INDEX
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
    """Padded batches planned together and filled in one pass over one flat buffer each for
    the tokens and the mask: the documents' copy (the packed loader's `PlannedBlock`), the
    pad id after each row's tokens (only there: a few percent of a bucketed batch), then the
    attention mask; each batch is a view of its part of the buffers."""

    planned: PlannedBlock
    pad_id: int
    widths: np.ndarray  # per batch
    sizes: np.ndarray  # rows per batch
    row_width: np.ndarray  # per row: its batch's width

    def fill(self) -> list[dict[str, np.ndarray]]:
        planned = self.planned
        arrays = planned.fill()
        tokens, lengths, target = arrays["input_ids"], planned.lengths, planned.target
        after, pads = target + lengths, self.row_width - lengths
        number_pieces(tokens, after, pads, np.full(len(pads), self.pad_id, dtype=np.int64), 0)
        # int32 like `document_ids`: the kernel's fastest width (an int64 mask cost more CPU
        # than copying the tokens); models take any integer mask.
        mask = np.empty(tokens.shape, dtype=np.int32)
        number_pieces(mask, target, lengths, np.ones(len(lengths), dtype=np.int64), 0)
        number_pieces(mask, after, pads, np.zeros(len(pads), dtype=np.int64), 0)
        labels = arrays.get("labels")
        if labels is not None:
            labels[mask == 0] = IGNORE_INDEX
        batches, row, flat = [], 0, 0
        for size, width in zip(self.sizes.tolist(), self.widths.tolist(), strict=True):
            cells, rows = size * width, slice(row, row + size)
            batch = {
                "input_ids": tokens[flat : flat + cells].reshape(size, width),
                "attention_mask": mask[flat : flat + cells].reshape(size, width),
                "component": arrays["component"][rows],
                "index": arrays["index"][rows],
            }
            if labels is not None:
                batch["labels"] = labels[flat : flat + cells].reshape(size, width)
            batches.append(batch)
            row, flat = row + size, flat + cells
        return batches

    def release(self) -> None:
        """Let the cache evict the remote shards these batches read (once)."""
        self.planned.release()


def padded_batches(
    located: Located,
    batches: list[np.ndarray],
    source: TokenSource,
    pad_id: int,
    multiple: int,
    labels: bool = False,
) -> PaddedBlock:
    """Plan the padded batches of the documents `batches` (rows of `located`, each non-empty)
    as one block (fill it to read); `labels`: the batches carry Hugging Face labels."""
    sizes = np.array([len(b) for b in batches], dtype=np.int64)
    rows = np.concatenate(batches) if batches else np.zeros(0, dtype=np.int64)
    lengths = located.lengths[rows]
    starts = np.cumsum(sizes) - sizes
    widths = padded(np.maximum.reduceat(lengths, starts), multiple) if len(rows) else sizes
    row_width = np.repeat(widths, sizes)
    offsets = np.cumsum(sizes * widths) - sizes * widths
    row_in_batch = np.arange(len(rows)) - np.repeat(starts, sizes)
    target = np.repeat(offsets, sizes) + row_in_batch * row_width
    shard = located.shard[rows]
    take = np.minimum(lengths, located.stored[rows])
    eos_at = (target + take)[take < lengths]  # the appended EOS, where the cut keeps it
    if len(eos_at) and source.eos_id is None:
        raise ValueError("an appended EOS is needed but no eos_id is known")
    arrays = {
        "input_ids": np.empty(int((sizes * widths).sum()), dtype=source.dtype),
        "component": located.components[rows],
        "index": located.positions[rows],
    }
    pinned = source.open(shard)
    ordinal = np.zeros(len(rows), dtype=np.int64)
    first = located.first[rows]
    planned = PlannedBlock(
        arrays,
        source,
        shard,
        first,
        take,
        target,
        lengths,
        ordinal,
        eos_at,
        labels="huggingface" if labels else False,
        pinned=pinned,
    )
    return PaddedBlock(planned, pad_id, widths, sizes, row_width)


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
