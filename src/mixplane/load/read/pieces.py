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
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from mixplane.errors import ConfigError
from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.io.retry import read_whole
from mixplane.io.urls import url_filesystem
from mixplane.json_values import json_value

if TYPE_CHECKING:
    from mixplane.load.dataset import MixtureDataset
    from mixplane.load.plan.resolved import ResolvedMixture
    from mixplane.load.read.source import TokenSource

# Columns every entry carries when the shards have them: where the document came from.
PLACE_COLUMNS = ("source", "url")
# An added column's file per shard, as `catalog.columns` names it (the catalog package loads
# DuckDB, which the loader does not need).
ADDED_SUFFIX = ".parquet"


class PiecesSource(Protocol):
    """What pieces are looked up in: a packed or an unpacked dataset."""

    @property
    def resolved(self) -> ResolvedMixture: ...

    @property
    def source(self) -> TokenSource: ...

    @property
    def names(self) -> list[str]: ...


class ShardMetadata:
    """The `.meta.parquet` columns of a mixture's shards, each file read once."""

    def __init__(self, dataset: PiecesSource, properties: Sequence[str]):
        self.dataset = dataset
        self.properties = list(dict.fromkeys(properties))
        self._tables: dict[int, Any] = {}

    def table(self, number: int) -> Any:
        """The columns wanted of shard `number` (id, source and url when present, and the
        properties asked for, which every shard must have in its metadata or among the
        columns `mixplane annotate` added to its dataset version)."""
        if number not in self._tables:
            import pyarrow.parquet as pq

            uri, stem = self.dataset.resolved.shards[number]
            file = pq.ParquetFile(self.dataset.source.files.metadata_file(number))
            names = file.schema_arrow.names
            added = self._added(uri)
            beside = [name for name in self.properties if name not in names and name in added]
            missing = [n for n in self.properties if n not in names and n not in added]
            if missing:
                listed = ", ".join([*names, *(f"{name} (added)" for name in added)])
                raise ConfigError(
                    f"{uri}/{stem}.meta.parquet has no column {', '.join(map(repr, missing))}; "
                    f"its columns: {listed}"
                )
            wanted = ["id", *(c for c in PLACE_COLUMNS if c in names), *self.properties]
            # One thread: a process that exits while Arrow's pool still winds down its
            # threads aborted now and then ("terminate called without an active exception").
            columns = [name for name in dict.fromkeys(wanted) if name not in beside]
            table = file.read(columns=columns, use_threads=False)
            for name in beside:
                table = table.append_column(name, self._added_column(added[name], stem, table))
            self._tables[number] = table
        return self._tables[number]

    def _added(self, uri: str) -> dict[str, str]:
        """The added columns (name: folder) of the version the plan reads from `uri`."""
        for info in self.dataset.resolved.datasets:
            if info["uri"] == uri:
                return info.get("added_columns") or {}
        return {}

    def _added_column(self, folder: str, stem: str, table: Any) -> Any:
        """An added column's values for shard `stem`: its one column, a row per document."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        url = join_url(folder, stem + ADDED_SUFFIX)
        if is_local(url):
            values = pq.read_table(local_path(url), use_threads=False).column(0)
        else:
            fs, path = url_filesystem(url, self.dataset.source.storage_options)
            values = pq.read_table(pa.BufferReader(read_whole(fs, path))).column(0)
        if len(values) != table.num_rows:
            raise ConfigError(
                f"{url} has {len(values):,} rows where its shard has {table.num_rows:,} "
                "documents; annotate the version again"
            )
        return values

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
    metadata = metadata or ShardMetadata(dataset, properties)
    block = dataset.plan.block(positions)
    spans = block.spans
    order = np.lexsort((spans.column, spans.row))
    entries = piece_entries(
        dataset,
        metadata,
        block.span_component[order],
        spans.document[order],
        spans.begin[order],
        spans.stop[order],
        spans.column[order],
    )
    found: list[list[dict[str, Any]]] = [[] for _ in range(len(positions))]
    for row, entry in zip(spans.row[order].tolist(), entries, strict=True):
        found[row].append(entry)
    return found


def piece_entries(
    dataset: PiecesSource,
    metadata: ShardMetadata,
    components: np.ndarray,
    documents: np.ndarray,
    begins: np.ndarray,
    stops: np.ndarray,
    columns: np.ndarray,
) -> list[dict[str, Any]]:
    """One entry (as `sequence_pieces` lists them) per piece: tokens [`begins`, `stops`) of
    the component-local document `documents` of `components`, placed at `columns`."""
    resolved = dataset.resolved
    refs = {info["uri"]: info["dataset"] for info in resolved.datasets}
    components = np.asarray(components, dtype=np.int64)
    documents = np.asarray(documents, dtype=np.int64)
    shard = np.empty(len(documents), dtype=np.int64)
    index = np.empty(len(documents), dtype=np.int64)
    stored = np.empty(len(documents), dtype=np.int64)
    for c in np.unique(components).tolist():
        mine = components == c
        shard[mine], index[mine] = resolved.ranges[c].locate(documents[mine])
        stored[mine] = resolved.lengths[c][documents[mine]]
    stored -= resolved.appended[shard]
    entries = []
    for k in range(len(documents)):
        number, document = int(shard[k]), int(index[k])
        uri, stem = resolved.shards[number]
        row = metadata.row(number, document)
        begin, stop = int(begins[k]), int(stops[k])
        entry = {
            "component": dataset.names[int(components[k])],
            "dataset": refs.get(uri, uri),
            "folder": uri,
            "shard": stem,
            "document": document,
            "id": str(row["id"]),
            "tokens": [begin, stop],
            "eos": stop > int(stored[k]),
            "column": int(columns[k]),
        }
        entry |= {name: _text(row[name]) for name in PLACE_COLUMNS if name in row}
        entry["properties"] = {name: json_value(row[name]) for name in metadata.properties}
        entries.append(entry)
    return entries


def _text(value: Any) -> str | None:
    return None if value is None else str(json_value(value))
