"""A tokenized dataset: a folder of shards described by its `_manifest.json`.

Local folders are mapped in place; on object storage (s3://, gs://...) each shard file is
copied once into a local cache folder and mapped from there.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

import numpy as np
import xxhash

from mixplane.errors import InputError, MixplaneError
from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.io.urls import url_filesystem
from mixplane.manifest import MANIFEST, file_digest, read_json
from mixplane.store.format import (
    BIN,
    FILE_SUFFIXES,
    FORMAT_NAME,
    IDX,
    MASK,
    MASKED_FORMAT_VERSION,
    META,
    READ_VERSIONS,
)
from mixplane.store.reader import ShardReader, verify_files

DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "mixplane", "shards")


def check_token_manifest(folder: str, manifest: dict[str, Any]) -> None:
    """Refuse the manifest of anything but a tokenized dataset in the format this mixplane
    reads.

    Example:
        >>> check_token_manifest("tokens", {"kind": "process"})
        Traceback (most recent call last):
        mixplane.errors.InputError: tokens: its manifest is not a tokenized dataset's
    """
    fmt = manifest.get("format") or {}
    if manifest.get("kind") != "tokenize" or fmt.get("name") != FORMAT_NAME:
        raise InputError(f"{folder}: its manifest is not a tokenized dataset's")
    if fmt.get("version") not in READ_VERSIONS:
        raise InputError(
            f"{folder}: token format version {fmt.get('version')}; this mixplane "
            f"reads versions {', '.join(map(str, READ_VERSIONS))}"
        )


def has_masks(manifest: dict[str, Any]) -> bool:
    """Whether a tokenized dataset's shards carry loss masks (format version 2).

    Example:
        >>> has_masks({"format": {"name": "mixplane-tokens", "version": 2}})
        True
    """
    return (manifest.get("format") or {}).get("version") == MASKED_FORMAT_VERSION


class TokenizedDataset:
    """The shards of one `mixplane tokenize` output, with totals and the tokenizer's spec.

    Example:
        >>> dataset = TokenizedDataset("tokens/")  # doctest: +SKIP
        >>> dataset.n_documents, dataset.n_tokens, dataset.shard_names[:1]  # doctest: +SKIP
        (1200, 845113, ['shard-00000-000'])
        >>> from mixplane.tokenize import dataset_tokenizer
        >>> dataset_tokenizer(dataset).decode(dataset.document(0))  # doctest: +SKIP
        'The first document...'
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        storage_options: dict[str, Any] | None = None,
        cache_dir: str | None = None,
    ):
        self.folder = os.fspath(folder).rstrip("/")
        self.storage_options = storage_options or {}
        self.cache_dir = cache_dir or os.environ.get("MIXPLANE_CACHE", DEFAULT_CACHE)
        manifest_url = join_url(self.folder, MANIFEST)
        try:
            self.manifest: dict[str, Any] = read_json(manifest_url, self.storage_options)
        except FileNotFoundError:
            raise InputError(
                f"{self.folder}: no {MANIFEST}; not a tokenized dataset (run mixplane tokenize)"
            ) from None
        check_token_manifest(self.folder, self.manifest)
        self.shards: list[dict[str, Any]] = self.manifest["shards"]
        self._readers: dict[str, ShardReader] = {}

    def __repr__(self) -> str:
        return (
            f"TokenizedDataset({self.folder!r}, shards={len(self.shards)}, "
            f"documents={self.n_documents}, tokens={self.n_tokens})"
        )

    def __len__(self) -> int:
        return self.n_documents

    @property
    def shard_names(self) -> list[str]:
        return [shard["name"] for shard in self.shards]

    @property
    def n_documents(self) -> int:
        return sum(shard["documents"] for shard in self.shards)

    @property
    def n_tokens(self) -> int:
        return sum(shard["tokens"] for shard in self.shards)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.manifest["tokenizer"]["dtype"])

    @property
    def masked(self) -> bool:
        """Whether the shards carry loss masks (fine-tuning data, format version 2)."""
        return has_masks(self.manifest)

    @property
    def tokenizer_info(self) -> dict[str, Any]:
        """The manifest's tokenizer entry: spec, vocab_size, bos_id, eos_id, dtype..."""
        return self.manifest["tokenizer"]

    @cached_property
    def _first_documents(self) -> np.ndarray:
        counts = [shard["documents"] for shard in self.shards]
        return np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))

    def shard(self, key: int | str) -> ShardReader:
        """The reader of a shard, by position or name (mapped once, then reused)."""
        name = self.shards[key]["name"] if isinstance(key, int) else key
        if name not in self._readers:
            if name not in self.shard_names:
                raise KeyError(f"{self.folder} has no shard {name!r}")
            for suffix in (BIN, IDX, MASK) if self.masked else (BIN, IDX):
                self.local_file(name + suffix)
            self._readers[name] = ShardReader(self._local_stem(name))
        return self._readers[name]

    def document(self, index: int) -> np.ndarray:
        """Tokens of document `index` counted across shards in order."""
        if not 0 <= index < self.n_documents:
            raise IndexError(f"document {index} out of range ({self.n_documents} documents)")
        position = int(np.searchsorted(self._first_documents, index, side="right")) - 1
        return self.shard(position).document(index - int(self._first_documents[position]))

    def meta_urls(self) -> list[str]:
        """URLs of every shard's metadata Parquet, in shard order."""
        return [join_url(self.folder, name + META) for name in self.shard_names]

    @property
    def tokenizer_spec(self) -> str:
        """Where the tokenizer that made the shards loads from: the copy saved beside them,
        else the spec it was given (load it with `mixplane.tokenize.dataset_tokenizer`)."""
        info = self.tokenizer_info
        saved = info.get("file")
        return join_url(self.folder, saved) if saved else info["spec"]

    def local_file(self, name: str) -> str:
        """A local path of one of the dataset's files (copied into the cache if remote)."""
        url = join_url(self.folder, name)
        if is_local(url):
            return local_path(url)
        # Cached under the folder URL's hash, keeping file names so a shard's files sit together.
        cached = os.path.join(self.cache_dir, xxhash.xxh3_64_hexdigest(self.folder.encode()), name)
        fs, path = url_filesystem(url, self.storage_options)
        if not os.path.exists(cached) or os.path.getsize(cached) != fs.size(path):
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            partial = f"{cached}.{os.getpid()}.partial"
            fs.get_file(path, partial)
            os.replace(partial, cached)
        return cached

    def _local_stem(self, name: str) -> str:
        return self.local_file(name + BIN)[: -len(BIN)]

    def verify(self) -> None:
        """Check every shard file (and the saved tokenizer) against the manifest's hashes.

        Raises `MixplaneError` naming the first shard whose content changed.
        """
        for record in self.shards:
            name = record["name"]
            for key, suffix in FILE_SUFFIXES.items():
                if key in record["files"]:
                    self.local_file(name + suffix)
            stem = self._local_stem(name)
            verify_files(stem, self.manifest)
            ShardReader(stem).check_offsets()
        saved = self.tokenizer_info.get("file")
        if saved:
            expected = next(o for o in self.manifest["outputs"] if o["path"] == saved)
            _, digest = file_digest(join_url(self.folder, saved), self.storage_options)
            if digest != expected["hash"]:
                raise MixplaneError(f"{self.folder}: {saved} does not match the manifest")
