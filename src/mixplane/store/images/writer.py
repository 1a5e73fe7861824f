"""Writing one media shard: image-text (or audio-text) documents into `STEM.tar`, `STEM.idx`
and `STEM.meta.parquet` (see `store.images.format`).

Image and audio shards share the container; a `ShardMedia` says which member is the
sample's media, how to find it in a document and which metadata columns come first.

Every file is written under a temporary name (or staged locally for object storage) and
appears only when whole; sizes and hashes are computed while writing. Output bytes depend
only on the documents written, in order.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson
import pyarrow as pa

from mixplane.document import Document, Drop
from mixplane.io.atomic import HashingWriter, atomic_open, join_url
from mixplane.io.columns import column_array, string_array
from mixplane.io.writers import ParquetTableWriter, UnwritableDocument, file_entry
from mixplane.media import IMAGE_EXTENSIONS, image_of
from mixplane.store.images.format import (
    END_BLOCKS,
    IDX,
    META,
    TAR,
    encode_index,
    sample_digest,
    sample_key,
    tar_member,
)

META_ROWS = 4096  # rows per Parquet row group (by count, so batching never changes bytes)
# Columns every media shard's metadata starts with; `caption` holds the document's text
# (an image's caption, a clip's transcript or caption).
COMMON = [
    ("id", pa.string()),
    ("key", pa.string()),
    ("source", pa.string()),
    ("caption", pa.string()),
    ("n_tokens", pa.int64()),
]
# The metadata's own `key` (the sample's key in the input) cannot share the column of the
# shard key; in the Parquet it is renamed (the `.json` member keeps it as it is).
INPUT_KEY = "input_key"
_GENERATED = {"txt", "json"}  # written from the document's text and metadata
_FORMATS = {"jpg": "jpeg", "jpeg": "jpeg", "tif": "tiff", "tiff": "tiff"}
_TASK = re.compile(r"(\d+)$")


class MissingImageError(UnwritableDocument):
    """A document reached a media shard writer without its kind of media (an image for
    image shards, an audio clip for audio shards)."""


@dataclass(frozen=True)
class ShardMedia:
    """What a shard's samples carry: `name` (image, audio), the extensions it is stored
    under, how a document's is found (`find`: (extension, bytes) or None), the metadata
    columns that come first with fixed types (so every shard of a run shares them even
    when no sample of a shard has, say, a width), and `describe(metadata, ext, data)`: the
    metadata with the stored media's own fields filled in."""

    name: str
    extensions: tuple[str, ...]
    find: Callable[[Document], tuple[str, bytes] | None]
    fixed: pa.Schema
    describe: Callable[[dict[str, Any], str, bytes], dict[str, Any]]
    member_names: dict[str, str]  # extension -> the member's extension when they differ


class MediaShardWriter:
    """Streams documents with media into one shard `folder_url/STEM.*`; a `DocumentOutput`.
    Subclasses set `media`: `ImageShardWriter`, `store.audio.AudioShardWriter`.

    Keys are `NNNNN-IIIIIII`: the number ending the stem (the task) and the sample's index.

    Example:
        >>> writer = ImageShardWriter("out", "part-00000")  # doctest: +SKIP
        >>> doc = Document("a", "a cat", "web", {"language": "en"}, {"jpg": jpeg})  # doctest: +SKIP
        >>> writer.write(doc)  # doctest: +SKIP
        >>> [entry["path"] for entry in writer.close()]  # doctest: +SKIP
        ['part-00000.tar', 'part-00000.idx', 'part-00000.meta.parquet']
    """

    media: ClassVar[ShardMedia]

    def __init__(
        self,
        folder_url: str,
        stem: str,
        storage_options: dict[str, Any] | None = None,
        key_prefix: str | None = None,
    ):
        if key_prefix is None:
            match = _TASK.search(stem)
            key_prefix = f"{int(match.group(1)):05d}" if match else stem
        if "." in key_prefix or "/" in key_prefix:
            raise ValueError(f"key prefix {key_prefix!r} may not hold a dot or a slash")
        self.folder = folder_url.rstrip("/")
        self.stem = stem
        self.storage_options = storage_options
        self.key_prefix = key_prefix
        self.documents = 0
        self._offsets = [0]
        self._digests: list[int] = []
        self._stack = ExitStack()
        self._tar: HashingWriter = self._stack.enter_context(
            atomic_open(join_url(self.folder, stem + TAR), storage_options)
        )
        self._meta = ParquetTableWriter(join_url(self.folder, stem + META), storage_options)
        self._rows: list[dict[str, Any]] = []
        self._closed = False

    def write(self, doc: Document) -> None:
        """Append one document; raises `MissingImageError` (and writes nothing) if it has
        none of the shard's media."""
        media = self.media
        found = media.find(doc)
        if found is None:
            have = sorted(doc.media) if doc.media else "no media"
            raise MissingImageError(
                f"document {doc.id!r} has no {media.name} to write (media: {have}); this "
                f"webdataset output takes documents with one of {', '.join(media.extensions)}"
            )
        ext, data = found
        key = _key(self.key_prefix, self.documents)
        fields = media.describe(doc.metadata, ext, data)
        record = {**fields, "id": doc.id, "source": doc.source, "caption": doc.text}
        members = [tar_member(f"{key}.{media.member_names.get(ext, ext)}", data)]
        for other in sorted(doc.media):
            if other not in media.extensions and other not in _GENERATED:
                members.append(tar_member(f"{key}.{other}", doc.media[other]))
        members.append(tar_member(f"{key}.txt", doc.text.encode("utf-8")))
        members.append(tar_member(f"{key}.json", _json(record)))
        data = b"".join(members)
        self._tar.write(data)
        self._offsets.append(self._offsets[-1] + len(data))
        self._digests.append(sample_digest(data))
        self._rows.append(_meta_row(doc, key, fields))
        self.documents += 1
        if len(self._rows) >= META_ROWS:
            self._flush()

    def close(self) -> list[dict[str, Any]]:
        """Finish the three files; return one manifest entry per file, `{"path", "size",
        "hash", "records"}`, paths relative to the folder."""
        if self._closed:
            raise RuntimeError(f"{self.media.name} shard {self.stem} is already closed")
        self._closed = True
        self._tar.write(END_BLOCKS)
        tar_size, tar_hash = self._tar.size, self._tar.fingerprint
        self._stack.close()
        with atomic_open(join_url(self.folder, self.stem + IDX), self.storage_options) as index:
            index.write(encode_index(self._offsets, self._digests))
        self._flush()
        self._meta.close(self.media.fixed)
        meta_size, meta_hash = self._meta.written
        return [
            file_entry(self.stem + TAR, tar_size, tar_hash, self.documents),
            file_entry(self.stem + IDX, index.size, index.fingerprint, self.documents),
            file_entry(self.stem + META, meta_size, meta_hash, self.documents),
        ]

    def _flush(self) -> None:
        if not self._rows:
            return
        self._meta.write(meta_table(self._rows, self.media.fixed))
        self._rows = []


def _key(prefix: str, index: int) -> str:
    return sample_key(int(prefix), index) if prefix.isdigit() else f"{prefix}-{index:07d}"


def _image_fields(metadata: dict[str, Any], ext: str, image: bytes) -> dict[str, Any]:
    """The metadata with the stored image's size, and its format and dimensions when no
    stage recorded them (read from the image's header, which costs no decode)."""
    fields = dict(metadata)
    fields["image_bytes"] = len(image)
    missing = [name for name in ("image_format", "width", "height") if fields.get(name) is None]
    if missing:
        probed = _probe(image)
        if probed is not None:
            for name in missing:
                fields[name] = probed[name]
    if fields.get("image_format") is None:
        fields["image_format"] = _FORMATS.get(ext, ext)
    return fields


def _probe(image: bytes) -> dict[str, Any] | None:
    """The format, width and height in the image's header, None if Pillow cannot tell."""
    from mixplane.io.image_header import open_header  # Pillow only for image outputs

    header = open_header(image, max_pixels=sys.maxsize)
    if isinstance(header, Drop):
        return None
    width, height = header.size
    return {"image_format": header.format or None, "width": width, "height": height}


def _json(record: dict[str, Any]) -> bytes:
    # Sorted keys: the member's bytes do not depend on the order stages added metadata.
    return orjson.dumps(record, default=str, option=orjson.OPT_SORT_KEYS)


def _meta_row(doc: Document, key: str, fields: dict[str, Any]) -> dict[str, Any]:
    row = {name: value for name, value in fields.items() if name != "key"}
    if "key" in fields:
        row[INPUT_KEY] = fields["key"]
    return row | {"id": doc.id, "key": key, "source": doc.source, "caption": doc.text}


def meta_table(rows: list[dict[str, Any]], fixed: pa.Schema) -> pa.Table:
    """The metadata Parquet rows as a table: the `fixed` columns first with their types (a
    value of another type becomes null rather than failing the shard), then every other
    field in order of first appearance."""
    arrays: dict[str, pa.Array] = {}
    for field in fixed:
        if field.name == "n_tokens":
            arrays["n_tokens"] = pa.array([0] * len(rows), type=pa.int64())
            continue
        values = [row.get(field.name) for row in rows]
        if field.type == pa.string():
            arrays[field.name] = string_array([v if isinstance(v, str) else None for v in values])
        elif pa.types.is_floating(field.type):
            arrays[field.name] = pa.array(
                [
                    float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
                    for v in values
                ],
                type=field.type,
            )
        else:
            arrays[field.name] = pa.array(
                [v if isinstance(v, int) and not isinstance(v, bool) else None for v in values],
                type=field.type,
            )
    names: dict[str, None] = {}
    for row in rows:
        for name in row:
            if name not in arrays:
                names[name] = None
    for name in names:
        arrays[name] = column_array([row.get(name) for row in rows])
    return pa.table(arrays)


IMAGE = ShardMedia(
    name="image",
    extensions=IMAGE_EXTENSIONS,
    find=image_of,
    fixed=pa.schema(
        [
            *COMMON,
            ("width", pa.int64()),
            ("height", pa.int64()),
            ("image_format", pa.string()),
            ("image_bytes", pa.int64()),
        ]
    ),
    describe=_image_fields,
    member_names={"jpeg": "jpg"},
)


class ImageShardWriter(MediaShardWriter):
    """Streams image-text documents into one image shard; see `MediaShardWriter`."""

    media = IMAGE
