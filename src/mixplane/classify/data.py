"""Training examples: from a catalog selection, or from document files.

Either source is a pool: it knows how many documents it could give (`available`) and gives a
seeded sample of `n` of them (`take` for the texts, `take_examples` for id, text and
target), so both classes can be sampled to the same size.

- A catalog selection (`where`, optional `datasets`): `n` positions drawn without replacement
  by numpy's generator seeded with (seed, class number); the text is decoded from the
  dataset's tokens with the tokenizer saved beside it.
- Files (`paths`: JSON Lines or Parquet files, globs, or folders such as a `process` output):
  each document gets a key, the 64-bit xxh3 of (seed, class number, file name, record
  number); the sample is the `n` documents with the smallest keys. The choice depends only
  on the data and the seed, not on the order files are read in. At most `max_per_class`
  texts are held in memory while reading.

With a `target` (a function of a document's id and properties, see `labels.py`), a pool
holds only the documents it gives a value (a score, or a class) and counts the others as
`unlabelled`; the sample is drawn from the labelled ones. A catalog pool then reads the
properties of every selected document once, to know which are labelled.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xxhash

from mixplane.errors import InputError
from mixplane.io.readers import Quarantined, ReadOptions, ReadStats, detect_format, reader_for
from mixplane.io.readers.base import Shard
from mixplane.io.urls import expand_inputs

FILE_FORMATS = ("jsonl", "parquet")

#: A document's training target from its id and properties; None when it has none.
#: Raises ValueError (with the problem in words) for a value it cannot use.
Target = Callable[[str, dict[str, Any]], float | None]


@dataclass(frozen=True, slots=True)
class Example:
    """One training example: the document's id, its text, and its target (None without)."""

    id: str
    text: str
    target: float | None = None


@dataclass
class CatalogPool:
    """Documents a catalog query selects."""

    catalog: str
    where: str
    datasets: list[str] | None
    seed: int
    stream: int
    target: Target | None = None
    selection: Any = field(init=False, repr=False)
    unlabelled: int = field(init=False, default=0)
    # With a target: the labelled documents' positions in the selection, and their targets.
    _labelled: np.ndarray | None = field(init=False, repr=False, default=None)
    _targets: dict[int, float] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        from mixplane.catalog import Catalog

        self.selection = Catalog(self.catalog).select(self.where, self.datasets)
        if self.target is not None:
            self._find_labelled()

    def _find_labelled(self) -> None:
        from mixplane.catalog.sample import documents_at

        assert self.target is not None
        positions: list[int] = []
        offset = 0
        for part in self.selection:
            rows = documents_at(part, np.arange(part.documents), decode=False)
            for number, row in enumerate(rows):
                document = f"{row['shard']}#{row['index']}"
                where = f"dataset {part.dataset} ({part.uri}): document {document}"
                value = _target_of(self.target, str(row.get("id")), row, where)
                if value is None:
                    self.unlabelled += 1
                    continue
                positions.append(offset + number)
                self._targets[offset + number] = value
            offset += part.documents
        self._labelled = np.array(positions, dtype=np.int64)

    @property
    def available(self) -> int:
        if self._labelled is not None:
            return len(self._labelled)
        return int(self.selection.documents)

    def take(self, n: int) -> list[str]:
        return [example.text for example in self.take_examples(n)]

    def take_examples(self, n: int) -> list[Example]:
        from mixplane.catalog.sample import documents_at

        rng = np.random.default_rng([self.seed, self.stream])
        drawn = rng.choice(self.available, size=n, replace=False)
        chosen = np.sort(drawn if self._labelled is None else self._labelled[drawn])
        examples: list[Example] = []
        offset = 0
        for part in self.selection:
            local = chosen[(chosen >= offset) & (chosen < offset + part.documents)] - offset
            if len(local):
                for position, row in zip(local.tolist(), documents_at(part, local), strict=True):
                    if row.get("text") is None:
                        raise InputError(
                            f"dataset {part.dataset} ({part.uri}): document {row['shard']}#"
                            f"{row['index']} has no text to read (no tokenizer saved beside the "
                            "shards); train from the processed folder instead"
                        )
                    target = self._targets.get(offset + position)
                    examples.append(Example(str(row.get("id")), row["text"], target))
            offset += part.documents
        return examples

    def describe(self) -> dict[str, Any]:
        described = {
            "catalog": self.catalog,
            "where": self.where,
            "datasets": [part.dataset for part in self.selection],
            "available": self.available,
        }
        if self.target is not None:
            described["unlabelled"] = self.unlabelled
        return described


@dataclass
class FilePool:
    """Documents in JSON Lines or Parquet files (or folders of them)."""

    paths: list[str]
    text_key: str
    seed: int
    stream: int
    max_per_class: int | None
    storage_options: dict[str, Any] = field(default_factory=dict)
    target: Target | None = None
    files: list[str] = field(init=False)
    count: int = field(init=False, default=0)
    unlabelled: int = field(init=False, default=0)
    # Max-heap of the smallest keys seen: (-key, text, id, target).
    _heap: list[tuple[int, str, str, float | None]] = field(
        init=False, repr=False, default_factory=list
    )

    def __post_init__(self) -> None:
        found = expand_inputs(self.paths, self.storage_options)
        self.files = [url for url, _ in found]
        options = ReadOptions(text_key=self.text_key, storage_options=self.storage_options)
        for url, root in found:
            fmt = detect_format(url)
            if fmt not in FILE_FORMATS:
                raise InputError(
                    f"{url}: not a JSON Lines or Parquet file; training examples come from "
                    f"those (or from a catalog selection)"
                )
            name = url[len(root) :].lstrip("/") if root and url.startswith(root) else url
            self._read(reader_for(fmt)(Shard(url, name, fmt), options, ReadStats()), name)

    def _read(self, records, name: str) -> None:
        prefix = f"{self.seed}\0{self.stream}\0{name}\0".encode()
        for number, record in enumerate(records):
            if isinstance(record, Quarantined):
                where = record.location
                raise InputError(f"{where}: cannot read a training example: {record.error}")
            self.count += 1
            value = None
            if self.target is not None:
                where = f"{name}: record {number} (id {record.id!r})"
                value = _target_of(self.target, record.id, record.metadata, where)
                if value is None:
                    self.unlabelled += 1
                    continue
            key = xxhash.xxh3_64_intdigest(prefix + str(number).encode())
            item = (-key, record.text, record.id, value)
            if self.max_per_class is None or len(self._heap) < self.max_per_class:
                heapq.heappush(self._heap, item)
            elif item > self._heap[0]:
                heapq.heapreplace(self._heap, item)

    @property
    def available(self) -> int:
        return min(self.count - self.unlabelled, len(self._heap))

    def take(self, n: int) -> list[str]:
        return [example.text for example in self.take_examples(n)]

    def take_examples(self, n: int) -> list[Example]:
        smallest = sorted(self._heap, reverse=True)[:n]  # by key, ascending
        return [Example(doc_id, text, value) for _, text, doc_id, value in smallest]

    def describe(self) -> dict[str, Any]:
        described = {"paths": self.paths, "files": len(self.files), "documents": self.count}
        if self.target is not None:
            described["unlabelled"] = self.unlabelled
        return described


def _target_of(target: Target, doc_id: str, properties: dict[str, Any], where: str):
    try:
        return target(doc_id, properties)
    except ValueError as error:
        raise InputError(f"{where}: {error}") from None
