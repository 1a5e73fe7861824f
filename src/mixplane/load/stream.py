"""One reader's pass over a rank's stream: chunks read ahead, handed out one by one.

A `Stream` is an iterator with explicit state kept on its dataset (`base`, `read`), so a
checkpoint is a dict. Chunks of positions are turned into arrays in a background thread;
a weight change drops what was read ahead and reads it again under the new weights.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from mixplane.load.partition import Layout
from mixplane.load.prefetch import Prefetcher

if TYPE_CHECKING:
    from mixplane.load.dataset import MixtureDataset


class Stream:
    """Samples (or whole batches) for `layout`, from the dataset's `read` on."""

    def __init__(
        self,
        dataset: MixtureDataset,
        layout: Layout,
        batched: bool = False,
        poll: Callable[[MixtureDataset], None] | None = None,
        prefetch: int | None = None,
    ):
        self.dataset = dataset
        self.prefetch = dataset.prefetch if prefetch is None else prefetch
        self.layout = layout
        self.batched = batched
        self.poll = poll
        blocks = max(1, -(-dataset.read_ahead // layout.block))
        self.chunk = blocks * layout.block
        self._ahead: Prefetcher | None = None
        self.restart()

    # -- producing -----------------------------------------------------------------------

    def _chunks(self, start: int) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        dataset, layout = self.dataset, self.layout
        limit = layout.local_limit(dataset.base, dataset.plan.length)
        cursor = start
        while True:
            local = layout.owned(cursor, self.chunk)
            if limit is not None:
                local = local[local < limit]
            if len(local) == 0:
                return
            yield local, self.read_block(dataset, layout.positions(dataset.base, local))
            cursor = int(local[-1]) + 1

    @staticmethod
    def read_block(dataset: MixtureDataset, positions: np.ndarray) -> dict[str, np.ndarray]:
        """Arrays for the sequences at `positions`: tokens, component, document boundaries."""
        plan, resolved = dataset.plan, dataset.resolved
        block = plan.block(positions)
        spans = block.spans
        rows, seq_len = len(positions), plan.spec.seq_len
        shard = np.empty(len(spans), dtype=np.int64)
        first = np.empty(len(spans), dtype=np.int64)
        stored = np.empty(len(spans), dtype=np.int64)
        for c in np.unique(block.span_component):
            mine = block.span_component == c
            documents = spans.document[mine]
            shard[mine] = resolved.ranges[c].locate(documents)[0]
            first[mine] = resolved.starts[c][documents] + spans.begin[mine]
            stored[mine] = resolved.lengths[c][documents]
        stored -= resolved.appended[shard]
        lengths = spans.stop - spans.begin
        take = np.minimum(spans.stop, stored) - spans.begin
        target = spans.row * seq_len + spans.column
        # A piece reaching past its document's stored tokens ends in the appended EOS.
        eos = take < lengths
        tokens = dataset.source.fill(shard, first, take, target, eos, rows * seq_len)
        out = {
            "input_ids": tokens.reshape(rows, seq_len),
            "component": block.components.astype(np.int64),
            "index": positions.astype(np.int64),
        }
        if dataset.boundaries in ("document_ids", "both"):
            first_of_row = np.searchsorted(spans.row, spans.row, side="left")
            ordinal = (np.arange(len(spans)) - first_of_row).astype(np.int32)
            out["document_ids"] = np.repeat(ordinal, lengths).reshape(rows, seq_len)
        if dataset.boundaries in ("position_ids", "both"):
            flat = np.arange(rows * seq_len, dtype=np.int32)
            flat -= np.repeat(target.astype(np.int32), lengths)
            out["position_ids"] = flat.reshape(rows, seq_len)
        return out

    # -- handing out ---------------------------------------------------------------------

    def restart(self) -> None:
        """Drop everything read ahead; continue from the first local index not handed out."""
        if self._ahead is not None:
            self._ahead.close()
        self._take([], np.zeros(0, dtype=np.int64), {})
        self._ahead = Prefetcher(self._chunks(self.dataset.read), self.prefetch)

    def _take(self, item_ends: list[int], local: np.ndarray, arrays: dict) -> None:
        self._local, self._arrays = local, arrays
        self._ends = item_ends  # where each item handed out ends, in rows of the chunk
        self._item = 0
        self._next = 0

    def _item_ends(self, local: np.ndarray) -> list[int]:
        if not self.batched:
            return list(range(1, len(local) + 1))
        # A batch is one block of the layout (the last one may be cut short by the end).
        blocks = local // self.layout.block
        return (np.flatnonzero(np.diff(blocks)) + 1).tolist() + [len(local)]

    def close(self) -> None:
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> dict[str, Any]:
        if self.poll is not None:
            self.poll(self.dataset)
        if self._item >= len(self._ends):
            if self._ahead is None:
                raise StopIteration
            try:
                local, arrays = next(self._ahead)
            except StopIteration:
                self.close()
                raise
            self._take(self._item_ends(local), local, arrays)
        start, stop = self._next, self._ends[self._item]
        if self.batched:
            item = {key: value[start:stop] for key, value in self._arrays.items()}
        else:
            item = {key: value[start] for key, value in self._arrays.items()}
        self._item += 1
        self._next = stop
        self.dataset.read = int(self._local[stop - 1]) + 1
        return item
