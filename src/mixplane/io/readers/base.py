"""What every reader shares: the shard it reads, its options, and record conversion."""

from __future__ import annotations

import base64
import binascii
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import IO, Any

import orjson

from mixplane.document import RESERVED_COLUMNS, Document
from mixplane.io.readers.audio_field import audio_media
from mixplane.io.readers.lines import CHUNK, PREFIX


@dataclass(frozen=True, slots=True)
class Shard:
    """A piece of one input file, read by one task.

    `start`/`end` are byte offsets for JSON Lines and row-group indices for Parquet; `end`
    None means "to the end". `name` is the file's path relative to the input root, used to
    give records without an id a stable one.
    """

    url: str
    name: str
    format: str
    start: int = 0
    end: int | None = None


# Records above this size are quarantined unread. The largest genuine documents of common
# training sources (whole books, long papers' LaTeX) stay below 10 MB; a record of tens of
# MB is nearly always a dump (base64, logs, a corpus on one line). Processing a record
# takes several copies of it (bytes, str, Arrow, Parquet page) and heavy stages tens of
# them, per worker, so the limit is what keeps a worker's memory bounded.
MAX_RECORD_BYTES = 32 << 20


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """How records become documents."""

    text_key: str = "text"
    id_key: str = "id"
    source: str | None = None
    storage_options: dict[str, Any] = field(default_factory=dict)
    max_record_bytes: int = MAX_RECORD_BYTES
    #: Field holding an image's bytes (base64 text is decoded) and field holding its URL.
    image_key: str | None = None
    url_key: str | None = None
    #: Field holding an audio clip: bytes, a path, or a `{bytes, path}` struct.
    audio_key: str | None = None
    #: The folder relative clip paths start from: the record file's (set by the reader).
    media_folder: str = ""


@dataclass(slots=True)
class ReadStats:
    """Counters a reader fills while it reads: bytes, and blank lines (no record in them)."""

    bytes: int = 0
    blank: int = 0


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A record that could not be turned into a document.

    `doc_id` is the record's id when it could be parsed; `reason` is the short, stable form
    of `error` that statistics count (by default: the error up to its first colon).
    """

    location: str
    error: str
    raw: bytes
    doc_id: str | None = None
    reason: str = ""

    def stat_reason(self) -> str:
        return self.reason or self.error.split(":")[0][:60]


def read_bounded(stream: IO[bytes], limit: int) -> tuple[bytearray, int]:
    """Read a whole stream as one record: `(data, size)`. Past `limit` bytes only the first
    PREFIX bytes are kept and the rest is counted, so memory stays within the limit."""
    data, size = bytearray(), 0
    while chunk := stream.read(CHUNK):
        size += len(chunk)
        if size <= limit or len(data) < PREFIX:
            data += chunk
        if size > limit and len(data) > PREFIX:
            del data[PREFIX:]
    return data, size


def oversized(location: str, size: int, limit: int, prefix: bytes, doc_id=None) -> Quarantined:
    """A record over `max_record_bytes`, quarantined with its first bytes only (its location
    says where the whole of it is)."""
    error = (
        f"record of {size} bytes exceeds max_record_bytes={limit} "
        f"(raw holds its first {len(prefix)} bytes)"
    )
    return Quarantined(location, error, prefix, doc_id, reason="record exceeds max_record_bytes")


def for_shard(options: ReadOptions, shard: Shard) -> ReadOptions:
    """The options for reading `shard`: relative clip paths start from its folder."""
    if not options.audio_key:
        return options
    return replace(options, media_folder=posixpath.dirname(shard.url))


def default_source(shard: Shard, options: ReadOptions) -> str:
    """The configured source, else the name of the folder holding the file."""
    return options.source or folder_source(shard.url)


def folder_source(url: str) -> str:
    """The source of a file's records when neither the input nor a record names one."""
    folder = posixpath.basename(posixpath.dirname(url.rstrip("/")))
    return folder or "input"


def to_document(
    record: dict[str, Any],
    options: ReadOptions,
    source: str,
    fallback_id: str,
) -> Document | str:
    """Build a Document from a raw record, or return an error message (leaving the record
    as it was, so it can be quarantined whole).

    The text and id fields are taken by name; every other field becomes metadata, except
    that a record's own `source` field wins over the default source. With `image_key` or
    `url_key` set the record is an image-text sample: the text is its caption ("" when the
    record has none), the image becomes `media`, the URL the `url` metadata field; with
    `audio_key`, the clip becomes `media` and the text is its transcript ("" when none).
    """
    media = None
    if options.audio_key:
        folder, storage = options.media_folder, options.storage_options
        media = audio_media(record.get(options.audio_key), folder, storage)
        if isinstance(media, str):
            return f"audio field {options.audio_key!r} {media}"
        record.pop(options.audio_key, None)
        if record.get(options.text_key) is None:
            record[options.text_key] = ""
    if options.image_key or options.url_key:
        image = image_media(record.get(options.image_key)) if options.image_key else None
        if isinstance(image, str):
            return f"image field {options.image_key!r} {image}"
        if record.get(options.text_key) is None:
            record[options.text_key] = ""
        if options.image_key:
            record.pop(options.image_key, None)
            media = image if media is None or image is None else {**media, **image}
        if options.url_key and record.get(options.url_key) is not None:
            record["url"] = str(record.pop(options.url_key))
    text = record.get(options.text_key)
    if text is None and options.text_key in record:
        return f"text field {options.text_key!r} is null"
    if text is None:
        return f"record has no text field {options.text_key!r}: its fields are {_fields(record)}"
    if not isinstance(text, str):
        return f"text field {options.text_key!r} is {type(text).__name__}, expected a string"
    del record[options.text_key]
    doc_id = record_id(record, options, fallback_id)
    record.pop(options.id_key, None)
    record_source = record.pop("source", None)
    if record_source is not None and not options.source:
        source = str(record_source)
    for key in RESERVED_COLUMNS:
        record.pop(key, None)
    return Document(id=doc_id, text=text, source=source, metadata=record, media=media)


# Leading bytes of the image formats a record's bytes are recognised by, with the extension
# their media entry gets.
_SIGNATURES = (
    (b"\xff\xd8\xff", "jpg"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"BM", "bmp"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
)


def image_media(value: Any) -> dict[str, bytes] | str | None:
    """A record's image field as `{ext: bytes}` (the extension from the bytes' signature,
    `bin` when it is no known format), None when the record has no image, or why not.

    Bytes are taken as they are, text as base64, and a `{"bytes": ...}` struct (how Hugging
    Face datasets store images) by its bytes.

    Example:
        >>> image_media("R0lGODlh")
        {'gif': b'GIF89a'}
    """
    if isinstance(value, dict):
        value = value.get("bytes")
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as error:
            return f"is not valid base64: {error} ({len(value)} characters)"
    if not isinstance(value, bytes | bytearray):
        return f"is {type(value).__name__}, expected bytes or base64 text"
    data = bytes(value)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return {"webp": data}
    ext = next((ext for magic, ext in _SIGNATURES if data.startswith(magic)), "bin")
    return {ext: data}


def sidecar_document(
    files: dict[str, bytes],
    options: ReadOptions,
    source: str,
    doc_id: str,
    location: str,
    label: Callable[[str], str],
) -> Document | Quarantined:
    """A sample whose caption and metadata come as files beside its image (a WebDataset
    sample's members, an image folder's sidecars), as a Document without media.

    The `json` file's object is the metadata. The caption is the `txt` file (a `caption`
    field equal to it leaves the metadata), else the JSON's text field or `caption` (which
    leaves it), else "". A record's own `source` wins over the default source. A broken
    file quarantines the sample; `label(ext)` names the file in the error.
    """
    metadata: dict[str, Any] = {}
    if "json" in files:
        try:
            metadata = orjson.loads(files["json"])
        except orjson.JSONDecodeError as error:
            error = f"invalid JSON in {label('json')}: {error}"
            return Quarantined(location, error, files["json"], doc_id)
        if not isinstance(metadata, dict):
            kind = type(metadata).__name__
            error = f"{label('json')} holds a JSON {kind}, expected an object"
            return Quarantined(location, error, files["json"], doc_id)
    if "txt" in files:
        try:
            text = files["txt"].decode("utf-8")
        except UnicodeDecodeError as error:
            error = f"{label('txt')} is not UTF-8: {error}"
            return Quarantined(location, error, files["txt"], doc_id)
        if metadata.get("caption") == text:
            del metadata["caption"]
    else:
        fields = (options.text_key, "caption")
        text = next((metadata.pop(k) for k in fields if isinstance(metadata.get(k), str)), "")
    record_source = metadata.pop("source", None)
    if record_source is not None and not options.source:
        source = str(record_source)
    for key in RESERVED_COLUMNS:
        metadata.pop(key, None)
    return Document(doc_id, text, source, metadata)


def record_id(record: dict[str, Any], options: ReadOptions, fallback_id: str) -> str:
    """The record's id field, else the location-based id its document gets."""
    doc_id = record.get(options.id_key)
    return fallback_id if doc_id is None or doc_id == "" else str(doc_id)


def row_to_document(
    record: dict[str, Any], options: ReadOptions, source: str, fallback_id: str, location: str
) -> Document | Quarantined:
    """A table row (Parquet, Arrow) as a Document, or quarantined with the row as JSON."""
    result = to_document(record, options, source, fallback_id)
    if isinstance(result, str):
        raw = orjson.dumps(record, default=_json_value)
        return Quarantined(location, result, raw, record_id(record, options, fallback_id))
    return result


def _json_value(value: Any) -> Any:
    """What orjson cannot write itself: bytes as text (undecodable bytes escaped), else str."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "backslashreplace")
    return str(value)


def _fields(record: dict[str, Any]) -> str:
    """The record's field names, so a wrong `text_key` shows which one to use instead."""
    names = [str(name) for name in record]
    shown = ", ".join(names[:12]) + (f" (and {len(names) - 12} more)" if len(names) > 12 else "")
    return shown or "none"
