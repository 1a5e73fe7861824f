"""Finding and reading the documents to tokenize, a batch at a time.

Any input the readers accept works. A folder written by `mixplane process` is read through
its manifest (its `part-*` files, never `_excluded/` or `_quarantine/`). Parquet is read
column-wise, so metadata goes to the shard's Parquet without passing through Python objects.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mixplane.document import RESERVED_COLUMNS
from mixplane.errors import InputError
from mixplane.io.columns import rows_to_table
from mixplane.io.readers import Quarantined, ReadOptions, ReadStats, Shard, reader_for
from mixplane.io.readers.base import default_source
from mixplane.io.urls import url_filesystem
from mixplane.manifest import MANIFEST, read_json
from mixplane.process.config import InputConfig
from mixplane.process.tasks import InputFile, scan_inputs


@dataclass
class Batch:
    """Documents read together: their texts, their metadata (id, source, properties, one row
    per text) and the records that could not be read."""

    texts: list[str]
    meta: pa.Table
    quarantined: list[Quarantined] = field(default_factory=list)


def find_input_files(inputs: list[InputConfig], storage_options: dict) -> list[InputFile]:
    """Every input file, in a stable order; processed folders contribute their parts only."""
    resolved = [_resolve(spec, storage_options) for spec in inputs]
    files = scan_inputs(resolved, storage_options)
    for file in files:
        if file.unreadable:
            raise InputError(f"{file.url}: {file.unreadable}; remove it from the inputs")
    return sorted(files, key=lambda f: (f.input_index, f.url))


def _resolve(spec: InputConfig, storage_options: dict) -> InputConfig:
    if spec.paths is not None:
        return spec  # a list of files, not folders
    patterns = []
    for pattern in spec.patterns():
        fs, path = url_filesystem(pattern, storage_options)
        if not fs.isdir(path):
            patterns.append(pattern)
            continue
        folder = pattern.rstrip("/")
        manifest = f"{folder}/{MANIFEST}"
        if fs.exists(posixpath.join(path, MANIFEST)):
            outputs = read_json(manifest, storage_options).get("outputs", [])
            parts = [o["path"] for o in outputs if not o["path"].startswith(("_", "."))]
            if parts:
                patterns.extend(f"{folder}/{part}" for part in sorted(parts))
                continue
        # Bookkeeping lives in `_`-prefixed files and folders; hidden files are temporary.
        found = [p for p in fs.find(path) if not _is_bookkeeping(posixpath.relpath(p, path))]
        if not found:
            raise InputError(f"input folder {pattern!r} holds no document file")
        patterns.extend(f"{folder}/{posixpath.relpath(p, path)}" for p in sorted(found))
    return spec.model_copy(update={"path": patterns})


def _is_bookkeeping(relative: str) -> bool:
    return any(part.startswith(("_", ".")) for part in relative.split("/"))


def read_batches(
    file: InputFile, spec: InputConfig, batch_size: int, storage_options: dict
) -> Iterator[Batch]:
    """Yield the file's documents in batches of `batch_size`, in file order."""
    shard = Shard(file.url, file.name, file.format)
    options = ReadOptions(spec.text_key, spec.id_key, spec.source, storage_options)
    if file.format == "parquet":
        yield from _parquet_batches(shard, options, batch_size)
    else:
        yield from _record_batches(shard, options, batch_size)


def _record_batches(shard: Shard, options: ReadOptions, batch_size: int) -> Iterator[Batch]:
    records = reader_for(shard.format)(shard, options, ReadStats())
    texts: list[str] = []
    fixed: dict[str, list[Any]] = {"id": [], "source": []}
    metadata: list[dict[str, Any]] = []
    quarantined: list[Quarantined] = []
    for record in records:
        if isinstance(record, Quarantined):
            quarantined.append(record)
            continue
        texts.append(record.text)
        fixed["id"].append(record.id)
        fixed["source"].append(record.source)
        metadata.append(record.metadata)
        if len(texts) >= batch_size:
            yield Batch(texts, rows_to_table(fixed, metadata), quarantined)
            texts, fixed, metadata, quarantined = [], {"id": [], "source": []}, [], []
    if texts or quarantined:
        yield Batch(texts, rows_to_table(fixed, metadata), quarantined)


def _parquet_batches(shard: Shard, options: ReadOptions, batch_size: int) -> Iterator[Batch]:
    fs, path = url_filesystem(shard.url, options.storage_options)
    source = default_source(shard, options)
    row = 0
    with fs.open(path, "rb") as handle:
        parquet = pq.ParquetFile(handle)
        if options.text_key not in parquet.schema_arrow.names:
            names = ", ".join(parquet.schema_arrow.names)
            raise InputError(
                f"{shard.url}: no text column {options.text_key!r} (columns: {names}); "
                "set text_key on the input"
            )
        for record_batch in parquet.iter_batches(batch_size=batch_size):
            table = pa.Table.from_batches([record_batch])
            yield _split_columns(table, shard, options, source, row)
            row += table.num_rows


def _split_columns(
    table: pa.Table, shard: Shard, options: ReadOptions, source: str, first_row: int
) -> Batch:
    """Texts, and metadata columns shaped like the document readers' output."""
    rows = pa.array(range(first_row, first_row + table.num_rows), pa.int64())
    text = table.column(options.text_key)
    quarantined = []
    if text.null_count:
        keep = pc.is_valid(text)
        for index in pc.indices_nonzero(pc.invert(keep)).to_pylist():
            location = f"{shard.url}#row {first_row + index}"
            error = f"text field {options.text_key!r} is null"
            quarantined.append(Quarantined(location, error, b""))
        table, rows = table.filter(keep), rows.filter(keep)
        text = table.column(options.text_key)
    if not pa.types.is_string(text.type) and not pa.types.is_large_string(text.type):
        raise InputError(
            f"{shard.url}: text column {options.text_key!r} is {text.type}, expected strings"
        )
    if options.id_key in table.column_names:
        ids = pc.cast(table.column(options.id_key), pa.string())
        if ids.null_count:
            ids = pc.coalesce(ids, _fallback_ids(shard, rows))
    else:
        ids = _fallback_ids(shard, rows)
    default = pa.scalar(source, pa.string())
    if "source" in table.column_names and not options.source:
        sources = pc.coalesce(pc.cast(table.column("source"), pa.string()), default)
    else:
        sources = pa.array([source] * table.num_rows, pa.string())
    taken = {options.text_key, options.id_key, *RESERVED_COLUMNS}
    rest = [name for name in table.column_names if name not in taken]
    meta = pa.table({"id": ids, "source": sources, **{name: table.column(name) for name in rest}})
    return Batch(text.to_pylist(), meta, quarantined)


def _fallback_ids(shard: Shard, rows: pa.Array) -> pa.Array:
    """`NAME#ROW` for records without an id, as the Parquet reader names them."""
    return pc.binary_join_element_wise(f"{shard.name}#", pc.cast(rows, pa.string()), "")
