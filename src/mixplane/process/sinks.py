"""Where a task's records end up: kept documents, `_excluded/`, `_quarantine/` and
`_errors/`, each streamed to its own file (`part-NNNNN` after the task).

- kept: the documents that passed every stage, in the output format;
- `_excluded/`: dropped by a stage, with the stage, reason and detail;
- `_quarantine/`: records that could not be read (or written), with the error, location
  and raw bytes;
- `_errors/`: records a stage's own code raised an exception on, with the exception, its
  traceback and the document as it reached the stage.

Example:
    >>> sinks = Sinks(config, task.index)  # doctest: +SKIP
    >>> sinks.keep(docs, stats); outputs = sinks.close()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.document import Document, Drop
from mixplane.io.atomic import join_url
from mixplane.io.columns import string_array
from mixplane.io.urls import url_filesystem
from mixplane.io.writers import (
    LARGE_COLUMNS,
    DocumentOutput,
    DocumentWriter,
    ParquetTableWriter,
    UnwritableDocument,
    file_entry,
)
from mixplane.process.config import PipelineConfig
from mixplane.process.stats import count_quarantined
from mixplane.store.audio.writer import AudioShardWriter
from mixplane.store.images.writer import ImageShardWriter

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
ERRORS_SCHEMA = pa.schema(
    [
        ("stage", pa.string()),
        ("id", pa.string()),
        ("error", pa.string()),
        ("traceback", pa.string()),
        ("raw", pa.binary()),
    ]
)
# The bookkeeping folders, with the schema of their rows.
ROW_FOLDERS = (
    ("_excluded", EXCLUDED_SCHEMA),
    ("_quarantine", QUARANTINE_SCHEMA),
    ("_errors", ERRORS_SCHEMA),
)

PART_SUFFIXES = {"parquet": "parquet", "jsonl": "jsonl.zst", "webdataset": "tar"}
# The file of a webdataset part whose schema is harmonised across parts.
IMAGE_META_SUFFIX = "meta.parquet"


def part_name(config: PipelineConfig, index: int) -> str:
    """The task's kept-documents file (for webdataset, the tar; `.idx` and `.meta.parquet`
    sit beside it)."""
    return f"part-{index:05d}.{PART_SUFFIXES[config.output_format]}"


def document_raw(doc: Document) -> bytes:
    """What a quarantine or error row keeps of a document: its fields as JSON, and for
    media only their sizes (`media_bytes`), so a failing image stage does not copy every
    image into `_errors/` (the inputs still hold them; unreadable records keep their raw
    bytes, from the reader)."""
    row = {"id": doc.id, "text": doc.text, "source": doc.source, **doc.metadata}
    if doc.media is not None:
        row["media_bytes"] = {ext: len(data) for ext, data in doc.media.items()}
    return to_json(row).encode()


def utf8_size(text: str) -> int:
    """The UTF-8 size of `text`, without a whole encoded copy of a large one."""
    if text.isascii():
        return len(text)
    step = 1 << 20
    return sum(len(text[i : i + step].encode("utf-8")) for i in range(0, len(text), step))


def remove_outputs(
    config: PipelineConfig, earlier: list[dict[str, Any]], now: list[dict[str, Any]] = ()
) -> None:
    """Delete the files of an earlier attempt at a task (its marker's `outputs`) that the
    task did not write again, such as the `_errors/` file of a task redone after a fix."""
    written = {entry["path"] for entry in now}
    for entry in earlier:
        if entry["path"] not in written:
            fs, path = url_filesystem(
                join_url(config.output, entry["path"]), config.storage_options
            )
            if fs.exists(path):
                fs.rm(path)


class Sinks:
    """The places a record can end up, for one task; each is streamed to disk.

    `folder` defaults to the output; `keep_documents=False` counts kept documents without
    writing them. With `output_format: webdataset` the task's kept documents go to an image
    shard, or an audio one with `output_media: audio` (`part-NNNNN.tar/.idx/.meta.parquet`),
    unless `name` asks for a Parquet work file (which keeps documents' media in its `media`
    column).
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
        self.documents: DocumentOutput
        if not keep_documents:
            self.documents = _NotWritten()
        elif config.output_format == "webdataset" and name is None:
            shards = AudioShardWriter if config.output_media == "audio" else ImageShardWriter
            self.documents = shards(self.output, self.stem, self.options)
        else:
            self.documents = DocumentWriter(join_url(self.output, self.name), self.options)
        self.rows = {
            folder: _RowSink(join_url(self.output, folder, f"{self.stem}.parquet"), schema)
            for folder, schema in ROW_FOLDERS
        }

    def carry(self, folder: str) -> None:
        """Start with the excluded, quarantined and errored rows an earlier segment wrote
        for this task under `folder`, so one file per task holds them all, in segment
        order."""
        for kind, sink in self.rows.items():
            url = join_url(folder, kind, f"{self.stem}.parquet")
            fs, path = url_filesystem(url, self.options)
            if fs.exists(path):
                with fs.open(path, "rb") as handle:
                    sink.add_table(pq.read_table(handle), self.options)

    def keep(self, docs: list[Document], stats: dict[str, Any]) -> None:
        """Write the documents that passed every stage and count them. A document the output
        cannot hold (such as one without an image, for `output_format: webdataset`: a
        configuration mistake) is quarantined at stage `write`, not lost."""
        for doc in docs:
            try:
                self.documents.write(doc)
            except UnwritableDocument as error:
                message = f"{type(error).__name__}: {error}"
                count_quarantined(stats, "write", type(error).__name__, message)
                self.quarantine("write", doc.id, doc.id, message, document_raw(doc))
                continue
            stats["text_bytes_out"] += utf8_size(doc.text)
            stats["kept"] += 1

    def exclude(self, doc: Document, stage: str, drop: Drop) -> None:
        # Media are left out (an excluded image document keeps its caption as `text` and its
        # metadata): `_excluded/` stays small, and the inputs still hold the images.
        detail = to_json(drop.detail) if drop.detail is not None else None
        row = [doc.id, doc.source, stage, drop.reason, detail, doc.text, to_json(doc.metadata)]
        self.rows["_excluded"].add(row, self.options)

    def quarantine(self, stage: str, location: str, doc_id, error: str, raw: bytes) -> None:
        self.rows["_quarantine"].add([stage, location, doc_id, error, raw], self.options)

    def error(self, stage: str, doc: Document, error: str, trace: str) -> None:
        """A document whose stage raised: the exception in one line and its traceback."""
        self.rows["_errors"].add([stage, doc.id, error, trace, document_raw(doc)], self.options)

    def close(self) -> list[dict[str, Any]]:
        """Finish the files; one entry per file written (size and hash, known from writing)."""
        entries = self.documents.close()
        for folder, sink in self.rows.items():
            if sink.close():
                name, (size, digest) = f"{folder}/{self.stem}.parquet", sink.writer.written
                entries.append(file_entry(name, size, digest, sink.count))
        return entries


class _NotWritten:
    """The output of a segment whose kept documents need not be written (`keep` still
    counts them)."""

    def write(self, doc: Document) -> None:
        pass

    def close(self) -> list[dict[str, Any]]:
        return []


class _RowSink:
    """Rows of a fixed schema, flushed to a Parquet file that exists only if rows came."""

    FLUSH = 4096
    FLUSH_CHARS = 32 << 20  # excluded rows hold whole texts

    def __init__(self, url: str, schema: pa.Schema):
        self.url = url
        self.schema = schema
        self.rows: list[list[Any]] = []
        self.chars = 0
        self.count = 0
        self.writer: ParquetTableWriter | None = None

    def add(self, row: list[Any], options) -> None:
        self.rows.append(row)
        self.chars += sum(len(value) for value in row if isinstance(value, str | bytes))
        self.count += 1
        if self.writer is None:
            self.writer = ParquetTableWriter(self.url, options, LARGE_COLUMNS)
        if len(self.rows) >= self.FLUSH or self.chars >= self.FLUSH_CHARS:
            self._flush()

    def add_table(self, table: pa.Table, options) -> None:
        """Append whole rows already in this sink's schema (written before pending rows)."""
        if table.num_rows == 0:
            return
        if self.writer is None:
            self.writer = ParquetTableWriter(self.url, options, LARGE_COLUMNS)
        if self.rows:
            self._flush()
        self.writer.write(table.select(self.schema.names).cast(self.schema))
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
