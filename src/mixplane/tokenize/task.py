"""Tokenizing one input file into its shards: the unit of work executors run.

Reads the file a batch at a time, encodes each batch with one `encode_batch` call, appends
tokens and metadata to the task's shards, then writes the completion marker last. A rerun
skips tasks whose marker was written under the same configuration.
"""

from __future__ import annotations

import posixpath
import struct
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from mixplane.errors import MixplaneError
from mixplane.io.atomic import join_url, write_bytes
from mixplane.io.urls import url_filesystem
from mixplane.io.writers import ParquetTableWriter
from mixplane.manifest import file_digest, file_fingerprint, read_json
from mixplane.process.sinks import QUARANTINE_SCHEMA
from mixplane.process.tasks import InputFile
from mixplane.store.format import parse_stem, strip_suffix, token_dtype
from mixplane.store.writer import TaskShardWriter
from mixplane.tokenize.base import Embedded, Tokenizer
from mixplane.tokenize.chat import ChatTemplate, encode_conversations, pack_masks
from mixplane.tokenize.chat_inputs import read_chat_batches
from mixplane.tokenize.config import TokenizeConfig
from mixplane.tokenize.inputs import read_batches
from mixplane.tokenize.load import cached_tokenizer


@dataclass(frozen=True)
class TokenizeTask:
    """One input file; its index names its shards (`shard-INDEX-KKK`)."""

    index: int
    file: InputFile


@dataclass(frozen=True)
class TokenizeContext:
    """What every task needs; picklable, sent once to each worker. `saved`: the tokenizer's
    file as the run loaded it, so workers on other hosts need not see the file the config
    names (None: load by the spec, as for tiktoken's named encodings). `template`: the chat
    template conversations are rendered with (`config.chat`)."""

    config: TokenizeConfig
    config_hash: str
    threads: int | None
    saved: Embedded | None = None
    template: ChatTemplate | None = None


def marker_url(output: str, index: int) -> str:
    return join_url(output, "_tasks", f"task-{index:05d}.json")


def task_tokenizer(context: TokenizeContext) -> Tokenizer:
    config = context.config
    return cached_tokenizer(
        config.tokenizer,
        bos=config.bos,
        eos=config.eos,
        bos_token=config.bos_token,
        eos_token=config.eos_token,
        threads=context.threads,
        storage_options=config.storage_options,
        saved=context.saved,
    )


def run_tokenize_task(task: TokenizeTask, context: TokenizeContext) -> dict[str, Any]:
    """Tokenize one input file unless already done; return its marker (shards and stats)."""
    config = context.config
    done = _completed(task, context)
    if done is not None:
        return done | {"skipped": True}
    tokenizer = task_tokenizer(context)
    dtype = token_dtype(tokenizer.vocab_size)
    writer = TaskShardWriter(
        config.output,
        task.index,
        dtype,
        config.shard_bytes,
        config.storage_options,
        group_by=config.group_by,
        masked=config.chat is not None,
    )
    quarantine = _Quarantine(config, task.index)
    stats = {"documents": 0, "tokens": 0, "quarantined": 0, "text_chars": 0, "seconds": {}}
    seconds = {"read": 0.0, "encode": 0.0, "write": 0.0}
    started = time.perf_counter()
    try:
        for batch in _batches(task, context):
            read_done = time.perf_counter()
            seconds["read"] += read_done - started
            ids, mask, chars = _encode(batch, tokenizer, context)
            quarantine.add(batch.quarantined)
            encoded = time.perf_counter()
            seconds["encode"] += encoded - read_done
            tokens, lengths = pack(ids, tokenizer.bos_id, tokenizer.eos_id, dtype, tokenizer)
            writer.add(tokens, lengths, batch.meta, mask)
            stats["documents"] += len(lengths)
            stats["tokens"] += len(tokens)
            stats["text_chars"] += chars
            started = time.perf_counter()
            seconds["write"] += started - encoded
        records = writer.close()
    except BaseException:
        writer.abort()
        raise
    stats["quarantined"] = quarantine.close()
    outputs = []
    if quarantine.count:
        size, digest = file_digest(quarantine.url, config.storage_options)
        path = f"_quarantine/task-{task.index:05d}.parquet"
        outputs.append({"path": path, "size": size, "hash": digest, "records": quarantine.count})
    stats["seconds"] = {key: round(value, 3) for key, value in seconds.items()}
    _remove_stale_shards(config, task.index, {record.name for record in records})
    size, fingerprint = file_fingerprint(task.file.url, config.storage_options)
    result = {
        "task": task.index,
        "input": {"url": task.file.url, "size": size, "fingerprint": fingerprint},
        "config_hash": context.config_hash,
        "stats": stats,
        "shards": [record.to_json() for record in records],
        "outputs": outputs,
    }
    marker = orjson.dumps(result, option=orjson.OPT_INDENT_2)
    write_bytes(marker_url(config.output, task.index), marker, config.storage_options)
    return result | {"skipped": False}


def _batches(task: TokenizeTask, context: TokenizeContext):
    config = context.config
    spec = config.input[task.file.input_index]
    options = config.storage_options
    if config.chat is None:
        return read_batches(task.file, spec, config.batch_size, options)
    return read_chat_batches(task.file, spec, config.chat, config.batch_size, options)


def _encode(batch, tokenizer: Tokenizer, context: TokenizeContext):
    """A batch's ids, its loss mask (None for plain text) and its count of characters; a
    conversation the template refuses joins the batch's quarantined records."""
    chat = context.config.chat
    if chat is None:
        return tokenizer.encode_batch(batch.texts), None, sum(map(len, batch.texts))
    assert context.template is not None
    done = encode_conversations(
        batch.conversations, batch.locations, context.template, tokenizer, chat.trained_roles
    )
    batch.refuse(done.refused, done.kept)
    bos, eos = tokenizer.bos_id is not None, tokenizer.eos_id is not None
    chars = sum(len(m["content"]) for row in done.kept for m in batch.conversations[row])
    return done.ids, pack_masks(done.masks, bos, eos), chars


def pack(
    ids: list[list[int]],
    bos: int | None,
    eos: int | None,
    dtype: np.dtype,
    tokenizer: Tokenizer | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate documents' ids (with BOS/EOS around each) into one array, plus lengths.

    Example:
        >>> tokens, lengths = pack([[5, 6], [7]], None, 0, np.dtype("uint16"))
        >>> tokens.tolist(), lengths.tolist()
        ([5, 6, 0, 7, 0], [3, 2])
    """
    dtype = np.dtype(dtype).newbyteorder("<")
    code = "H" if dtype.itemsize == 2 else "I"
    head = () if bos is None else (bos,)
    tail = () if eos is None else (eos,)
    extra = len(head) + len(tail)
    pack_ = struct.pack
    # struct packs a list of Python ints about twice as fast as numpy converts one.
    try:
        if extra:
            parts = [pack_(f"<{len(doc) + extra}{code}", *head, *doc, *tail) for doc in ids]
        else:
            parts = [pack_(f"<{len(doc)}{code}", *doc) for doc in ids]
    except struct.error as error:
        spec = tokenizer.spec if tokenizer is not None else "the tokenizer"
        raise MixplaneError(
            f"tokenizer {spec!r} produced an id that does not fit {dtype.name} ({error}); "
            "its vocabulary size is wrong"
        ) from None
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids)) + extra
    return np.frombuffer(b"".join(parts), dtype=dtype), lengths


def _completed(task: TokenizeTask, context: TokenizeContext) -> dict[str, Any] | None:
    url = marker_url(context.config.output, task.index)
    fs, path = url_filesystem(url, context.config.storage_options)
    if not fs.exists(path):
        return None
    done = read_json(url, context.config.storage_options)
    return done if done.get("config_hash") == context.config_hash else None


def _remove_stale_shards(config: TokenizeConfig, index: int, written: set[str]) -> None:
    """Delete this task's shards left by an earlier run that wrote more of them."""
    fs, path = url_filesystem(config.output, config.storage_options)
    for found in fs.glob(posixpath.join(path, f"shard-{index:05d}-*")):
        stem = posixpath.basename(strip_suffix(found))
        parsed = parse_stem(stem)
        if parsed is not None and parsed[0] == index and stem not in written:
            fs.rm(found)


class _Quarantine:
    """Unreadable records of one task, kept in `_quarantine/task-INDEX.parquet`."""

    def __init__(self, config: TokenizeConfig, index: int):
        self.url = join_url(config.output, "_quarantine", f"task-{index:05d}.parquet")
        self.options = config.storage_options
        self.writer: ParquetTableWriter | None = None
        self.count = 0

    def add(self, records: list) -> None:
        if not records:
            return
        if self.writer is None:
            self.writer = ParquetTableWriter(self.url, self.options)
        rows = [["tokenize", r.location, None, r.error, r.raw] for r in records]
        columns = list(zip(*rows, strict=True))
        arrays = [pa.array(c, type=f.type) for c, f in zip(columns, QUARANTINE_SCHEMA, strict=True)]
        self.writer.write(pa.Table.from_arrays(arrays, schema=QUARANTINE_SCHEMA))
        self.count += len(records)

    def close(self) -> int:
        if self.writer is not None:
            self.writer.close()
        return self.count
