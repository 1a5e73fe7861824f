"""Selections: which documents a query chose, as ranges of document indices per shard.

A selection never holds one Python object per document. Per dataset version it keeps four
numpy arrays with one entry per run of consecutive selected documents: the shard (an index
into `shards`), `start` and `end` (a half-open range of document indices in that shard) and the
range's token count. A query selecting every document of a shard costs one range.

Example:
    >>> part = DatasetSelection.from_runs(
    ...     "web@1", "/data/web", ("shard-00000-000", "shard-00001-000"),
    ...     shard=[0, 0, 1], start=[0, 10, 0], end=[5, 12, 3], tokens=[50, 20, 30])
    >>> part.documents, part.tokens, part.document_counts().tolist()
    (10, 100, [5, 2, 3])
    >>> shard, index = part.document_indices()
    >>> shard.tolist(), index.tolist()
    ([0, 0, 0, 0, 0, 0, 0, 1, 1, 1], [0, 1, 2, 3, 4, 10, 11, 0, 1, 2])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from mixplane.io.atomic import join_url
from mixplane.io.urls import url_filesystem

SHARD_DTYPE = np.dtype(np.int32)
INDEX_DTYPE = np.dtype(np.int64)


@dataclass(frozen=True, eq=False)
class DatasetSelection:
    """The documents selected in one dataset version.

    Attributes:
        dataset: the version, `NAME@N`.
        uri: the folder holding the shards.
        shards: shard stems; `shard` values index this tuple. The shard's files are
            `shard_path(i) + ".bin" / ".idx" / ".meta.parquet"`.
        shard, start, end, tokens: one entry per range; documents `start..end-1` of shard
            `shards[shard]` are selected and hold `tokens` tokens together. Ranges are sorted
            by (shard, start) and never touch or overlap.
        total_documents, total_tokens: the size of the whole version, for shares.
        storage_options: fsspec options to read the shards (object storage credentials).
        added: columns kept beside the shards' metadata, as (name, folder): shard `i`'s
            values are in `folder/shards[i].parquet` (see `catalog.columns`).
    """

    dataset: str
    uri: str
    shards: tuple[str, ...]
    shard: np.ndarray
    start: np.ndarray
    end: np.ndarray
    tokens_per_range: np.ndarray
    total_documents: int = 0
    total_tokens: int = 0
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    added: tuple[tuple[str, str], ...] = ()
    documents: int = field(init=False)
    tokens: int = field(init=False)

    def __post_init__(self) -> None:
        for name in ("shard", "start", "end", "tokens_per_range"):
            getattr(self, name).setflags(write=False)
        object.__setattr__(self, "documents", int((self.end - self.start).sum()))
        object.__setattr__(self, "tokens", int(self.tokens_per_range.sum()))

    @classmethod
    def from_runs(
        cls,
        dataset: str,
        uri: str,
        shards: Sequence[str],
        shard: Any,
        start: Any,
        end: Any,
        tokens: Any,
        total_documents: int = 0,
        total_tokens: int = 0,
        storage_options: dict[str, Any] | None = None,
        added: tuple[tuple[str, str], ...] = (),
    ) -> DatasetSelection:
        return cls(
            dataset,
            uri,
            tuple(shards),
            np.asarray(shard, dtype=SHARD_DTYPE),
            np.asarray(start, dtype=INDEX_DTYPE),
            np.asarray(end, dtype=INDEX_DTYPE),
            np.asarray(tokens, dtype=INDEX_DTYPE),
            total_documents,
            total_tokens,
            dict(storage_options or {}),
            tuple(added),
        )

    @property
    def ranges(self) -> int:
        return len(self.shard)

    @property
    def nbytes(self) -> int:
        """Memory held by the range arrays."""
        return sum(a.nbytes for a in (self.shard, self.start, self.end, self.tokens_per_range))

    def shard_path(self, index: int) -> str:
        """The shard's path without suffix, e.g. `/data/web/shard-00000-000`."""
        return join_url(self.uri, self.shards[index])

    def document_counts(self) -> np.ndarray:
        """Documents per range."""
        return self.end - self.start

    def per_shard(self) -> tuple[np.ndarray, np.ndarray]:
        """Selected `(documents, tokens)` per shard, arrays as long as `shards`."""
        size = len(self.shards)
        documents = np.bincount(self.shard, self.document_counts(), minlength=size)
        tokens = np.bincount(self.shard, self.tokens_per_range, minlength=size)
        return documents.astype(INDEX_DTYPE), tokens.astype(INDEX_DTYPE)

    def document_indices(self) -> tuple[np.ndarray, np.ndarray]:
        """Every selected document as `(shard, index in shard)` arrays, in range order.

        This expands the ranges: 12 bytes per selected document.
        """
        counts = self.document_counts()
        shard = np.repeat(self.shard, counts)
        offsets = np.repeat(self.start - np.cumsum(counts) + counts, counts)
        return shard, np.arange(len(shard), dtype=INDEX_DTYPE) + offsets

    def document_tokens(self) -> np.ndarray:
        """Token count of every selected document, in range order (int64).

        Reads the `n_tokens` column of the shards this selection touches.
        """
        out = np.empty(self.documents, dtype=INDEX_DTYPE)
        position = 0
        for shard in np.unique(self.shard):
            url = self.shard_path(int(shard)) + ".meta.parquet"
            counts = _read_token_counts(url, self.storage_options)
            mine = self.shard == shard
            for start, end in zip(self.start[mine], self.end[mine], strict=True):
                out[position : position + end - start] = counts[start:end]
                position += end - start
        return out

    def iter_ranges(self) -> Iterator[tuple[str, int, int, int]]:
        """`(shard path, start, end, tokens)` per range."""
        for shard, start, end, tokens in zip(
            self.shard, self.start, self.end, self.tokens_per_range, strict=True
        ):
            yield self.shard_path(int(shard)), int(start), int(end), int(tokens)

    def summary(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "documents": self.documents,
            "tokens": self.tokens,
            "total_documents": self.total_documents,
            "total_tokens": self.total_tokens,
            "ranges": self.ranges,
            "shards_touched": int(np.unique(self.shard).size),
        }


@dataclass(frozen=True, eq=False)
class Selection:
    """The result of a query: one `DatasetSelection` per dataset version queried.

    Example:
        >>> selection = Catalog("catalog.duckdb").select("language = 'de'")  # doctest: +SKIP
        >>> selection.documents, selection.tokens  # doctest: +SKIP
        >>> for part in selection:  # doctest: +SKIP
        ...     print(part.dataset, part.ranges, part.document_counts().sum())
    """

    where: str
    parts: tuple[DatasetSelection, ...]

    def __iter__(self) -> Iterator[DatasetSelection]:
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    def __getitem__(self, dataset: str) -> DatasetSelection:
        """The part for `NAME@N` or, when unambiguous, `NAME`."""
        for part in self.parts:
            if dataset in (part.dataset, part.dataset.split("@")[0]):
                return part
        raise KeyError(f"{dataset} is not in this selection: {[p.dataset for p in self.parts]}")

    @property
    def documents(self) -> int:
        return sum(part.documents for part in self.parts)

    @property
    def tokens(self) -> int:
        return sum(part.tokens for part in self.parts)

    @property
    def nbytes(self) -> int:
        return sum(part.nbytes for part in self.parts)

    def summary(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "documents": self.documents,
            "tokens": self.tokens,
            "datasets": [part.summary() for part in self.parts],
        }


def runs_of(shard: np.ndarray, row: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, ...]:
    """Compress selected documents into ranges: `(shard, start, end, tokens)`.

    Input rows may come in any order; each (shard, row) pair must appear once.

    Example:
        >>> [a.tolist() for a in runs_of(np.array([1, 0, 0, 0]), np.array([0, 3, 1, 2]),
        ...                               np.array([5, 1, 2, 3]))]
        [[0, 1], [1, 0], [4, 1], [6, 5]]
    """
    shard = np.asarray(shard, dtype=SHARD_DTYPE)
    row = np.asarray(row, dtype=INDEX_DTYPE)
    tokens = np.asarray(tokens, dtype=INDEX_DTYPE)
    if len(row) == 0:
        return _empty_runs()
    if not _in_order(shard, row):
        order = np.lexsort((row, shard))
        shard, row, tokens = shard[order], row[order], tokens[order]
    breaks = np.flatnonzero((np.diff(shard) != 0) | (np.diff(row) != 1)) + 1
    firsts = np.concatenate(([0], breaks))
    lasts = np.concatenate((breaks - 1, [len(row) - 1]))
    return shard[firsts], row[firsts], row[lasts] + 1, np.add.reduceat(tokens, firsts)


def merge_runs(pieces: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """Join runs computed batch by batch into one sorted list of maximal ranges."""
    pieces = [piece for piece in pieces if len(piece[0])]
    if not pieces:
        return _empty_runs()
    shard, start, end, tokens = (np.concatenate(column) for column in zip(*pieces, strict=True))
    if not _in_order(shard, start):
        order = np.lexsort((start, shard))
        shard, start, end, tokens = shard[order], start[order], end[order], tokens[order]
    joined = (shard[1:] == shard[:-1]) & (start[1:] == end[:-1])
    firsts = np.concatenate(([0], np.flatnonzero(~joined) + 1))
    lasts = np.concatenate((firsts[1:] - 1, [len(shard) - 1]))
    return shard[firsts], start[firsts], end[lasts], np.add.reduceat(tokens, firsts)


def _in_order(shard: np.ndarray, index: np.ndarray) -> bool:
    """True when (shard, index) pairs strictly increase, so sorting can be skipped."""
    shard_steps = np.diff(shard)
    return bool(np.all((shard_steps > 0) | ((shard_steps == 0) & (np.diff(index) > 0))))


def _read_token_counts(url: str, storage_options: dict[str, Any] | None) -> np.ndarray:
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        column = pq.read_table(handle, columns=["n_tokens"]).column("n_tokens")
    return column.to_numpy().astype(INDEX_DTYPE, copy=False)


def _empty_runs() -> tuple[np.ndarray, ...]:
    empty = np.zeros(0, dtype=INDEX_DTYPE)
    return np.zeros(0, dtype=SHARD_DTYPE), empty, empty.copy(), empty.copy()
