"""What a mixture's datasets say about their files: manifests, remote files' sizes and hashes,
small files read whole and checked, and the shards' metadata Parquet.

A `TokenSource` reads tokens; this answers the lookups it (and the range reader, the
forecast and the piece reader) makes on the way, each at most once per process.

Example:
    >>> files = DatasetFiles([("s3://bucket/web", "shard-00000-000")])  # doctest: +SKIP
    >>> files.remote_file(0).size  # doctest: +SKIP
    33554432
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from mixplane.errors import InputError
from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.io.columns import integers
from mixplane.io.machine_cache import cache_root
from mixplane.io.retry import CorruptRead, Retry, read_whole
from mixplane.io.urls import url_filesystem
from mixplane.load.plan.ranges import ShardKey
from mixplane.load.remote.shard_cache import RemoteFile
from mixplane.store.dataset import TokenizedDataset, check_token_manifest
from mixplane.store.format import BIN, MASK


class DatasetFiles:
    """Lookups on the files of a fixed list of shards (`(dataset folder, shard stem)`).

    `manifests` are remote datasets' manifests as the catalog registered them, by folder:
    then no process reads `_manifest.json` again, and every file is checked against what
    its version registered. A dataset not given has its `_manifest.json` read once.
    """

    def __init__(
        self,
        shards: Sequence[ShardKey],
        manifests: dict[str, dict[str, Any]] | None = None,
        storage_options: dict[str, Any] | None = None,
        cache_dir: str | None = None,
        retry: Retry | None = None,
    ):
        self.shards = tuple(shards)
        self.manifests = dict(manifests or {})
        for uri, manifest in self.manifests.items():
            check_token_manifest(uri, manifest)
        self.storage_options = storage_options or {}
        self.cache_dir = cache_dir
        self.retry = retry or Retry()
        self._datasets: dict[str, TokenizedDataset] = {}
        self._outputs: dict[str, dict[str, dict[str, Any]]] = {}  # per dataset, by file name
        self._files: dict[int, RemoteFile] = {}
        self._lock = threading.Lock()

    def load_manifests(self, numbers: Sequence[int]) -> None:
        """Read the manifests of the datasets of shards `numbers` side by side (one round
        trip each), before the sizes and hashes of their files are looked up."""
        uris = sorted({self.shards[n][0] for n in numbers})
        if len(uris) > 1:
            with ThreadPoolExecutor(min(len(uris), 16)) as pool:
                list(pool.map(self._outputs_of, uris))

    def remote_url(self, number: int) -> str:
        """A shard's token file."""
        uri, stem = self.shards[number]
        return join_url(uri, stem + BIN)

    def remote_file(self, number: int) -> RemoteFile:
        """A remote shard's token file, with the size and hash its manifest gives (looked up
        once: the forecast asks for it at every block)."""
        found = self._files.get(number)
        if found is None:
            uri, stem = self.shards[number]
            output = self.manifest_entry(uri, stem + BIN)
            if output is None:
                raise InputError(f"{uri}: its manifest lists no {stem + BIN}")
            found = RemoteFile(self.remote_url(number), int(output["size"]), output["hash"])
            self._files[number] = found
        return found

    def mask_file(self, number: int) -> RemoteFile:
        """A remote masked shard's loss mask file, with its size and hash."""
        uri, stem = self.shards[number]
        entry = self.manifest_entry(uri, stem + MASK)
        if entry is None:
            raise InputError(f"{uri}: its manifest lists no {stem + MASK} for a masked shard")
        return RemoteFile(join_url(uri, stem + MASK), int(entry["size"]), entry["hash"])

    def manifest_entry(self, uri: str, name: str) -> dict[str, Any] | None:
        """The manifest's output entry (path, size, hash) of a dataset's file, if listed."""
        return self._outputs_of(uri).get(name)

    def _outputs_of(self, uri: str) -> dict[str, dict[str, Any]]:
        found = self._outputs.get(uri)
        if found is None:  # read outside the lock, so several datasets' load side by side
            outputs = self.manifest(uri).get("outputs", [])
            with self._lock:
                found = self._outputs.setdefault(uri, {o["path"]: o for o in outputs})
        return found

    def manifest(self, uri: str) -> dict[str, Any]:
        """A dataset's manifest: as registered, else its `_manifest.json`."""
        registered = self.manifests.get(uri)
        return registered if registered is not None else self.dataset(uri).manifest

    def stored_dtype(self, number: int) -> np.dtype:
        """The token type a shard is stored in (uint16 or uint32)."""
        return np.dtype(self.manifest(self.shards[number][0])["tokenizer"]["dtype"])

    def dataset(self, uri: str) -> TokenizedDataset:
        """A dataset folder, opened once (retried)."""
        if uri not in self._datasets:
            self._datasets[uri] = self.retry.call(
                lambda: TokenizedDataset(uri, self.storage_options, self.cache_dir), what=uri
            )
        return self._datasets[uri]

    def metadata_column(self, number: int, column: str) -> np.ndarray:
        """One column of a shard's `.meta.parquet` (see `metadata_file`)."""
        return _column(self.metadata_file(number), column)

    def metadata_file(self, number: int) -> Any:
        """A shard's `.meta.parquet` for a Parquet reader: a local one's path (the reader
        reads only the footer and the column chunks asked for); a remote one from the
        machine's copy when querying the catalog made it (`catalog.mirror`), else read whole
        in one request (a Parquet reader over a remote file makes a round trip per footer
        and column chunk) and checked against the manifest's hash."""
        uri, stem = self.shards[number]
        name = stem + ".meta.parquet"
        if is_local(uri):
            return local_path(join_url(uri, name))
        from mixplane.catalog.mirror import mirrored_path  # the catalog loads DuckDB: not before

        digest = (self.manifest_entry(uri, name) or {}).get("hash")
        mirrored = mirrored_path(cache_root(self.cache_dir), uri, stem, digest)
        if os.path.exists(mirrored):  # copied (and checked) when the catalog was queried
            return mirrored
        return pa.BufferReader(self.fetch_whole(uri, name))

    def fetch_whole(self, uri: str, name: str) -> bytes:
        """A small file of a dataset, read in one request (retried) and checked against the
        manifest's hash; not kept in the cache."""
        url = join_url(uri, name)
        fs, path = url_filesystem(url, self.storage_options)
        entry = self.manifest_entry(uri, name) or {}

        def read() -> bytes:
            data = read_whole(fs, path)
            if "hash" in entry and f"xxh3_128:{xxhash.xxh3_128_hexdigest(data)}" != entry["hash"]:
                raise CorruptRead(
                    f"{len(data)} bytes that do not hash to the manifest's {entry['hash']} "
                    f"({entry.get('size')} bytes)"
                )
            return data

        return self.retry.call(read, what=url)


def _column(source: Any, column: str) -> np.ndarray:
    """One column of a Parquet file. (`ParquetFile`, not `read_table`, and integers without
    pyarrow's numpy conversion: each loads a library the first time, a quarter of a second.)"""
    import pyarrow.parquet as pq

    values = pq.ParquetFile(source).read(columns=[column]).column(column)
    if pa.types.is_integer(values.type) and not values.null_count:
        return integers(values)
    return values.to_numpy()
