"""One schema for every part of an output folder, so any Parquet reader can open it.

Each task writes its part with the columns its own records had: a property no record of a
task carried is absent from its part, and one that was null in all of them has Arrow's null
type there. Readers that take the schema from one file (pyarrow datasets, Hugging Face
datasets, DuckDB without `union_by_name`) then drop columns or fail on the cast. After all
tasks, the parts' footers are unified in part order and every part that differs is
rewritten in that schema; parts that already match are left alone (no write at all). For
image shards (`output_format: webdataset`) the same holds for their `.meta.parquet`.

Crash-safe without reading any part twice: a rewritten part is first written under the
run's `_work/`, then its task marker records the new size, hash and schema, then the file
moves into place. A rerun finishes a move whose marker is already updated, and redoes
a rewrite whose marker is not.

Example:
    >>> results = harmonize(config, results)  # doctest: +SKIP
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from mixplane.io.atomic import atomic_open, join_url, write_bytes
from mixplane.io.columns import conform
from mixplane.io.urls import url_filesystem
from mixplane.io.writers import LARGE_COLUMNS, parquet_options
from mixplane.process.config import PipelineConfig
from mixplane.process.runner import marker_url
from mixplane.process.segments import work_root
from mixplane.process.sinks import IMAGE_META_SUFFIX, part_name


def harmonize(config: PipelineConfig, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rewrite the Parquet parts whose schema differs from the parts' unified schema.

    `results` are the tasks' markers; those of rewritten parts come back updated.
    """
    if config.output_format == "jsonl":
        return results
    options = config.storage_options
    parts = [(result, _part_entry(config, result)) for result in results]
    parts = [(result, entry) for result, entry in parts if entry is not None]
    if not parts:
        return results
    urls = [join_url(config.output, entry["path"]) for _, entry in parts]
    # Footers only; read side by side, since on object storage each is a round trip.
    with ThreadPoolExecutor(max_workers=min(16, len(urls))) as pool:
        schemas = list(pool.map(lambda url: _schema(url, options), urls))
    unified = unify(schemas)
    if unified is None:
        return results
    key = "xxh3_128:" + xxhash.xxh3_128_hexdigest(unified.serialize().to_pybytes())
    updated = {}
    for (result, entry), schema in zip(parts, schemas, strict=True):
        final = join_url(config.output, entry["path"])
        staged = join_url(work_root(config), "harmonize", entry["path"])
        if result.get("schema") == key:
            _finish_move(staged, final, options)
            continue
        if schema.equals(unified):
            continue  # never rewritten, so its marker's size and hash are right
        size, digest = _rewrite(final, staged, unified, options)
        entry = entry | {"size": size, "hash": digest}
        outputs = [entry if o["path"] == entry["path"] else o for o in result["outputs"]]
        marker = {k: v for k, v in result.items() if k != "skipped"}
        marker |= {"outputs": outputs, "schema": key}
        write_bytes(
            marker_url(config.output, result["task"]),
            orjson.dumps(marker, option=orjson.OPT_INDENT_2),
            options,
        )
        _finish_move(staged, final, options)
        updated[result["task"]] = marker | {"skipped": result.get("skipped", False)}
    return [updated.get(result["task"], result) for result in results]


def unify(schemas: list[pa.Schema]) -> pa.Schema | None:
    """The schema every part can take without changing a value: columns in order of first
    appearance, each with its one non-null type. None if a column has two different
    non-null types (say int64 here, string there); the parts then stay as written, and
    readers that unify by name (DuckDB's `union_by_name`) still read them.
    """
    fields: dict[str, pa.Field] = {}
    for schema in schemas:
        for field in schema:
            known = fields.get(field.name)
            if known is None or known.type == pa.null():
                fields[field.name] = field.with_nullable(True)
            elif field.type != pa.null() and field.type != known.type:
                return None
    return pa.schema(list(fields.values()))


def _part_entry(config: PipelineConfig, result: dict[str, Any]) -> dict[str, Any] | None:
    """The output entry of the task's document part (None when it wrote none): the Parquet
    part, or an image shard's metadata Parquet (its tar and index never change)."""
    name = part_name(config, result["task"])
    if config.output_format == "webdataset":
        name = f"{name.removesuffix('.tar')}.{IMAGE_META_SUFFIX}"
    return next((entry for entry in result["outputs"] if entry["path"] == name), None)


def _schema(url: str, options: dict[str, Any]) -> pa.Schema:
    fs, path = url_filesystem(url, options)
    with fs.open(path, "rb") as handle:
        return pq.read_schema(handle)


def _rewrite(url: str, staged: str, schema: pa.Schema, options) -> tuple[int, str]:
    """Write the part at `url` in `schema` to `staged`, row group by row group."""
    fs, path = url_filesystem(url, options)
    with fs.open(path, "rb") as source, atomic_open(staged, options) as handle:
        part = pq.ParquetFile(source)
        with pq.ParquetWriter(handle, schema, **parquet_options(schema, LARGE_COLUMNS)) as writer:
            if part.num_row_groups == 0:
                writer.write_table(schema.empty_table())
            for group in range(part.num_row_groups):
                table = part.read_row_group(group)
                writer.write_table(conform(table, schema))
    return handle.size, handle.fingerprint


def _finish_move(staged: str, final: str, options: dict[str, Any]) -> None:
    fs, staged_path = url_filesystem(staged, options)
    if fs.exists(staged_path):
        _, final_path = url_filesystem(final, options)
        fs.mv(staged_path, final_path)
