"""Local copies of remote shard metadata, so queries over object storage run on local files.

A query over remote Parquet pays a round trip per footer and per column chunk of every file,
and a mixture queries the same files once per component; its loader then reads every
selected shard's token counts again. Copying each `.meta.parquet` whole, once per machine
(one GET each, many in flight), turns all of that into local reads: the copy is made once
and every later query, component and job on the machine reuses it.

A copy is checked against the size the catalog registered (versions are immutable: a file
of another size was rewritten since, and is refused as `check_unchanged` refuses it) and
appears atomically, so processes sharing the cache never read half a file.

Example:
    >>> mirror = MetadataMirror("/tmp/cache", {"endpoint_url": "http://127.0.0.1:9000"})
    >>> mirror.paths(version)  # doctest: +SKIP
    (['/tmp/cache/metadata/5c1e.../shard-00000-000.meta.parquet', ...], True)
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import xxhash

from mixplane.catalog.dataset import META_SUFFIX, Shard
from mixplane.catalog.registry import DatasetVersion
from mixplane.io.atomic import is_local, join_url, write_bytes
from mixplane.io.retry import CorruptRead, Retry, read_whole
from mixplane.io.urls import url_filesystem

COPIES_IN_FLIGHT = 32


def mirror_folder(cache_root: str, uri: str) -> str:
    """Where the metadata of the dataset folder `uri` is copied."""
    return os.path.join(cache_root, "metadata", xxhash.xxh3_64_hexdigest(uri.encode()))


def mirrored_path(cache_root: str, uri: str, stem: str) -> str:
    """The local copy of shard `stem`'s metadata (present or not)."""
    return os.path.join(mirror_folder(cache_root, uri), stem + META_SUFFIX)


class MetadataMirror:
    """Copies of remote versions' shard metadata under `cache_root/metadata`."""

    def __init__(self, cache_root: str, storage_options: dict[str, Any] | None = None):
        self.cache_root = cache_root
        self.storage_options = storage_options or {}
        self.retry = Retry()

    def paths(self, version: DatasetVersion) -> tuple[list[str], bool]:
        """Local paths of `version`'s metadata files in shard order, copied first where
        missing (local versions as they are), and whether every one was copied just now:
        each copy's size is checked against the registration as it arrives, which is what
        `check_unchanged` checks by listing the folder."""
        if is_local(version.uri):
            urls = [join_url(version.uri, shard.stem + META_SUFFIX) for shard in version.shards]
            return urls, False
        paths = [mirrored_path(self.cache_root, version.uri, s.stem) for s in version.shards]
        missing = [
            (shard, path)
            for shard, path in zip(version.shards, paths, strict=True)
            if not _present(path, shard.meta_size)
        ]
        if missing:
            os.makedirs(os.path.dirname(paths[0]), exist_ok=True)
            with ThreadPoolExecutor(min(len(missing), COPIES_IN_FLIGHT)) as pool:
                list(pool.map(lambda item: self._copy(version, *item), missing))
        return paths, len(missing) == len(paths)

    def _copy(self, version: DatasetVersion, shard: Shard, path: str) -> None:
        url = join_url(version.uri, shard.stem + META_SUFFIX)
        fs, remote = url_filesystem(url, self.storage_options)

        def read() -> bytes:
            data = read_whole(fs, remote)
            if len(data) != shard.meta_size:  # cut short, or rewritten since registration
                raise CorruptRead(
                    f"{len(data):,} bytes arrived where {version.ref} registered "
                    f"{shard.meta_size:,}; if the folder was rewritten since, register it "
                    "again to make a new version"
                )
            return data

        write_bytes(path, self.retry.call(read, what=url))


def _present(path: str, size: int) -> bool:
    try:
        return os.path.getsize(path) == size
    except OSError:
        return False
