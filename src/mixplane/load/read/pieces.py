"""Where the tokens of given sequences come from: each document piece with its dataset
version, shard, document, id, token range and properties (what `explain` and `trace` show).

The plan says which pieces fill each sequence without reading a token; the ids and
properties come from the shards' `.meta.parquet`, each file read once for all the pieces in
it. A piece's `tokens` range counts the document's tokens with the EOS the loader appends
(`eos`: the range ends in that EOS); cutting it from the stored document plus that EOS gives
the tokens the batch holds (with `labels: true`, a sequence packs seq_len + 1 tokens: the
inputs and, last, the final label).

Example:
    >>> found = sequence_pieces(dataset, np.array([3]), properties=["language"])  # doctest: +SKIP
    >>> found[0][0]["dataset"], found[0][0]["tokens"], found[0][0]["properties"]  # doctest: +SKIP
    ('wiki@1', [0, 41], {'language': 'en'})
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.json_values import json_value

if TYPE_CHECKING:
    from mixplane.load.dataset import MixtureDataset

# Columns every entry carries when the shards have them: where the document came from.
PLACE_COLUMNS = ("source", "url")


class ShardMetadata:
    """The `.meta.parquet` columns of a mixture's shards, each file read once."""

    def __init__(self, dataset: MixtureDataset, properties: Sequence[str]):
        self.dataset = dataset
        self.properties = list(dict.fromkeys(properties))
        self._tables: dict[int, Any] = {}

    def table(self, number: int) -> Any:
        """The columns wanted of shard `number` (id, source and url when present, and the
        properties asked for, which every shard must have)."""
        if number not in self._tables:
            import pyarrow.parquet as pq

            file = pq.ParquetFile(self.dataset.source.metadata_file(number))
            names = file.schema_arrow.names
            missing = [name for name in self.properties if name not in names]
            if missing:
                uri, stem = self.dataset.resolved.shards[number]
                raise ConfigError(
                    f"{uri}/{stem}.meta.parquet has no column {', '.join(map(repr, missing))}; "
                    f"its columns: {', '.join(names)}"
                )
            wanted = ["id", *(c for c in PLACE_COLUMNS if c in names), *self.properties]
            # One thread: a process that exits while Arrow's pool still winds down its
            # threads aborted now and then ("terminate called without an active exception").
            columns = list(dict.fromkeys(wanted))
            self._tables[number] = file.read(columns=columns, use_threads=False)
        return self._tables[number]

    def row(self, number: int, index: int) -> dict[str, Any]:
        table = self.table(number)
        return {name: table.column(name)[index].as_py() for name in table.column_names}


def sequence_pieces(
    dataset: MixtureDataset,
    positions: np.ndarray,
    properties: Sequence[str] = (),
    metadata: ShardMetadata | None = None,
) -> list[list[dict[str, Any]]]:
    """For each of `positions`, its document pieces in order: `component`, `dataset`
    (NAME@VERSION), `folder`, `shard`, `document` (index in the shard), `id`, `tokens`
    ([begin, end) in the document, appended EOS included), `eos`, `column` (where the piece
    starts in the sequence), `source` and `url` (when the shards have them) and
    `properties` (the columns asked for)."""
    positions = np.asarray(positions, dtype=np.int64)
    resolved = dataset.resolved
    metadata = metadata or ShardMetadata(dataset, properties)
    refs = {info["uri"]: info["dataset"] for info in resolved.datasets}
    block = dataset.plan.block(positions)
    spans = block.spans
    shard = np.empty(len(spans), dtype=np.int64)
    index = np.empty(len(spans), dtype=np.int64)
    stored = np.empty(len(spans), dtype=np.int64)
    for c, lo, hi in block.groups:
        documents = spans.document[lo:hi]
        shard[lo:hi], index[lo:hi] = resolved.ranges[c].locate(documents)
        stored[lo:hi] = resolved.lengths[c][documents]
    stored -= resolved.appended[shard]
    components = block.span_component
    found: list[list[dict[str, Any]]] = [[] for _ in range(len(positions))]
    for k in np.lexsort((spans.column, spans.row)).tolist():
        number, document = int(shard[k]), int(index[k])
        uri, stem = resolved.shards[number]
        row = metadata.row(number, document)
        begin, stop = int(spans.begin[k]), int(spans.stop[k])
        entry = {
            "component": dataset.names[int(components[k])],
            "dataset": refs.get(uri, uri),
            "folder": uri,
            "shard": stem,
            "document": document,
            "id": str(row["id"]),
            "tokens": [begin, stop],
            "eos": stop > int(stored[k]),
            "column": int(spans.column[k]),
        }
        entry |= {name: _text(row[name]) for name in PLACE_COLUMNS if name in row}
        entry["properties"] = {name: json_value(row[name]) for name in metadata.properties}
        found[int(spans.row[k])].append(entry)
    return found


def _text(value: Any) -> str | None:
    return None if value is None else str(json_value(value))
