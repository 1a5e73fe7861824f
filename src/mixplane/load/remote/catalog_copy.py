"""The catalog a mixture names, as a local file, and what identifies its content.

A remote catalog (s3://, gs://, http(s)://) is copied into the machine's cache once: every
start asks the store for the object's stamp (size, ETag, modification time, version: one
HEAD), and only a stamp the cache has not seen makes a copy. The copy is made by one process
of the machine at a time (a file lock beside it): the ranks that start together wait for the
first one's copy instead of each downloading their own.

Copies are named by their content hash (`catalogs/URL-HASH/CONTENT-HASH/catalog.duckdb`) and
never change once they appear: a download goes to a hidden `.partial` (removed by the next
copier if a kill -9 leaves it), is checked against the stamp's size, and is renamed in
place; the record of which copy is current (`source.json`) is written last. So the content
hash is what the plan cache keys on: the same catalog copied again keeps its plans, and a
catalog registered anew (another content) gets new ones. The copy before the current one is
kept too, for processes that read the record just before it changed; older ones are removed.

Example:
    >>> catalog = open_catalog("s3://bucket/catalog.duckdb", "/tmp/cache")  # doctest: +SKIP
    >>> catalog.path, catalog.identity  # doctest: +SKIP
    ('/tmp/cache/catalogs/5c1e.../9f0a.../catalog.duckdb', 'xxh3_128:9f0a...')
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import shutil
import uuid
from dataclasses import dataclass
from typing import Any

import xxhash

from mixplane.errors import InputError
from mixplane.io.atomic import is_local, local_path, write_bytes
from mixplane.io.locks import locked
from mixplane.io.machine_cache import cache_root
from mixplane.io.retry import CorruptRead, Retry
from mixplane.io.urls import url_filesystem
from mixplane.manifest import file_digest

RECORD = "source.json"
PARTIAL = ".partial"
# What an object store's answer to a HEAD says about the object's version (fsspec's names).
CHANGE_MARKERS = ("ETag", "etag", "LastModified", "last_modified", "mtime", "VersionId")


@dataclass(frozen=True)
class LocalCatalog:
    """A catalog file to open, and what identifies its content for the plan cache: for a
    local file its path, size and modification time (registering rewrites it); for a copy
    of a remote one, the copy's content hash."""

    path: str
    identity: str


def open_catalog(
    url: str, cache_dir: str | None, storage_options: dict[str, Any] | None = None
) -> LocalCatalog:
    """The local catalog at `url`, or the machine's copy of a remote one (made if the store
    holds content the cache has not copied)."""
    if is_local(url):
        path = local_path(url)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise InputError(f"{path}: not found") from None
        identity = json.dumps([os.path.abspath(path), info.st_size, info.st_mtime_ns])
        return LocalCatalog(path, identity)
    return RemoteCatalog(url, cache_dir, storage_options).local()


class RemoteCatalog:
    """The copies of one remote catalog under `CACHE/catalogs/URL-HASH/`."""

    def __init__(self, url: str, cache_dir: str | None, storage_options: dict[str, Any] | None):
        self.url = url
        self.fs, self.remote = url_filesystem(url, storage_options)
        digest = xxhash.xxh3_64_hexdigest(url.encode())
        self.folder = os.path.join(cache_root(cache_dir), "catalogs", digest)
        self.retry = Retry()

    def local(self) -> LocalCatalog:
        stamp = self.stamp()
        found = self._current(stamp)
        if found is not None:
            return found
        os.makedirs(self.folder, exist_ok=True)
        with locked(os.path.join(self.folder, ".lock")):
            # The process this one waited for may have copied this very content.
            return self._current(stamp) or self._copy(stamp)

    def stamp(self) -> dict[str, Any]:
        """What the store says about the object now (a listing cached by fsspec is not asked)."""
        self.fs.invalidate_cache(self.remote)
        info = self.retry.call(lambda: self.fs.info(self.remote), what=self.url)
        stamp = {key: str(info[key]) for key in CHANGE_MARKERS if info.get(key) is not None}
        return stamp | {"size": info.get("size")}

    def _current(self, stamp: dict[str, Any]) -> LocalCatalog | None:
        """The current copy, if it was made from an object with this stamp. A store that
        gives no version marker at all (only a size) never matches: its object is copied at
        every start, as nothing else would notice a change of the same size."""
        if len(stamp) == 1:
            return None
        try:
            with open(os.path.join(self.folder, RECORD), "rb") as handle:
                record = json.load(handle)
            path = os.path.join(self.folder, record["copy"])
            if record["stamp"] != stamp or not os.path.exists(path):
                return None
            return LocalCatalog(path, record["hash"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def _copy(self, stamp: dict[str, Any]) -> LocalCatalog:
        """Download the object into a new copy and make it current (the folder's lock held)."""
        for name in os.listdir(self.folder):
            if name.endswith(PARTIAL):  # a killed copier's: nobody else copies while we hold
                os.remove(os.path.join(self.folder, name))
        partial = os.path.join(self.folder, f".{uuid.uuid4().hex[:8]}{PARTIAL}")
        try:
            digest = self.retry.call(lambda: self._download(partial, stamp), what=self.url)
            name = os.path.join(digest.split(":")[-1], posixpath.basename(self.remote))
            path = os.path.join(self.folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.replace(partial, path)  # a copy of this content already there holds the same
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(partial)
        previous = self._record_copy()
        record = {"url": self.url, "stamp": stamp, "hash": digest, "copy": name}
        write_bytes(os.path.join(self.folder, RECORD), json.dumps(record).encode())
        self._prune(keep={name.split(os.sep)[0], (previous or "").split(os.sep)[0]})
        return LocalCatalog(path, digest)

    def _download(self, partial: str, stamp: dict[str, Any]) -> str:
        self.fs.get_file(self.remote, partial)
        size, digest = file_digest(partial)
        if stamp["size"] is not None and size != int(stamp["size"]):
            raise CorruptRead(f"{size:,} bytes arrived where the store announced {stamp['size']:,}")
        return digest

    def _record_copy(self) -> str | None:
        try:
            with open(os.path.join(self.folder, RECORD), "rb") as handle:
                return json.load(handle)["copy"]
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def _prune(self, keep: set[str]) -> None:
        """Remove copies other than `keep` (folders named by content hash), and anything
        else but the record and the lock."""
        for entry in os.scandir(self.folder):
            if entry.name in keep or entry.name in (RECORD, ".lock"):
                continue
            if entry.is_dir():
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(entry.path)
