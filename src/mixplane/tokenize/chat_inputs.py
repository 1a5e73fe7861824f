"""Reading conversations to tokenize, a batch at a time, from JSON Lines or Parquet.

Each record becomes a list of messages (see `ChatConfig.messages`) and a metadata row (id,
source and its other fields); a record that is not a usable conversation (unparseable,
no messages, an unknown role, nothing to train on) is quarantined with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow.parquet as pq

from mixplane.document import RESERVED_COLUMNS
from mixplane.errors import InputError
from mixplane.io.columns import rows_to_table
from mixplane.io.readers import Quarantined
from mixplane.io.readers.base import MAX_RECORD_BYTES, folder_source
from mixplane.io.readers.lines import Cut, LongLine, split_lines
from mixplane.io.urls import open_url, url_filesystem
from mixplane.process.config import InputConfig
from mixplane.process.tasks import InputFile
from mixplane.tokenize.chat import ChatConfig

CHAT_FORMATS = ("jsonl", "parquet")


@dataclass
class ChatBatch:
    """Conversations read together: their messages, where each was read, their metadata
    (one row each) and the records that could not be used."""

    conversations: list[list[dict[str, Any]]]
    locations: list[str]
    raws: list[bytes]
    meta: Any  # pa.Table
    quarantined: list[Quarantined] = field(default_factory=list)

    def refuse(self, refused: list[tuple[int, str]], kept: list[int]) -> None:
        """Quarantine rows `refused` (row, error) and keep the metadata of rows `kept`."""
        ids = self.meta.column("id").to_pylist()
        for row, error in refused:
            self.quarantined.append(
                Quarantined(self.locations[row], error, self.raws[row], ids[row])
            )
        if len(kept) != self.meta.num_rows:
            self.meta = self.meta.take(kept)


def read_chat_batches(
    file: InputFile, spec: InputConfig, chat: ChatConfig, batch_size: int, storage_options: dict
) -> Iterator[ChatBatch]:
    """Yield the file's conversations in batches of `batch_size`, in file order."""
    if file.format not in CHAT_FORMATS:
        raise InputError(
            f"{file.url}: conversations are read from JSON Lines or Parquet, not {file.format}"
        )
    if file.format == "jsonl":
        records = _jsonl(file, storage_options)
    else:
        records = _parquet(file, storage_options)
    source = spec.source or folder_source(file.url)
    batch = _Builder(spec, chat, source)
    for item in records:
        batch.add(*item)
        if len(batch.conversations) >= batch_size:
            yield batch.take()
    if batch.conversations or batch.quarantined:
        yield batch.take()


class _Builder:
    def __init__(self, spec: InputConfig, chat: ChatConfig, source: str):
        self.spec, self.chat, self.source = spec, chat, source
        self._start()

    def _start(self) -> None:
        self.conversations: list[list[dict[str, Any]]] = []
        self.locations: list[str] = []
        self.raws: list[bytes] = []
        self.fixed: dict[str, list[Any]] = {"id": [], "source": []}
        self.metadata: list[dict[str, Any]] = []
        self.quarantined: list[Quarantined] = []

    def add(self, where: str, fallback_id: str, record: Any, raw: bytes) -> None:
        if isinstance(record, Quarantined):
            self.quarantined.append(record)
            return
        if not isinstance(record, dict):
            error = f"JSON value is {type(record).__name__}, expected an object"
            self.quarantined.append(Quarantined(where, error, raw))
            return
        doc_id = record.get(self.spec.id_key)
        doc_id = fallback_id if doc_id is None or doc_id == "" else str(doc_id)
        messages = self.chat.messages(record)
        if isinstance(messages, str):
            self.quarantined.append(Quarantined(where, messages, raw, doc_id))
            return
        taken = {self.spec.id_key, *self.chat.field_names, *RESERVED_COLUMNS}
        source = record.get("source")
        self.conversations.append(messages)
        self.locations.append(where)
        self.raws.append(raw)
        self.fixed["id"].append(doc_id)
        use_own = source is not None and not self.spec.source
        self.fixed["source"].append(str(source) if use_own else self.source)
        self.metadata.append({k: v for k, v in record.items() if k not in taken})

    def take(self) -> ChatBatch:
        batch = ChatBatch(
            self.conversations,
            self.locations,
            self.raws,
            rows_to_table(self.fixed, self.metadata),
            self.quarantined,
        )
        self._start()
        return batch


def _jsonl(file: InputFile, storage_options: dict) -> Iterator[tuple[str, str, Any, bytes]]:
    offset = 0
    with open_url(file.url, "rb", storage_options) as stream:
        for number, line in enumerate(split_lines(stream, MAX_RECORD_BYTES), start=1):
            where = f"{file.url}:{number}"
            if isinstance(line, Cut):
                bad = Quarantined(where, f"unreadable stream: {line.error}", line.partial)
                yield where, "", bad, b""
                return
            if isinstance(line, LongLine):
                error = f"record of {line.size} bytes exceeds {MAX_RECORD_BYTES} bytes"
                yield where, "", Quarantined(where, error, line.prefix), b""
                offset += line.size
                continue
            size = len(line)
            if not line.isspace():
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError as error:
                    record = Quarantined(where, f"invalid JSON: {error}", bytes(line))
                yield where, f"{file.name}@{offset}", record, bytes(line)
            offset += size


def _parquet(file: InputFile, storage_options: dict) -> Iterator[tuple[str, str, Any, bytes]]:
    fs, path = url_filesystem(file.url, storage_options)
    row = 0
    with fs.open(path, "rb") as handle:
        for batch in pq.ParquetFile(handle).iter_batches(batch_size=1024):
            for record in batch.to_pylist():
                where = f"{file.url}#row {row}"
                raw = orjson.dumps(record, default=str)
                yield where, f"{file.name}#{row}", record, raw
                row += 1
