"""Local copies of remote shard metadata, so queries over object storage run on local files.

A query over remote Parquet pays a round trip per footer and per column chunk of every file,
and a mixture queries the same files once per component; its loader then reads every
selected shard's token counts again. Copying each `.meta.parquet` whole, once per machine
(one GET each, many in flight), turns all of that into local reads: the copy is made once
and every later query, component and job on the machine reuses it.

The copies of a dataset folder are made by one process of the machine at a time (a file
lock in the folder): the others wait, then find them. Each copy is checked as it arrives
against what the catalog registered: its size (versions are immutable: a file of another
size was rewritten since, and is refused as `check_unchanged` refuses it) and the hash the
manifest gave it (bytes corrupted on the way are fetched again, and named in the error when
they never match). A copy is named by that hash and appears atomically, so processes sharing
the cache never read half a file, and a folder rewritten with files of the same size never
passes an old copy off as a new one; what a killed copier left is removed by the next.

Example:
    >>> mirror = MetadataMirror("/tmp/cache", {"endpoint_url": "http://127.0.0.1:9000"})
    >>> mirror.paths(version, registered_files)  # doctest: +SKIP
    (['/tmp/cache/metadata/5c1e.../shard-00000-000.9f0a12...meta.parquet', ...], True)
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import xxhash

from mixplane.catalog.dataset import META_SUFFIX, Shard
from mixplane.catalog.registry import DatasetVersion
from mixplane.io.atomic import is_local, join_url, remove_stale_temporaries, write_bytes
from mixplane.io.locks import locked
from mixplane.io.retry import CorruptRead, Retry, read_whole
from mixplane.io.urls import url_filesystem

COPIES_IN_FLIGHT = 32
HASH_PREFIX = "xxh3_128:"


def mirror_folder(cache_root: str, uri: str) -> str:
    """Where the metadata of the dataset folder `uri` is copied."""
    return os.path.join(cache_root, "metadata", xxhash.xxh3_64_hexdigest(uri.encode()))


def mirrored_path(cache_root: str, uri: str, stem: str, digest: str | None = None) -> str:
    """The local copy of shard `stem`'s metadata (present or not): named by the first 16
    digits of its registered hash `digest` (`xxh3_128:HEX`), or by the stem alone for a
    manifest that gave none.

    Example:
        >>> mirrored_path("/c", "s3://b/web", "shard-00000-000", "xxh3_128:" + "ab" * 16)[-45:]
        'shard-00000-000.abababababababab.meta.parquet'
    """
    name = stem if digest is None else f"{stem}.{digest.removeprefix(HASH_PREFIX)[:16]}"
    return os.path.join(mirror_folder(cache_root, uri), name + META_SUFFIX)


class MetadataMirror:
    """Copies of remote versions' shard metadata under `cache_root/metadata`."""

    def __init__(self, cache_root: str, storage_options: dict[str, Any] | None = None):
        self.cache_root = cache_root
        self.storage_options = storage_options or {}
        self.retry = Retry()

    def paths(
        self, version: DatasetVersion, files: dict[str, dict[str, Any]]
    ) -> tuple[list[str], bool]:
        """Local paths of `version`'s metadata files in shard order, copied first where
        missing (local versions as they are), and whether every one was copied just now:
        each copy's size is checked against the registration as it arrives, which is what
        `check_unchanged` checks by listing the folder. `files`: the manifest's entries at
        registration (`CatalogSession.files`), by file name."""
        if is_local(version.uri):
            urls = [join_url(version.uri, shard.stem + META_SUFFIX) for shard in version.shards]
            return urls, False
        digests = [registered_hash(files, shard) for shard in version.shards]
        paths = [
            mirrored_path(self.cache_root, version.uri, shard.stem, digest)
            for shard, digest in zip(version.shards, digests, strict=True)
        ]
        wanted = list(zip(version.shards, digests, paths, strict=True))
        missing = [item for item in wanted if not _present(item[2], item[0].meta_size)]
        if not missing:
            return paths, False
        folder = os.path.dirname(paths[0])
        os.makedirs(folder, exist_ok=True)
        with locked(os.path.join(folder, ".lock")):
            remove_stale_temporaries(folder)  # a killed copier's; nobody copies but us now
            # Those the process this one waited for copied are not fetched again.
            missing = [item for item in missing if not _present(item[2], item[0].meta_size)]
            if missing:
                with ThreadPoolExecutor(min(len(missing), COPIES_IN_FLIGHT)) as pool:
                    list(pool.map(lambda item: self._copy(version, *item), missing))
        return paths, len(missing) == len(paths)

    def _copy(self, version: DatasetVersion, shard: Shard, digest: str | None, path: str) -> None:
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
            arrived = HASH_PREFIX + xxhash.xxh3_128_hexdigest(data)
            if digest is not None and arrived != digest:  # corrupted on the way, or rewritten
                raise CorruptRead(
                    f"the bytes hash to {arrived}, but {version.ref} registered {digest}; "
                    "if the folder was rewritten since, register it again"
                )
            return data

        write_bytes(path, self.retry.call(read, what=url))


def registered_hash(files: dict[str, dict[str, Any]], shard: Shard) -> str | None:
    """The hash the manifest gave `shard`'s metadata file at registration, if any."""
    digest = (files.get(shard.stem + META_SUFFIX) or {}).get("hash")
    return digest if isinstance(digest, str) and digest.startswith(HASH_PREFIX) else None


def _present(path: str, size: int) -> bool:
    try:
        return os.path.getsize(path) == size
    except OSError:
        return False
