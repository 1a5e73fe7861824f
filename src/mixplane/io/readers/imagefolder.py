"""Folders of image or audio files with caption sidecars: `a.jpg` + `a.txt` and/or `a.json`.

Each media file under the folder, in any subfolder, is one record: for `image_folder` the
images (jpg, jpeg, png, webp, bmp, gif, tif, tiff; any case), for `audio_folder` the clips
(flac, wav, mp3, ogg, oga, opus). `a.txt` beside it (same folder, same name up to the last dot)
is its caption or transcript, `a.json` its metadata (its `caption` or the input's text
field is the caption when there is no `.txt`). The id is the file's path relative to the
folder (to the common root when an input names several folders). Hidden files and
`_`-prefixed entries are skipped, as for any input folder. A task reads a run `[start,
end)` of the folder's media files in sorted order.

Example:
    >>> from mixplane.io.readers import ReadOptions, ReadStats, Shard
    >>> shard = Shard("photos", "", "image_folder")
    >>> [d.id for d in read(shard, ReadOptions(), ReadStats())]  # doctest: +SKIP
    ['cats/a.jpg', 'cats/b.png']
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Any

from mixplane.document import Document
from mixplane.io.readers.base import ReadOptions, ReadStats, Shard, oversized, sidecar_document
from mixplane.io.readers.lines import PREFIX
from mixplane.io.urls import url_filesystem
from mixplane.media import AUDIO_EXTENSIONS, IMAGE_EXTENSIONS

#: The folder formats and the extensions of the files that are their records.
MEDIA_FOLDERS = {"image_folder": IMAGE_EXTENSIONS, "audio_folder": AUDIO_EXTENSIONS}


def folder_media(url: str, fmt: str, storage_options: dict[str, Any] | None = None):
    """`(relative path, size)` of every image (or audio) file under the folder, by path."""
    fs, root = url_filesystem(url, storage_options)
    return [(name, size) for name, size in _listing(fs, root) if _is_media(name, fmt)]


def dataset_source(url: str) -> str:
    """The source of a folder's images when neither the input nor a sidecar names one: the
    folder's name."""
    return posixpath.basename(url.rstrip("/")) or "images"


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield a Document per image (or clip) of `[start, end)`: text = caption (or
    transcript), media = the file."""
    fs, root = url_filesystem(shard.url, options.storage_options)
    root = root.rstrip("/")
    listing = dict(_listing(fs, root))
    images = [name for name in listing if _is_media(name, shard.format)]
    source = options.source or dataset_source(shard.url)
    limit = options.max_record_bytes
    for name in images[shard.start : shard.end]:
        doc_id = posixpath.join(shard.name, name) if shard.name else name
        where = f"{shard.url.rstrip('/')}/{name}"
        stem = name.rsplit(".", 1)[0]
        size = listing[name]
        sidecars = {ext: f"{stem}.{ext}" for ext in ("txt", "json") if f"{stem}.{ext}" in listing}
        stats.bytes += size + sum(listing[path] for path in sidecars.values())
        if size > limit:
            with fs.open(f"{root}/{name}", "rb") as handle:
                yield oversized(where, size, limit, handle.read(PREFIX), doc_id)
            continue
        files = {
            ext: fs.cat_file(f"{root}/{path}") for ext, path in [("image", name), *sidecars.items()]
        }
        doc = sidecar_document(files, options, source, doc_id, where, _sidecar)
        if isinstance(doc, Document):
            doc.media = {name.rsplit(".", 1)[1].lower(): files["image"]}
        yield doc


def _listing(fs, root: str) -> list[tuple[str, int]]:
    """Every visible file under the folder: `(path relative to it, size)`, sorted."""
    base = root.rstrip("/") + "/"
    found = []
    for path, info in fs.find(root, detail=True).items():
        if info.get("type") == "directory" or not path.startswith(base):
            continue
        relative = path[len(base) :]
        if any(part.startswith((".", "_")) for part in relative.split("/")):
            continue
        found.append((relative, int(info.get("size") or 0)))
    return sorted(found)


def _is_media(name: str, fmt: str) -> bool:
    extensions = MEDIA_FOLDERS[fmt]
    return "." in posixpath.basename(name) and name.rsplit(".", 1)[1].lower() in extensions


def _sidecar(ext: str) -> str:
    return f"its .{ext} sidecar"
