"""Manifests: what every output folder says about how it was made.

`_manifest.json` records the tool version, the config and its hash, the inputs with sizes and
fingerprints, the outputs with sizes and hashes, and the manifests of parent folders, so
any file can be traced back to the raw inputs that produced it.

Output hashes are computed while the files are written. An input's fingerprint is its
content hash (over HTTP(S) read by one streamed GET), except on object storage, where the
checksum the store keeps for the object (S3's ETag, GCS's MD5 or CRC32C) stands in for it,
so the input is not downloaded again.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from typing import Any

import orjson
import xxhash

from mixplane._version import __version__
from mixplane.io.atomic import is_local, write_bytes
from mixplane.io.retry import read_whole
from mixplane.io.urls import open_forward, url_filesystem

MANIFEST = "_manifest.json"
HASH_CHUNK = 8 << 20


def file_digest(url: str, storage_options: dict[str, Any] | None = None) -> tuple[int, str]:
    """Size and content hash (`xxh3_128:HEX`) of a file, streamed."""
    return _digest(*url_filesystem(url, storage_options))


def _digest(fs, path: str) -> tuple[int, str]:
    digest = xxhash.xxh3_128()
    size = 0
    with open_forward(fs, path) as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, f"xxh3_128:{digest.hexdigest()}"


# Checksums object stores keep, by the key fsspec reports them under, most specific first.
STORE_CHECKSUMS = (("md5Hash", "md5"), ("crc32c", "crc32c"), ("ETag", "etag"), ("etag", "etag"))


def file_fingerprint(url: str, storage_options: dict[str, Any] | None = None) -> tuple[int, str]:
    """Size and fingerprint of an input: the store's checksum for remote objects that have
    one (`etag:...`, `md5:...`), else the content hash (`xxh3_128:...`, read in full).

    Two inputs are not single files: a `pipe:CMD` input (a command's output; its command is
    what identifies it, `command:HASH`, size 0) and an image folder (its files' names and
    fingerprints hashed together, `folder:HASH`, size their sum)."""
    if url.startswith("pipe:"):
        return 0, f"command:{xxhash.xxh3_128_hexdigest(url.encode())}"
    fs, path = url_filesystem(url, storage_options)
    info = fs.info(path)
    if info.get("type") == "directory":
        return _folder_fingerprint(fs, path, is_local(url))
    checksum = None if is_local(url) else _store_checksum(info)
    return checksum or _digest(fs, path)


def _store_checksum(info: dict[str, Any]) -> tuple[int, str] | None:
    """`(size, fingerprint)` from the checksum a store reports for an object, if any."""
    for key, kind in STORE_CHECKSUMS:
        value = info.get(key)
        if value and info.get("size") is not None:
            checksum = str(value).strip('"')  # S3 quotes its ETags
            return int(info["size"]), f"{kind}:{checksum}"
    return None


def _folder_fingerprint(fs, path: str, local: bool) -> tuple[int, str]:
    """The files' fingerprints hashed with their names. A store's listing carries the
    checksums it keeps, so a remote folder costs no request per file (unless it lacks them)."""
    base = path.rstrip("/") + "/"
    digest, total = xxhash.xxh3_128(), 0
    for name, info in sorted(fs.find(path, detail=True).items()):
        relative = name[len(base) :]
        if any(part.startswith((".", "_")) for part in relative.split("/")):
            continue  # hidden and bookkeeping files are not read as inputs
        checksum = None if local else _store_checksum(info) or _store_checksum(fs.info(name))
        size, fingerprint = checksum or _digest(fs, name)
        digest.update(f"{relative}\0{size}\0{fingerprint}\n".encode())
        total += size
    return total, f"folder:{digest.hexdigest()}"


def recompute(recorded: str, url: str, storage_options: dict[str, Any] | None = None):
    """`(size, fingerprint)` of `url` made the same way as the `recorded` one, from what the
    store holds now (not from a listing the filesystem object cached earlier in the process:
    a file rewritten since would pass)."""
    if not url.startswith("pipe:"):
        fs, path = url_filesystem(url, storage_options)
        fs.invalidate_cache(path)
    if recorded.startswith("xxh3_128:"):
        return file_digest(url, storage_options)
    return file_fingerprint(url, storage_options)


def find_parent_manifests(urls: list[str], storage_options: dict[str, Any]) -> list[str]:
    """Manifests of the folders the inputs came from, when they were made by mixplane."""
    parents: set[str] = set()
    # A command's output has no folder to look in.
    for folder in {posixpath.dirname(url) for url in urls if not url.startswith("pipe:")}:
        candidate = f"{folder}/{MANIFEST}"
        fs, path = url_filesystem(candidate, storage_options)
        if fs.exists(path):
            parents.add(candidate)
    return sorted(parents)


def write_manifest(folder: str, content: dict[str, Any], storage_options=None) -> str:
    """Write `_manifest.json` into `folder` atomically; returns its URL."""
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
    return orjson.loads(read_whole(*url_filesystem(url, storage_options)))
