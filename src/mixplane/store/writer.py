"""Writing token shards: one task's documents, cut into shards of a target size.

Each file of a shard is written under a temporary name (or, on object storage, uploaded once
complete) and appears only when whole. Hashes of the `.bin` and `.idx` are computed while
writing, so nothing is read back. A document never spans two shards.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from mixplane.errors import MixplaneError
from mixplane.io.atomic import is_local, join_url, local_path, upload, write_bytes
from mixplane.io.writers import ParquetTableWriter
from mixplane.manifest import file_digest
from mixplane.store.checksums import UNIT_TOKENS, UnitSums, hash_units, unit_starts
from mixplane.store.format import (
    BIN,
    IDX,
    MASK,
    MASK_DTYPE,
    META,
    OFFSET_DTYPE,
    SUMS,
    encode_index,
    format_version,
    parse_stem,
    shard_stem,
)

META_ROW_GROUP = 65_536
MAX_OPEN_GROUPS = 256  # shards open at once per task (two open files each)
EMPTY_META = pa.schema([("id", pa.string()), ("n_tokens", pa.int64()), ("source", pa.string())])


@dataclass
class ShardRecord:
    """What the manifest says about one finished shard."""

    name: str
    documents: int
    tokens: int
    files: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "documents": self.documents,
            "tokens": self.tokens,
            "files": self.files,
        }


class TaskShardWriter:
    """Streams one task's tokenized documents into `shard-TTTTT-KKK` files in `folder`.

    A new shard starts when the current `.bin` has reached `target_bytes`, so a shard holds
    at most one document beyond its target. With `group_by`, each shard holds documents of one
    value of that metadata column (one shard open per value), so a selection on the column
    reads whole shards; documents of a value keep their order. With `masked`, every `add`
    gives a loss mask (one 0/1 byte per token), written to each shard's `.mask` (format
    version 2).

    Example:
        >>> writer = TaskShardWriter("out", task=0, dtype=np.uint16, target_bytes=1 << 28)
        >>> writer.add(np.array([5, 6, 7], np.uint16), np.array([2, 1]), meta)  # doctest: +SKIP
        >>> records = writer.close()  # doctest: +SKIP
    """

    def __init__(
        self,
        folder: str,
        task: int,
        dtype: np.dtype,
        target_bytes: int,
        storage_options: dict[str, Any] | None = None,
        group_by: str | None = None,
        masked: bool = False,
    ):
        if target_bytes <= 0:
            raise ValueError("target shard size must be positive")
        self.folder = folder.rstrip("/")
        self.task = task
        self.dtype = np.dtype(dtype)
        self.target_bytes = target_bytes
        self.storage_options = storage_options
        self.group_by = group_by
        self.masked = masked
        self.records: list[ShardRecord] = []
        self._open: dict[Any, _OpenShard] = {}  # group value (None without group_by) -> shard
        self._named = 0
        # Of the batch being added: shards opened (with the row that opened each) and filled.
        self._opening: list[tuple[int, _OpenShard]] = []
        self._filled: list[_OpenShard] = []

    def add(
        self,
        tokens: np.ndarray,
        lengths: np.ndarray,
        meta: pa.Table,
        mask: np.ndarray | None = None,
    ) -> None:
        """Append documents: their tokens concatenated, each one's length, their metadata
        (and, for a `masked` writer, the loss mask of every token).

        `meta` has one row per document, in order, and no `n_tokens` column (it is added).
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        if len(lengths) != meta.num_rows or int(lengths.sum()) != len(tokens):
            raise ValueError("tokens, lengths and metadata rows disagree")
        if (mask is not None) != self.masked or (mask is not None and len(mask) != len(tokens)):
            raise ValueError("a masked writer takes a mask of one byte per token, others none")
        meta = _with_token_counts(meta, lengths)
        if self.group_by is None:
            self._append(None, np.arange(len(lengths)), tokens, lengths, meta, mask)
        else:
            groups = _groups(meta, self.group_by, self.task)
            if len(self._open.keys() | {value for value, _ in groups}) > MAX_OPEN_GROUPS:
                raise MixplaneError(
                    f"group_by {self.group_by!r}: task {self.task} would hold shards of more "
                    f"than {MAX_OPEN_GROUPS} values open at once; group by a column with few "
                    "values (language, source)"
                )
            for value, rows in groups:
                taken = _gather(tokens, lengths, rows)
                masks = None if mask is None else _gather(mask, lengths, rows)
                self._append(value, rows, taken, lengths[rows], meta.take(rows), masks)
        # Shards are numbered in the order of the documents that opened them, so the names
        # do not depend on how documents were batched.
        for _, shard in sorted(self._opening, key=lambda opened: opened[0]):
            shard.name = shard_stem(self.task, self._named)
            self._named += 1
        self._opening.clear()
        self.records.extend(shard.finish() for shard in self._filled)
        self._filled.clear()

    def close(self) -> list[ShardRecord]:
        """Finish the open shards; return a record per shard written, in name order."""
        self.records.extend(shard.finish() for shard in self._open.values())
        self._open.clear()
        self.records.sort(key=lambda record: parse_stem(record.name))
        return self.records

    def abort(self) -> None:
        """Drop the shards being written (after an error); finished shards stay."""
        for shard in [*self._open.values(), *self._filled]:
            shard.discard()
        self._open.clear()
        self._filled.clear()
        self._opening.clear()

    def _append(
        self, value: Any, rows: np.ndarray, tokens: np.ndarray, lengths, meta, mask=None
    ) -> None:
        """Cut one group's documents (batch rows `rows`) into that group's shards."""
        start_doc, start_token = 0, 0
        while start_doc < len(lengths):
            shard = self._open.get(value)
            if shard is None:
                shard = _OpenShard(
                    self.folder, self.task, self.dtype, self.storage_options, self.masked
                )
                self._open[value] = shard
                self._opening.append((int(rows[start_doc]), shard))
            rest = lengths[start_doc:]
            # A document starts in this shard while the shard is below its target size.
            bytes_before = (np.cumsum(rest) - rest) * self.dtype.itemsize
            take = int(np.searchsorted(bytes_before, self.target_bytes - shard.bytes, "left"))
            if take > 0:
                n_tokens = int(rest[:take].sum())
                piece = slice(start_token, start_token + n_tokens)
                shard.write(
                    tokens[piece],
                    rest[:take],
                    meta.slice(start_doc, take),
                    None if mask is None else mask[piece],
                )
                start_doc += take
                start_token += n_tokens
            if take == 0 or start_doc < len(lengths):
                self._filled.append(self._open.pop(value))


def _groups(meta: pa.Table, column: str, task: int) -> list[tuple[Any, np.ndarray]]:
    """Row numbers of each value of `column`, values in order of first appearance."""
    if column not in meta.column_names:
        raise MixplaneError(
            f"group_by {column!r}: task {task}'s documents have no such property "
            f"(they have {', '.join(meta.column_names)})"
        )
    kind = meta.schema.field(column).type
    if pa.types.is_nested(kind):
        raise MixplaneError(
            f"group_by {column!r}: task {task}'s property is a {kind}, not a single value per "
            "document; group by a text, number or boolean property"
        )
    values = meta.column(column).to_pylist()
    rows: dict[Any, list[int]] = {}
    for row, value in enumerate(values):
        rows.setdefault(value, []).append(row)
    return [(value, np.array(numbers, dtype=np.int64)) for value, numbers in rows.items()]


def _gather(tokens: np.ndarray, lengths: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The tokens of documents `rows` (in that order), concatenated."""
    if len(rows) == len(lengths):
        return tokens
    starts = np.cumsum(lengths) - lengths
    taken = lengths[rows]
    # Each taken token's index: its document's start plus its place within the document.
    shift = np.repeat(starts[rows] - (np.cumsum(taken) - taken), taken)
    return tokens[shift + np.arange(int(taken.sum()))]


def _with_token_counts(meta: pa.Table, lengths: np.ndarray) -> pa.Table:
    """Put `n_tokens` right after `id`, where every metadata table has it (a property of the
    same name would be ambiguous, so the count replaces it)."""
    if "n_tokens" in meta.column_names:
        meta = meta.drop_columns(["n_tokens"])
    column = pa.array(lengths, type=pa.int64())
    position = meta.column_names.index("id") + 1 if "id" in meta.column_names else 0
    return meta.add_column(position, "n_tokens", column)


class _OpenShard:
    """The shard being written: a staged `.bin`, offsets in memory, metadata row groups."""

    def __init__(self, folder: str, task: int, dtype: np.dtype, storage_options, masked: bool):
        self.folder = folder
        self.name = ""  # given before `finish`, once the shard's place in the task is known
        self.dtype = dtype
        self.storage_options = storage_options
        self.bytes = 0
        self.documents = 0
        self._lengths: list[np.ndarray] = []
        self._unit_starts: list[np.ndarray] = []  # of each write, in shard tokens
        self._unit_hashes: list[np.ndarray] = []
        self._bin_hash = xxhash.xxh3_128()
        staged = join_url(folder, f"shard-{task:05d}")
        self._staged = _stage_path(staged + BIN)
        self._bin = open(self._staged, "wb")  # noqa: SIM115 (closed in finish/discard)
        self._mask_staged = _stage_path(staged + MASK) if masked else None
        self._mask = open(self._mask_staged, "wb") if masked else None  # noqa: SIM115
        self._mask_hash = xxhash.xxh3_128()
        self._meta_staged = _stage_path(staged + META)
        self._meta = ParquetTableWriter(self._meta_staged)
        self._meta_rows: list[pa.Table] = []
        self._meta_pending = 0

    def write(
        self, tokens: np.ndarray, lengths: np.ndarray, meta: pa.Table, mask: np.ndarray | None
    ) -> None:
        data = np.ascontiguousarray(tokens, dtype=self.dtype.newbyteorder("<")).tobytes()
        self._bin.write(data)
        self._bin_hash.update(data)
        if self._mask is not None:
            flags = np.ascontiguousarray(mask, dtype=MASK_DTYPE).tobytes()
            self._mask.write(flags)
            self._mask_hash.update(flags)
        starts = unit_starts(lengths, UNIT_TOKENS)
        self._unit_hashes.append(hash_units(data, starts, self.dtype.itemsize))
        self._unit_starts.append(starts[:-1] + np.uint64(self.bytes // self.dtype.itemsize))
        self.bytes += len(data)
        self.documents += len(lengths)
        self._lengths.append(lengths)
        self._meta_rows.append(meta)
        self._meta_pending += meta.num_rows
        while self._meta_pending >= META_ROW_GROUP:
            self._flush_meta(META_ROW_GROUP)

    def _flush_meta(self, rows: int) -> None:
        """Write exactly `rows` buffered rows as one row group (so row groups do not depend
        on how documents were batched)."""
        taken, size = [], 0
        while size < rows:
            table = self._meta_rows.pop(0)
            need = rows - size
            if table.num_rows > need:
                self._meta_rows.insert(0, table.slice(need))
                table = table.slice(0, need)
            taken.append(table)
            size += table.num_rows
        self._meta_pending -= size
        try:
            merged = pa.concat_tables(taken, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            merged = None
        if merged is not None:
            self._meta.write(merged.combine_chunks())
        else:
            for table in taken:
                self._meta.write(table)

    def finish(self) -> ShardRecord:
        self._bin.flush()
        os.fsync(self._bin.fileno())
        self._bin.close()
        _publish(self._staged, join_url(self.folder, self.name + BIN), self.storage_options)
        files = {"bin": {"size": self.bytes, "hash": f"xxh3_128:{self._bin_hash.hexdigest()}"}}
        if self._mask is not None:
            self._mask.flush()
            os.fsync(self._mask.fileno())
            self._mask.close()
            size = os.path.getsize(self._mask_staged)
            url = join_url(self.folder, self.name + MASK)
            _publish(self._mask_staged, url, self.storage_options)
            files["mask"] = {"size": size, "hash": f"xxh3_128:{self._mask_hash.hexdigest()}"}
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int64)
        offsets = np.zeros(len(lengths) + 1, dtype=OFFSET_DTYPE)
        np.cumsum(lengths, out=offsets[1:])
        index = encode_index(self.dtype, offsets, format_version(self._mask is not None))
        write_bytes(join_url(self.folder, self.name + IDX), index, self.storage_options)
        sums = UnitSums(
            UNIT_TOKENS,
            np.concatenate([*self._unit_starts, offsets[-1:]]),
            np.concatenate([np.zeros(0, np.uint64), *self._unit_hashes]),
        ).encode()
        write_bytes(join_url(self.folder, self.name + SUMS), sums, self.storage_options)
        if self._meta_pending:
            self._flush_meta(self._meta_pending)
        self._meta.close(EMPTY_META)
        meta_size, meta_hash = file_digest(self._meta_staged)
        _publish(self._meta_staged, join_url(self.folder, self.name + META), self.storage_options)
        files |= {
            "idx": {"size": len(index), "hash": f"xxh3_128:{xxhash.xxh3_128_hexdigest(index)}"},
            "meta": {"size": meta_size, "hash": meta_hash},
            "sums": {"size": len(sums), "hash": f"xxh3_128:{xxhash.xxh3_128_hexdigest(sums)}"},
        }
        tokens = int(offsets[-1])
        return ShardRecord(self.name, self.documents, tokens, files)

    def discard(self) -> None:
        self._bin.close()
        if self._mask is not None:
            self._mask.close()
        self._meta.close(EMPTY_META)
        for staged in (self._staged, self._meta_staged, self._mask_staged):
            if staged is not None and os.path.exists(staged):
                os.remove(staged)


def _stage_path(url: str) -> str:
    """Where a file is written before it appears: beside it locally, else a temporary file."""
    if is_local(url):
        folder, name = os.path.split(local_path(url))
        os.makedirs(folder or ".", exist_ok=True)
        return os.path.join(folder, f".{name}.{uuid.uuid4().hex[:8]}.tmp")
    handle, staged = tempfile.mkstemp(prefix="mixplane-shard-", suffix=".tmp")
    os.close(handle)
    return staged


def _publish(staged: str, url: str, storage_options) -> None:
    if is_local(url):
        os.replace(staged, local_path(url))
        return
    try:
        upload(staged, url, storage_options)
    finally:
        os.remove(staged)
