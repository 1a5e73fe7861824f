"""Running one task: read a shard, apply the stages, write kept, excluded and quarantined
records, then the completion marker (last, so a crash never leaves a task half-done)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.document import Document, Drop
from mixplane.io.atomic import join_url, write_bytes
from mixplane.io.columns import string_array
from mixplane.io.readers import Quarantined, ReadOptions, ReadStats, reader_for
from mixplane.io.urls import url_filesystem
from mixplane.io.writers import LARGE_COLUMNS, DocumentWriter, ParquetTableWriter
from mixplane.manifest import read_json
from mixplane.process.config import PipelineConfig
from mixplane.process.stage import Stage
from mixplane.process.stats import check_balance, count, count_quarantined, new_task_stats
from mixplane.process.tasks import Task
from mixplane.store.images.writer import ImageShardWriter, MissingImageError

BATCH = 512
# A batch also ends at this many characters of text, so a run of large records (each under
# max_record_bytes) is not held 512 at a time.
BATCH_CHARS = 32 << 20
EXCLUDED_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("source", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("text", pa.string()),
        ("metadata", pa.string()),
    ]
)
QUARANTINE_SCHEMA = pa.schema(
    [
        ("stage", pa.string()),
        ("location", pa.string()),
        ("id", pa.string()),
        ("error", pa.string()),
        ("raw", pa.binary()),
    ]
)

_stage_cache: dict[str, list[Stage]] = {}


PART_SUFFIXES = {"parquet": "parquet", "jsonl": "jsonl.zst", "webdataset": "tar"}
# The file of a webdataset part whose schema is harmonised across parts.
IMAGE_META_SUFFIX = "meta.parquet"


def part_name(config: PipelineConfig, index: int) -> str:
    """The task's kept-documents file (for webdataset, the tar; `.idx` and `.meta.parquet`
    sit beside it)."""
    return f"part-{index:05d}.{PART_SUFFIXES[config.output_format]}"


def marker_url(output: str, index: int) -> str:
    return join_url(output, "_tasks", f"task-{index:05d}.json")


def load_stages(config: PipelineConfig) -> list[Stage]:
    """Build and set up the stages once per worker process."""
    key = config.outputs_hash()
    if key not in _stage_cache:
        stages = [spec.build() for spec in config.stages]
        for stage in stages:
            stage.setup()
        _stage_cache[key] = stages
    return _stage_cache[key]


def completed(url: str, config: PipelineConfig) -> dict[str, Any] | None:
    """The completion marker at `url` if it was written under the same config."""
    fs, path = url_filesystem(url, config.storage_options)
    if not fs.exists(path):
        return None
    done = read_json(url, config.storage_options)
    return done if done.get("config_hash") == config.outputs_hash() else None


def write_marker(
    url: str,
    task: Task,
    config: PipelineConfig,
    stats: dict[str, Any],
    outputs: list[dict[str, Any]],
    **extra: Any,
) -> dict[str, Any]:
    """Write a task's completion marker (after all its files) and return what it holds."""
    result = {
        "task": task.index,
        "shard": {"url": task.shard.url, "start": task.shard.start, "end": task.shard.end},
        "config_hash": config.outputs_hash(),
        "stats": stats,
        "outputs": outputs,
        **extra,
    }
    write_bytes(url, orjson.dumps(result, option=orjson.OPT_INDENT_2), config.storage_options)
    return result


def run_task(task: Task, config: PipelineConfig) -> dict[str, Any]:
    """Run one task unless it is already complete; return its marker (stats and outputs)."""
    marker = marker_url(config.output, task.index)
    done = completed(marker, config)
    if done is not None:
        return done | {"skipped": True}
    stages = load_stages(config)
    read_options = input_read_options(config, task.input_index)
    read_stats = ReadStats()
    stats = new_task_stats()
    sinks = Sinks(config, task.index)
    records = reader_for(task.shard.format)(task.shard, read_options, read_stats)
    for batch in read_batches(records, stats, sinks):
        for stage in stages:
            batch = apply_stage(stage, batch, stats, sinks)
        sinks.keep(batch, stats)
    stats["bytes_in"] = read_stats.bytes
    stats["skipped_blank"] = read_stats.blank
    check_balance(stats)
    result = write_marker(marker, task, config, stats, sinks.close())
    return result | {"skipped": False}


def input_read_options(config: PipelineConfig, index: int) -> ReadOptions:
    """How the records of input `index` become documents."""
    spec = config.input[index]
    return ReadOptions(
        spec.text_key,
        spec.id_key,
        spec.source,
        config.storage_options,
        config.max_record_bytes,
        spec.image_key,
        spec.url_key,
    )


def utf8_size(text: str) -> int:
    """The UTF-8 size of `text`, without a whole encoded copy of a large one."""
    if text.isascii():
        return len(text)
    step = 1 << 20
    return sum(len(text[i : i + step].encode("utf-8")) for i in range(0, len(text), step))


def read_batches(
    records: Iterator, stats: dict[str, Any], sinks: Sinks
) -> Iterator[list[Document]]:
    """Group reader output into batches of documents; the records that could not be read
    are counted and quarantined (stage `read`) before the batch they came with."""
    docs: list[Document] = []
    unreadable: list[Quarantined] = []
    seconds = stats["seconds"]
    started = time.perf_counter()
    chars = 0
    for record in records:
        stats["documents_in"] += 1
        if isinstance(record, Quarantined):
            unreadable.append(record)
        else:
            docs.append(record)
            chars += len(record.text)
        if len(docs) >= BATCH or chars >= BATCH_CHARS:
            seconds["read"] = seconds.get("read", 0.0) + time.perf_counter() - started
            quarantine_unreadable(unreadable, stats, sinks)
            yield docs
            docs, unreadable, chars = [], [], 0
            started = time.perf_counter()
    seconds["read"] = seconds.get("read", 0.0) + time.perf_counter() - started
    quarantine_unreadable(unreadable, stats, sinks)
    yield docs


def quarantine_unreadable(unreadable: list[Quarantined], stats: dict[str, Any], sinks: Sinks):
    """Count and quarantine records a reader could not turn into documents."""
    for item in unreadable:
        count_quarantined(stats, "read", item.stat_reason(), item.error)
        sinks.quarantine("read", item.location, item.doc_id, item.error, item.raw)


def apply_stage(stage: Stage, docs: list[Document], stats: dict[str, Any], sinks: Sinks) -> list:
    name = stage.stage_name()
    started = time.perf_counter()
    try:
        results = stage.apply_batch(docs)
        if len(results) != len(docs):
            raise RuntimeError(f"apply_batch returned {len(results)} results for {len(docs)}")
    except Exception:
        # Find the culprits: apply document by document, quarantining the ones that fail.
        results = []
        for doc in docs:
            try:
                results.append(stage.apply(doc))
            except Exception as error:
                results.append(error)
    kept = sort_results(name, docs, results, stats, sinks)
    seconds = stats["seconds"]
    seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
    return kept


def sort_results(name: str, docs: list[Document], results: list, stats, sinks: Sinks) -> list:
    """Send each document where its stage's result says: kept, excluded or quarantined."""
    kept = []
    for doc, result in zip(docs, results, strict=True):
        if isinstance(result, Document):
            kept.append(result)
        elif isinstance(result, Drop):
            stats["excluded"] += 1
            count(stats["excluded_by"], name, result.reason)
            sinks.exclude(doc, name, result)
        else:
            if not isinstance(result, Exception):
                kind = type(result).__name__
                result = TypeError(f"stage returned {kind}, expected Document or Drop")
            raw = quarantine_raw(doc)
            error = f"{type(result).__name__}: {result}"
            count_quarantined(stats, name, type(result).__name__, error)
            sinks.quarantine(name, doc.id, doc.id, error, raw)
    return kept


def quarantine_raw(doc: Document) -> bytes:
    """What a quarantine row keeps of a document a stage failed on: its fields as JSON, and
    for media only their sizes (`media_bytes`), so a failing image stage does not copy every
    image into `_quarantine/` (the inputs still hold them; unreadable records keep their
    raw bytes, from the reader)."""
    row = {"id": doc.id, "text": doc.text, "source": doc.source, **doc.metadata}
    if doc.media is not None:
        row["media_bytes"] = {ext: len(data) for ext, data in doc.media.items()}
    return to_json(row).encode()


class Sinks:
    """The three places a record can end up, for one task; each is streamed to disk.

    `folder` defaults to the output; `keep_documents=False` counts kept documents without
    writing them. With `output_format: webdataset` the task's kept documents go to an image
    shard (`part-NNNNN.tar/.idx/.meta.parquet`), unless `name` asks for a Parquet work file
    (which keeps documents' media in its `media` column).
    """

    def __init__(
        self,
        config: PipelineConfig,
        index: int,
        folder: str | None = None,
        keep_documents: bool = True,
        name: str | None = None,
    ):
        self.options = config.storage_options
        self.output = folder or config.output
        self.name = name or part_name(config, index)
        self.stem = f"part-{index:05d}"
        self.images = config.output_format == "webdataset" and name is None
        if not keep_documents:
            self.documents = _Counter()
        elif self.images:
            self.documents = ImageShardWriter(self.output, self.stem, self.options)
        else:
            self.documents = DocumentWriter(join_url(self.output, self.name), self.options)
        self.excluded = _RowSink(join_url(self.output, "_excluded", f"{self.stem}.parquet"))
        self.quarantined = _RowSink(join_url(self.output, "_quarantine", f"{self.stem}.parquet"))

    def carry(self, folder: str) -> None:
        """Start with the excluded and quarantined rows an earlier segment wrote for this
        task under `folder`, so one file per task holds them all, in segment order."""
        for sink, kind, schema in (
            (self.excluded, "_excluded", EXCLUDED_SCHEMA),
            (self.quarantined, "_quarantine", QUARANTINE_SCHEMA),
        ):
            url = join_url(folder, kind, f"{self.stem}.parquet")
            fs, path = url_filesystem(url, self.options)
            if fs.exists(path):
                with fs.open(path, "rb") as handle:
                    sink.add_table(pq.read_table(handle), schema, self.options)

    def keep(self, docs: list[Document], stats: dict[str, Any]) -> None:
        """Write the documents that passed every stage and count them. A document the image
        writer cannot take (no image: a configuration mistake, such as text inputs with
        `output_format: webdataset`) is quarantined at stage `write`, not lost."""
        for doc in docs:
            try:
                self.documents.write(doc)
            except MissingImageError as error:
                message = f"{type(error).__name__}: {error}"
                count_quarantined(stats, "write", type(error).__name__, message)
                self.quarantine("write", doc.id, doc.id, message, quarantine_raw(doc))
                continue
            stats["text_bytes_out"] += utf8_size(doc.text)
            stats["kept"] += 1

    def exclude(self, doc: Document, stage: str, drop: Drop) -> None:
        # Media are left out (an excluded image document keeps its caption as `text` and its
        # metadata): `_excluded/` stays small, and the inputs still hold the images.
        detail = to_json(drop.detail) if drop.detail is not None else None
        row = [doc.id, doc.source, stage, drop.reason, detail, doc.text, to_json(doc.metadata)]
        self.excluded.add(row, EXCLUDED_SCHEMA, self.options)

    def quarantine(self, stage: str, location: str, doc_id, error: str, raw: bytes) -> None:
        self.quarantined.add([stage, location, doc_id, error, raw], QUARANTINE_SCHEMA, self.options)

    def close(self) -> list[dict[str, Any]]:
        """Finish the files; one entry per file written (size and hash, known from writing)."""
        if isinstance(self.documents, ImageShardWriter):
            entries = self.documents.close()
        else:
            self.documents.close()
            entries = []
        written = []
        if isinstance(self.documents, DocumentWriter):
            written.append((self.name, self.documents.documents, self.documents.written))
        for folder, sink in (("_excluded", self.excluded), ("_quarantine", self.quarantined)):
            if sink.close():
                name = f"{folder}/{self.stem}.parquet"
                written.append((name, sink.count, sink.writer.written))
        return entries + [
            {"path": name, "size": size, "hash": digest, "records": records}
            for name, records, (size, digest) in written
        ]


class _Counter:
    """Stands in for a document writer when kept documents need not be written."""

    def __init__(self) -> None:
        self.documents = 0

    def write(self, doc: Document) -> None:
        self.documents += 1

    def close(self) -> None:
        pass


class _RowSink:
    """Rows of a fixed schema, flushed to a Parquet file that exists only if rows came."""

    FLUSH = 4096
    FLUSH_CHARS = 32 << 20  # excluded rows hold whole texts

    def __init__(self, url: str):
        self.url = url
        self.rows: list[list[Any]] = []
        self.chars = 0
        self.count = 0
        self.schema: pa.Schema | None = None
        self.writer: ParquetTableWriter | None = None

    def add(self, row: list[Any], schema: pa.Schema, options) -> None:
        self.rows.append(row)
        self.chars += sum(len(value) for value in row if isinstance(value, str | bytes))
        self.count += 1
        self.schema = schema
        if self.writer is None:
            self.writer = ParquetTableWriter(self.url, options, LARGE_COLUMNS)
        if len(self.rows) >= self.FLUSH or self.chars >= self.FLUSH_CHARS:
            self._flush()

    def add_table(self, table: pa.Table, schema: pa.Schema, options) -> None:
        """Append whole rows already in `schema` (written before any pending rows)."""
        if table.num_rows == 0:
            return
        if self.writer is None:
            self.writer = ParquetTableWriter(self.url, options, LARGE_COLUMNS)
        self.schema = schema
        if self.rows:
            self._flush()
        self.writer.write(table.select(schema.names).cast(schema))
        self.count += table.num_rows

    def _flush(self) -> None:
        columns = list(zip(*self.rows, strict=True))
        arrays = [
            string_array(col) if f.type == pa.string() else pa.array(col, type=f.type)
            for col, f in zip(columns, self.schema, strict=True)
        ]
        self.writer.write(pa.Table.from_arrays(arrays, schema=self.schema))
        self.rows, self.chars = [], 0

    def close(self) -> bool:
        if self.writer is None:
            return False
        if self.rows:
            self._flush()
        self.writer.close()
        return True


def to_json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()
