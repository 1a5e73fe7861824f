"""Manifests: what every output folder says about how it was made.

`_manifest.json` records the tool version, the config and its hash, the inputs with sizes and
fingerprints, the outputs with sizes and hashes, and the manifests of parent folders, so
any file can be traced back to the raw inputs that produced it.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from typing import Any

import orjson
import xxhash

from mixplane.io.atomic import write_bytes
from mixplane.io.urls import url_filesystem

MANIFEST = "_manifest.json"
HASH_CHUNK = 8 << 20


def file_digest(url: str, storage_options: dict[str, Any] | None = None) -> tuple[int, str]:
    """Size and content hash (`xxh3_128:HEX`) of a file, streamed."""
    fs, path = url_filesystem(url, storage_options)
    digest = xxhash.xxh3_128()
    size = 0
    with fs.open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, f"xxh3_128:{digest.hexdigest()}"


def find_parent_manifests(urls: list[str], storage_options: dict[str, Any]) -> list[str]:
    """Manifests of the folders the inputs came from, when they were made by mixplane."""
    parents: set[str] = set()
    for folder in {posixpath.dirname(url) for url in urls}:
        candidate = f"{folder}/{MANIFEST}"
        fs, path = url_filesystem(candidate, storage_options)
        if fs.exists(path):
            parents.add(candidate)
    return sorted(parents)


def write_manifest(folder: str, content: dict[str, Any], storage_options=None) -> str:
    """Write `_manifest.json` into `folder` atomically; returns its URL."""
    from mixplane import __version__

    manifest = {
        "tool": "mixplane",
        "version": __version__,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        **content,
    }
    url = f"{folder.rstrip('/')}/{MANIFEST}"
    write_bytes(url, orjson.dumps(manifest, option=orjson.OPT_INDENT_2), storage_options)
    return url


def read_json(url: str, storage_options: dict[str, Any] | None = None) -> Any:
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        return orjson.loads(handle.read())
