"""Training examples of one class: from a catalog selection, or from document files.

Either source is a pool: it knows how many documents it could give (`available`) and gives a
seeded sample of `n` of them (`take`), so both classes can be sampled to the same size.

- A catalog selection (`where`, optional `datasets`): `n` positions drawn without replacement
  by numpy's generator seeded with (seed, class number); the text is decoded from the
  dataset's tokens with the tokenizer saved beside it.
- Files (`paths`: JSON Lines or Parquet files, globs, or folders such as a `process` output):
  each document gets a key, the 64-bit xxh3 of (seed, class number, file name, record
  number); the sample is the `n` documents with the smallest keys. The choice depends only
  on the data and the seed, not on the order files are read in. At most `max_per_class`
  texts are held in memory while reading.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xxhash

from mixplane.errors import InputError
from mixplane.io.readers import Quarantined, ReadOptions, ReadStats, detect_format, reader_for
from mixplane.io.readers.base import Shard
from mixplane.io.urls import expand_inputs

FILE_FORMATS = ("jsonl", "parquet")


@dataclass
class CatalogPool:
    """Documents a catalog query selects."""

    catalog: str
    where: str
    datasets: list[str] | None
    seed: int
    stream: int
    selection: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        from mixplane.catalog import Catalog

        self.selection = Catalog(self.catalog).select(self.where, self.datasets)

    @property
    def available(self) -> int:
        return int(self.selection.documents)

    def take(self, n: int) -> list[str]:
        from mixplane.catalog.sample import documents_at

        rng = np.random.default_rng([self.seed, self.stream])
        chosen = np.sort(rng.choice(self.available, size=n, replace=False))
        texts: list[str] = []
        offset = 0
        for part in self.selection:
            local = chosen[(chosen >= offset) & (chosen < offset + part.documents)] - offset
            offset += part.documents
            if not len(local):
                continue
            for row in documents_at(part, local):
                if row.get("text") is None:
                    raise InputError(
                        f"dataset {part.dataset} ({part.uri}): document {row['shard']}#"
                        f"{row['index']} has no text to read (no tokenizer saved beside the "
                        "shards); train from the processed folder instead"
                    )
                texts.append(row["text"])
        return texts

    def describe(self) -> dict[str, Any]:
        return {
            "catalog": self.catalog,
            "where": self.where,
            "datasets": [part.dataset for part in self.selection],
            "available": self.available,
        }


@dataclass
class FilePool:
    """Documents in JSON Lines or Parquet files (or folders of them)."""

    paths: list[str]
    text_key: str
    seed: int
    stream: int
    max_per_class: int | None
    storage_options: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(init=False)
    count: int = field(init=False, default=0)
    # Max-heap of the smallest keys seen: (-key, text).
    _heap: list[tuple[int, str]] = field(init=False, repr=False, default_factory=list)

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
            key = xxhash.xxh3_64_intdigest(prefix + str(number).encode())
            item = (-key, record.text)
            if self.max_per_class is None or len(self._heap) < self.max_per_class:
                heapq.heappush(self._heap, item)
            elif item > self._heap[0]:
                heapq.heapreplace(self._heap, item)

    @property
    def available(self) -> int:
        return min(self.count, len(self._heap))

    def take(self, n: int) -> list[str]:
        smallest = sorted(self._heap, reverse=True)[:n]  # by key, ascending
        return [text for _, text in smallest]

    def describe(self) -> dict[str, Any]:
        return {"paths": self.paths, "files": len(self.files), "documents": self.count}
