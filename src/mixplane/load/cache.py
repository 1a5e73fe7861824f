"""A local cache directory for remote catalogs and data (object storage, http).

A remote file is copied once under the cache directory, keyed by its URL, and copied again
only when its size or modification stamp changes. Copies appear atomically, so concurrent
processes (ranks on one machine) never read half a file; transient failures are retried.
(Token shards have a cache of their own, with a size limit: `shard_cache`.)

Example:
    >>> local_copy("s3://bucket/catalog.duckdb", "/tmp/cache")  # doctest: +SKIP
    '/tmp/cache/catalogs/5c1e.../catalog.duckdb'
"""

from __future__ import annotations

import json
import os
import posixpath
import uuid
from typing import Any

import xxhash

from mixplane.errors import InputError
from mixplane.io.atomic import is_local, local_path
from mixplane.io.retry import Retry
from mixplane.io.urls import url_filesystem

DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "mixplane")


def cache_root(cache_dir: str | None) -> str:
    """The cache directory: the given one, else $MIXPLANE_CACHE, else ~/.cache/mixplane."""
    return cache_dir or os.environ.get("MIXPLANE_CACHE", DEFAULT_CACHE)


def local_copy(url: str, cache_dir: str | None, storage_options: dict[str, Any] | None = None):
    """A local path holding `url`'s content: the path itself when local, else a cached copy."""
    if is_local(url):
        path = local_path(url)
        if not os.path.exists(path):
            raise InputError(f"{path}: not found")
        return path
    fs, path = url_filesystem(url, storage_options)
    retry = Retry()
    info = retry.call(lambda: fs.info(path), what=url)
    stamp = {
        "size": info.get("size"),
        "changed": str(info.get("LastModified") or info.get("mtime")),
    }
    folder = os.path.join(cache_root(cache_dir), "catalogs", xxhash.xxh3_64_hexdigest(url.encode()))
    target = os.path.join(folder, posixpath.basename(path))
    record = target + ".source.json"
    if os.path.exists(target) and os.path.exists(record):
        with open(record) as handle:
            if json.load(handle) == stamp:
                return target
    os.makedirs(folder, exist_ok=True)
    partial = f"{target}.{uuid.uuid4().hex[:8]}.partial"
    try:
        retry.call(lambda: fs.get_file(path, partial), what=url)
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    with open(f"{record}.{os.getpid()}", "w") as handle:
        json.dump(stamp, handle)
    os.replace(f"{record}.{os.getpid()}", record)
    return target
