"""Writers for documents: Parquet (zstd) and JSON Lines, streaming and atomic; and
`DocumentOutput`, what every writer of a task's kept documents offers the pipeline.

Memory stays flat: rows are buffered up to a size limit and then written as one row group.
"""

from __future__ import annotations

import base64
import io
import os
import posixpath
import tempfile
from typing import Any, Protocol

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.document import Document
from mixplane.errors import MixplaneError
from mixplane.io.atomic import atomic_open
from mixplane.io.columns import conform, rows_to_table
from mixplane.io.urls import compressed

# zstd level 1 writes about twice as fast as level 3 for ~10% larger files; processing is
# write-bound when stages are light, and these files are re-read far more than they are kept.
PARQUET_OPTIONS = {"compression": "zstd", "compression_level": 1, "write_statistics": True}
FLUSH_ROWS = 16_384
FLUSH_BYTES = 32 << 20
# Columns holding whole documents: their min/max statistics never let a reader skip
# anything, and computing them copies the largest values (a few hundred MB for one 50 MB
# record), so they are left out.
LARGE_COLUMNS = ("text", "raw", "media")
# The column holding documents' media (`{extension: bytes}` as a map), present in a file
# only when one of its documents has media: image bytes are never dropped on the way.
MEDIA_COLUMN = "media"
MEDIA_TYPE = pa.map_(pa.string(), pa.binary())


def parquet_options(schema: pa.Schema, no_statistics: tuple[str, ...] = ()) -> dict[str, Any]:
    """PARQUET_OPTIONS for writing `schema`, without statistics for the columns named."""
    if not set(no_statistics) & set(schema.names):
        return PARQUET_OPTIONS
    # Statistics are switched on per leaf column by its Parquet path (`tags.list.element`):
    # the paths come from the Parquet schema of an empty file.
    buffer = io.BytesIO()
    pq.write_table(schema.empty_table(), buffer)
    leaves = pq.ParquetFile(buffer).schema
    paths = [leaves.column(i).path for i in range(len(leaves))]
    keep = [path for path in paths if path.split(".")[0] not in no_statistics]
    return PARQUET_OPTIONS | {"write_statistics": keep}


class ParquetTableWriter:
    """Writes Arrow tables into one Parquet file whose schema may grow as tables arrive.

    Tables that fit the current schema go straight into the file. If a table brings new
    columns or types, later tables go to a new local segment, and `close` merges the
    segments under the unified schema. Output bytes depend only on the tables written.
    """

    def __init__(
        self,
        url: str,
        storage_options: dict[str, Any] | None = None,
        no_statistics: tuple[str, ...] = (),
    ):
        self.url = url
        self.storage_options = storage_options
        self.no_statistics = no_statistics
        self._folder = tempfile.mkdtemp(prefix="mixplane-parquet-")
        self._segments: list[str] = []
        self._writer: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None
        self.rows = 0
        self.written: tuple[int, str] | None = None  # (size, hash) of the file, once closed

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        if self._schema is not None:
            fitted = conform(table, self._schema)
            if fitted is None:
                self._writer.close()
                self._writer = None
            else:
                table = fitted
        if self._writer is None:
            path = os.path.join(self._folder, f"segment-{len(self._segments):04d}.parquet")
            self._segments.append(path)
            self._schema = table.schema
            options = parquet_options(table.schema, self.no_statistics)
            self._writer = pq.ParquetWriter(path, table.schema, **options)
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self, empty_schema: pa.Schema | None = None) -> None:
        """Finish the file; with no rows written, write an empty file of `empty_schema`."""
        if self._writer is not None:
            self._writer.close()
        try:
            with atomic_open(self.url, self.storage_options) as handle:
                self._merge_into(handle, empty_schema)
            self.written = (handle.size, handle.fingerprint)
        finally:
            for path in self._segments:
                os.remove(path)
            os.rmdir(self._folder)

    def _merge_into(self, handle, empty_schema: pa.Schema | None) -> None:
        if len(self._segments) == 1:
            with open(self._segments[0], "rb") as segment:
                while chunk := segment.read(8 << 20):
                    handle.write(chunk)
            return
        if not self._segments:
            pq.write_table((empty_schema or pa.schema([])).empty_table(), handle, **PARQUET_OPTIONS)
            return
        schemas = [pq.read_schema(path) for path in self._segments]
        schema = pa.unify_schemas(schemas, promote_options="permissive")
        options = parquet_options(schema, self.no_statistics)
        with pq.ParquetWriter(handle, schema, **options) as writer:
            for path in self._segments:
                segment = pq.ParquetFile(path)
                for group in range(segment.num_row_groups):
                    table = segment.read_row_group(group)
                    writer.write_table(conform(table, schema) or table.cast(schema))


class UnwritableDocument(MixplaneError):
    """A document an output cannot hold, such as one without an image given to an image
    output; nothing of it was written."""


class DocumentOutput(Protocol):
    """Where a task's kept documents go: one file or a few, streamed as documents arrive.

    Example:
        >>> output = DocumentWriter("out/part-00000.parquet")  # doctest: +SKIP
        >>> output.write(Document("a", "hello", "web"))  # doctest: +SKIP
        >>> output.close()  # doctest: +SKIP
        [{'path': 'part-00000.parquet', 'size': 1020, 'hash': 'xxh3_128:...', 'records': 1}]
    """

    def write(self, doc: Document) -> None:
        """Append one document; raises `UnwritableDocument` (writing nothing) for a document
        this output cannot hold."""

    def close(self) -> list[dict[str, Any]]:
        """Finish the files; one manifest entry per file written (`file_entry`), paths
        relative to the output's folder."""


def file_entry(path: str, size: int, digest: str, records: int) -> dict[str, Any]:
    """A written file as a manifest lists it.

    Example:
        >>> file_entry("part-00000.parquet", 1020, "xxh3_128:00", 1)
        {'path': 'part-00000.parquet', 'size': 1020, 'hash': 'xxh3_128:00', 'records': 1}
    """
    return {"path": path, "size": size, "hash": digest, "records": records}


DOCUMENT_SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string()), ("source", pa.string())])


class DocumentWriter:
    """Streams Documents into a Parquet or JSON Lines file (compressed by suffix); a
    `DocumentOutput` that takes every document.

    Example:
        >>> writer = DocumentWriter("out/part-00000.parquet")  # doctest: +SKIP
        >>> writer.write(Document("a", "hello", "web"))  # doctest: +SKIP
        >>> [entry["path"] for entry in writer.close()]  # doctest: +SKIP
        ['part-00000.parquet']
    """

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None):
        self.url = url
        self.format = "jsonl" if ".jsonl" in os.path.basename(url) else "parquet"
        self.storage_options = storage_options
        self.documents = 0
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._sources: list[str] = []
        self._metadata: list[dict[str, Any]] = []
        self._media: list[dict[str, bytes] | None] = []
        self._bytes = 0
        self.written: tuple[int, str] | None = None  # (size, hash) of the file, once closed
        if self.format == "parquet":
            self._parquet = ParquetTableWriter(url, storage_options, LARGE_COLUMNS)
        else:
            self._jsonl_temp = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in close())
                prefix="mixplane-", suffix=".jsonl", delete=False
            )

    def write(self, doc: Document) -> None:
        self._ids.append(doc.id)
        self._texts.append(doc.text)
        self._sources.append(doc.source)
        self._metadata.append(doc.metadata)
        self._media.append(doc.media)
        self._bytes += len(doc.text) + sum(map(len, (doc.media or {}).values()))
        self.documents += 1
        if len(self._ids) >= FLUSH_ROWS or self._bytes >= FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._ids:
            return
        if self.format == "parquet":
            fixed = {"id": self._ids, "text": self._texts, "source": self._sources}
            table = rows_to_table(fixed, self._metadata)
            if any(media is not None for media in self._media):
                media = [None if m is None else list(m.items()) for m in self._media]
                if MEDIA_COLUMN in table.column_names:  # a metadata field of that name
                    table = table.drop_columns([MEDIA_COLUMN])
                table = table.append_column(MEDIA_COLUMN, pa.array(media, type=MEDIA_TYPE))
            self._parquet.write(table)
        else:
            lines = []
            for doc_id, text, source, metadata, media in zip(
                self._ids, self._texts, self._sources, self._metadata, self._media, strict=True
            ):
                row = {"id": doc_id, "text": text, "source": source, **metadata}
                if media is not None:  # JSON has no bytes: base64, as JSON tools expect
                    row[MEDIA_COLUMN] = {k: base64.b64encode(v).decode() for k, v in media.items()}
                lines.append(orjson.dumps(row, default=str))
            self._jsonl_temp.write(b"\n".join(lines) + b"\n")
        self._ids, self._texts, self._sources, self._metadata, self._media = [], [], [], [], []
        self._bytes = 0

    def close(self) -> list[dict[str, Any]]:
        """Finish the file; its manifest entry, the path relative to its folder."""
        self._flush()
        if self.format == "parquet":
            self._parquet.close(DOCUMENT_SCHEMA)
            self.written = self._parquet.written
        else:
            self._close_jsonl()
        size, digest = self.written
        return [file_entry(posixpath.basename(self.url), size, digest, self.documents)]

    def _close_jsonl(self) -> None:
        self._jsonl_temp.close()
        try:
            with (
                open(self._jsonl_temp.name, "rb") as plain,
                atomic_open(self.url, self.storage_options) as raw,
                compressed(raw, self.url, "wb") as out,
            ):
                while chunk := plain.read(8 << 20):
                    out.write(chunk)
            self.written = (raw.size, raw.fingerprint)
        finally:
            os.remove(self._jsonl_temp.name)
