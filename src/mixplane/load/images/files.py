"""Opening image shards: local ones in place; remote ones of registered datasets through
the machine's `ShardCache`, the node cache token shards go through.

A remote shard's `.tar` and `.idx` are downloaded once per machine (every rank and
DataLoader worker shares the copies), checked against the sizes and hashes the catalog
registered, and pinned while a reader has them open. The epoch order shuffles each
component's samples over all of its shards, so every shard is read throughout an epoch: a
`cache_limit` must hold all the shards the mixture reads (refused before any download
otherwise), and the cache is told they are all needed now, so only other mixtures' files
make room. The loader forecasts the order in which an epoch first reads them (a function of
the plan) and downloads them in that order ahead of the reads (`prefetch`).

With `cache: ranges` only the indexes are copied into the cache: the samples are read from
object storage by ranged requests (neighbours in one), each checked against the digest its
index keeps (image format version 2) and fetched again when it does not match. For shards
too many or too large for one machine's disk; every read is a round trip, so a fast disk
with `cache: shards` reads faster when the shards fit.

Shards named directly (without a catalog) have no registered manifest: nothing says what
their bytes must be, and a copy keyed by URL would outlive a rewrite of the shard, so they
are read in place by ranged requests, uncached.

Example:
    >>> files = ImageShardFiles(resolved.shards, resolved.manifests, {})  # doctest: +SKIP
    >>> reader = files.open(0)  # doctest: +SKIP
    >>> files.release(0)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from mixplane.errors import ConfigError, InputError
from mixplane.io.atomic import is_local, join_url
from mixplane.io.machine_cache import cache_root
from mixplane.io.retry import Retry
from mixplane.io.sizes import size_text
from mixplane.load.remote.shard_cache import RemoteFile, ShardCache
from mixplane.store.images import ImageShardReader
from mixplane.store.images.format import IDX, TAR


class ImageShardFiles:
    """Readers of shards `(folder, stem)`; those of remote datasets in `manifests` (their
    registered manifests, by folder) come from the node cache in `cache_dir`, at most
    `cache_limit` bytes (None: no limit); with `ranges`, only their indexes do."""

    def __init__(
        self,
        shards: Sequence[tuple[str, str]],
        manifests: dict[str, dict[str, Any]],
        storage_options: dict[str, Any] | None = None,
        cache_dir: str | None = None,
        cache_limit: int | None = None,
        retry: Retry | None = None,
        ranges: bool = False,
    ):
        self.shards = tuple(shards)
        self.storage_options = storage_options or {}
        self.cache_dir = cache_dir
        self.cache_limit = cache_limit
        self.retry = retry or Retry()
        self.ranges = ranges
        self.ranged = {"requests": 0, "bytes": 0}  # this process's ranged reads of samples
        self.outputs = {
            uri: {entry["path"]: entry for entry in manifest.get("outputs") or []}
            for uri, manifest in manifests.items()
        }
        self.cached = [not is_local(uri) and uri in self.outputs for uri, _ in self.shards]
        self._cache: ShardCache | None = None
        self._pid = os.getpid()

    def __getstate__(self) -> dict[str, Any]:
        # Another process opens its own cache (its pins are its own).
        return self.__dict__ | {"_cache": None}

    def open(self, number: int) -> ImageShardReader:
        """A reader of shard `number`; a cached one stays pinned until `release(number)`."""
        uri, stem = self.shards[number]
        if not self.cached[number]:
            return ImageShardReader(uri, stem, self.storage_options)
        cache = self.cache
        wanted = self.cached_files(number)
        copies: list[str] = []
        try:
            for file in wanted:
                copies.append(cache.acquire(file))
            if self.ranges:
                reader = ImageShardReader(
                    uri, stem, self.storage_options, (None, copies[0]), self.retry, self._count
                )
                if reader.digests is None:
                    raise ConfigError(
                        f"{reader.idx_url} is a version 1 image index, without the sample "
                        "digests that ranged reads are checked against: process the dataset "
                        "again with this mixplane, or read it with cache: shards"
                    )
                return reader
            return ImageShardReader(uri, stem, self.storage_options, (copies[0], copies[1]))
        except BaseException:
            for file in wanted[: len(copies)]:
                cache.release(file.url)
            raise

    def prefetch(self, order: Sequence[int]) -> None:
        """Download the remote shards `order` lists, soonest first, in the background."""
        files = [file for n in order if self.cached[n] for file in self.cached_files(n)]
        if files:
            self.cache.prefetch(files)

    def release(self, number: int) -> None:
        """Drop the pins `open(number)` took: the cache may evict the shard's files."""
        if self.cached[number]:
            for file in self.cached_files(number):
                self.cache.release(file.url)

    def files(self, number: int) -> tuple[RemoteFile, RemoteFile]:
        """A remote shard's `.tar` and `.idx`, with the sizes and hashes registered."""
        uri, stem = self.shards[number]
        found = []
        for name in (stem + TAR, stem + IDX):
            entry = self.outputs[uri].get(name)
            if entry is None or "hash" not in entry:
                raise InputError(f"{uri}: its registered manifest lists no {name} with a hash")
            found.append(RemoteFile(join_url(uri, name), int(entry["size"]), entry["hash"]))
        return found[0], found[1]

    def cached_files(self, number: int) -> tuple[RemoteFile, ...]:
        """The files of shard `number` the cache holds: its `.tar` and `.idx`, or with
        `ranges` its `.idx` alone."""
        tar, idx = self.files(number)
        return (idx,) if self.ranges else (tar, idx)

    def _count(self, size: int) -> None:
        self.ranged["requests"] += 1
        self.ranged["bytes"] += size

    @property
    def cache(self) -> ShardCache:
        """This process's handle on the machine's cache (made on first use, after checking
        that the limit holds every cached shard; a forked process makes its own)."""
        if self._cache is None or self._pid != os.getpid():
            files = [
                f for n, cached in enumerate(self.cached) if cached for f in self.cached_files(n)
            ]
            if self.cache_limit is not None:
                needed = sum(file.size for file in files)
                if needed > self.cache_limit:
                    raise ConfigError(
                        f"cache_limit {size_text(self.cache_limit)} is smaller than the "
                        f"{len(files)} files of the remote image shards this mixture reads "
                        f"({size_text(needed)}); each epoch reads samples of all of them in "
                        "a shuffled order, so a smaller cache would download them again and "
                        f"again: raise cache_limit to at least {needed:,} bytes"
                    )
            self._cache = ShardCache(
                cache_root(self.cache_dir), self.cache_limit, self.storage_options, self.retry
            )
            self._pid = os.getpid()
            # Every shard is read throughout the epoch: all are needed now, and the files of
            # other mixtures sharing the cache go first.
            self._cache.plan(dict.fromkeys((file.url for file in files), 0))
        return self._cache

    def stats(self) -> dict[str, Any]:
        """The node cache's counters in this process (`ShardCache.stats`), and with `ranges`
        the ranged reads of samples; empty when no shard is cached."""
        if not any(self.cached):
            return {}
        return self.cache.stats() | ({"ranges": dict(self.ranged)} if self.ranges else {})

    def close(self) -> None:
        """Drop every pin of this process."""
        if self._cache is not None and self._pid == os.getpid():
            self._cache.close()
