"""One component packed into fixed-length sequences, reshuffled every epoch (pure numpy).

The documents of an epoch are laid end to end in a seeded random order (each followed by its
EOS when one is appended), and the stream is cut every `seq_len` tokens; a document longer
than what is left of a sequence continues in the next one. The tail shorter than a sequence
is left out of that epoch (the next epoch's order differs, so different tokens fall there).

With `overlap=1` (labels for next-token prediction) a sequence holds `seq_len + 1` tokens,
the last of which is also the first of the next sequence, as in Megatron's GPT dataset.

Sequence k of epoch e is found with two binary searches in the cumulative token counts of
the epoch's order; only two arrays per epoch are held (the order and its cumulative ends).
With an `orders` store (the plan cache's `EpochOrders`) they are computed once per machine
and memory-mapped from disk, so a rank holds no copy of them; without one, in memory.

Example:
    >>> packed = PackedComponent(np.array([5, 3, 9, 2]), seq_len=4, seed=0, key="a")
    >>> packed.sequences_per_epoch
    4
    >>> spans = packed.spans(np.array([0, 1]))
    >>> spans.row.tolist(), (spans.stop - spans.begin).tolist()
    ([0, 0, 1], [3, 1, 4])
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from mixplane.errors import ConfigError


@dataclass(frozen=True)
class Spans:
    """Pieces of documents that make up a block of sequences.

    `row` is the sequence (0..n-1 of the request), `document` the component-local document,
    `begin`/`stop` the token range inside the document (its EOS, when appended, is the
    position just after its stored tokens), `column` where the piece starts in its row and
    `ordinal` its place among the row's pieces (0, 1, 2...).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ("row", "document", "begin", "stop", "column", "ordinal")

    row: np.ndarray
    document: np.ndarray
    begin: np.ndarray
    stop: np.ndarray
    column: np.ndarray
    ordinal: np.ndarray

    def __len__(self) -> int:
        return len(self.row)

    @staticmethod
    def concatenate(parts: list[Spans]) -> Spans:
        return Spans(*(np.concatenate([getattr(p, f) for p in parts]) for f in Spans.FIELDS))

    def take(self, order: np.ndarray) -> Spans:
        return Spans(*(getattr(self, f)[order] for f in Spans.FIELDS))


Order = tuple[np.ndarray, np.ndarray]  # (documents in epoch order, cumulative token ends)


class OrderStore(Protocol):
    """Where epoch orders are kept between processes (see `plan_cache.EpochOrders`)."""

    def load(self, name: str, epoch: int, build: Callable[[], Order]) -> Order: ...


def stable_key(name: str) -> int:
    """A 64-bit number for a component name, the same on every machine and Python run."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


class PackedComponent:
    """`lengths[i]` tokens for document i (its EOS included when one is appended).

    Sequences start every `seq_len` tokens and hold `seq_len + overlap` tokens.
    """

    def __init__(
        self,
        lengths: np.ndarray,
        seq_len: int,
        seed: int,
        key: str,
        cached_epochs: int = 2,
        overlap: int = 0,
        runs: tuple[np.ndarray, np.ndarray] | None = None,
        window: int | None = None,
        orders: OrderStore | None = None,
    ):
        self.lengths = np.ascontiguousarray(lengths, dtype=np.int64)
        self.seq_len = int(seq_len)
        self.width = self.seq_len + int(overlap)
        self.seed = int(seed)
        self.key = key
        self.total_tokens = int(self.lengths.sum())
        self.sequences_per_epoch = max(0, self.total_tokens - int(overlap)) // self.seq_len
        if self.sequences_per_epoch == 0:
            raise ConfigError(
                f"component {key!r} holds {self.total_tokens} tokens in {len(self.lengths)} "
                f"documents, less than one sequence of seq_len {self.seq_len}: widen its "
                "predicate or lower seq_len"
            )
        if self.lengths.min() <= 0:  # no temporary array: lengths may be 1e8 long
            raise ConfigError(f"component {key!r} has documents without tokens")
        # Shuffling by windows of `window` groups (shards): `runs` = (group, documents) of
        # each run of consecutive documents in the same group.
        if window is not None and runs is None:
            raise ValueError("a shuffle window needs the documents' runs of shards")
        self.runs = runs if window is not None else None
        self.window = window
        self.orders = orders
        self._cache: OrderedDict[int, Order] = OrderedDict()
        self._cached_epochs = cached_epochs
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.lengths)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_cache"], state["_lock"] = OrderedDict(), None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def order(self, epoch: int) -> Order:
        """`(documents in epoch order, cumulative token ends in that order)`."""
        with self._lock:
            if epoch in self._cache:
                self._cache.move_to_end(epoch)
                return self._cache[epoch]
        if self.orders is None:
            permutation, ends = self.build_order(epoch)
        else:
            permutation, ends = self.orders.load(self.name, epoch, lambda: self.build_order(epoch))
        with self._lock:
            self._cache[epoch] = (permutation, ends)
            while len(self._cache) > self._cached_epochs:
                self._cache.popitem(last=False)
        return permutation, ends

    @property
    def name(self) -> str:
        """What this component's orders are stored under: a digest of everything they depend
        on besides the documents' token counts (which the store's cache entry fixes)."""
        text = json.dumps([self.key, self.seed, self.window, len(self), self.total_tokens])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def build_order(self, epoch: int) -> Order:
        """Compute epoch `epoch`'s order (a few seconds at 1e8 documents)."""
        seeds = np.random.SeedSequence([self.seed, stable_key(self.key), epoch])
        generator = np.random.Generator(np.random.PCG64(seeds))
        index_type = np.int32 if len(self.lengths) < 2**31 else np.int64
        if self.window is None:
            # What `generator.permutation(n)` does, in the narrow type: half the memory.
            permutation = np.arange(len(self.lengths), dtype=index_type)
            generator.shuffle(permutation)
        else:
            permutation = windowed_permutation(generator, *self.runs, self.window)  # type: ignore[misc]
            permutation = permutation.astype(index_type)
        ends = self.lengths[permutation]
        return permutation, np.cumsum(ends, out=ends)

    def spans(self, indices: np.ndarray, rows: np.ndarray | None = None) -> Spans:
        """The document pieces of the component's sequences `indices` (over all epochs),
        ordered by row; `rows` numbers the sequences (default 0, 1, 2...)."""
        indices = np.asarray(indices, dtype=np.int64)
        rows = np.arange(len(indices)) if rows is None else np.asarray(rows, dtype=np.int64)
        epochs, within = np.divmod(indices, self.sequences_per_epoch)
        if len(indices) == 0 or epochs.min() == epochs.max():
            return self._epoch_spans(int(epochs[0]) if len(indices) else 0, within, rows)
        parts = []
        for epoch in np.unique(epochs).tolist():
            mine = epochs == epoch
            parts.append(self._epoch_spans(epoch, within[mine], rows[mine]))
        spans = Spans.concatenate(parts)
        return spans.take(np.argsort(spans.row, kind="stable"))

    def _epoch_spans(self, epoch: int, sequences: np.ndarray, rows: np.ndarray) -> Spans:
        # One array operation per step for the whole request: this runs for every block read.
        permutation, ends = self.order(epoch)
        width = self.width
        sequence_start = sequences * self.seq_len
        first = ends.searchsorted(sequence_start, side="right")
        counts = ends.searchsorted(sequence_start + (width - 1), side="right") - first + 1
        owner = np.arange(len(sequences)).repeat(counts)  # the request's sequence of each piece
        ordinal = np.arange(len(owner)) - (counts.cumsum() - counts)[owner]
        where = first[owner] + ordinal  # place in the epoch's order
        document = permutation[where].astype(np.int64)
        document_end = ends[where]
        document_start = document_end - self.lengths[document]
        sequence_start = sequence_start[owner]
        offset = document_start - sequence_start  # where the document starts in the row
        begin = np.maximum(-offset, 0)
        stop = np.minimum(width, document_end - sequence_start) - offset
        return Spans(rows[owner], document, begin, stop, np.maximum(offset, 0), ordinal)


def windowed_permutation(
    generator: np.random.Generator, groups: np.ndarray, counts: np.ndarray, window: int
) -> np.ndarray:
    """A permutation of the documents that visits their groups (shards) in a random order,
    `window` groups at a time, each window's documents in random order.

    `groups[i]` is the group of the i-th run of consecutive documents, `counts[i]` its length.

    >>> g = np.random.default_rng(0)
    >>> order = windowed_permutation(g, np.array([0, 1, 2]), np.array([3, 3, 3]), 1)
    >>> sorted(set(order[:3] // 3)) == [order[0] // 3]  # the first window is one shard
    True
    """
    distinct, group_index = np.unique(groups, return_inverse=True)
    position = np.empty(len(distinct), dtype=np.int64)
    position[generator.permutation(len(distinct))] = np.arange(len(distinct))
    window_of_document = np.repeat(position[group_index] // window, counts)
    # Window number plus a uniform key in [0, 1): one sort orders by window, then at random.
    keys = window_of_document + generator.random(len(window_of_document))
    return np.argsort(keys, kind="stable")
