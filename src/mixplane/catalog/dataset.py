"""Reading a dataset folder for registration: manifest, shards, counts, schema, fingerprint.

Two kinds of folders register: tokenized ones (`shard-*.bin/.idx/.meta.parquet` and a
`_manifest.json` of kind `tokenize`), and media ones (image-text or audio-text), the output
of a processing run with `output_format: webdataset` (`part-*.tar/.idx/.meta.parquet`, a
manifest of kind `process`; their `n_tokens` are 0). The metadata Parquet is the source of
truth for what can be queried, so registering checks that the shards on disk, their
document and token counts and the manifest all agree.

Example:
    >>> scan = scan_folder("out/tokens")  # doctest: +SKIP
    >>> scan.documents, scan.tokens, list(scan.schema)[:3]  # doctest: +SKIP
    (120000, 61234567, ['id', 'n_tokens', 'source'])
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson
import xxhash

from mixplane.catalog.engine import describe, engine_error, same_schema, sandbox, shard_counts
from mixplane.errors import InputError
from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.io.urls import url_filesystem
from mixplane.manifest import MANIFEST, read_json

META_SUFFIX = ".meta.parquet"
REQUIRED_COLUMNS = ("id", "n_tokens")
TOKENS, IMAGE_TEXT, AUDIO_TEXT = "tokens", "image_text", "audio_text"
# Kinds stored as media shards (tar + idx + meta.parquet): their documents hold no tokens.
MEDIA_KINDS = (IMAGE_TEXT, AUDIO_TEXT)
# The files of an image shard besides its metadata, which must be beside it.
IMAGE_FILES = (".tar", ".idx")


@dataclass(frozen=True)
class Shard:
    """One shard of a registered dataset: where its metadata is and what it holds."""

    stem: str
    documents: int
    tokens: int
    meta_size: int


@dataclass(frozen=True)
class FolderScan:
    """Everything registration records about a tokenized folder."""

    uri: str
    manifest: dict[str, Any]
    shards: tuple[Shard, ...]
    schema: dict[str, str]
    fingerprint: str
    uniform: bool  # every shard has the same columns and types

    @property
    def documents(self) -> int:
        return sum(shard.documents for shard in self.shards)

    @property
    def tokens(self) -> int:
        return sum(shard.tokens for shard in self.shards)

    def meta_urls(self) -> list[str]:
        return [join_url(self.uri, shard.stem + META_SUFFIX) for shard in self.shards]


def normalize_uri(folder: str) -> str:
    """Absolute local paths (so a catalog works from any directory); URLs unchanged."""
    if is_local(folder):
        return os.path.abspath(local_path(folder)).rstrip("/") or "/"
    return folder.rstrip("/")


def list_meta_files(uri: str, storage_options: dict[str, Any] | None) -> dict[str, int]:
    """Shard stem -> size of its `.meta.parquet`, for every shard in the folder."""
    return _meta_sizes(list_folder(uri, storage_options))


def list_folder(uri: str, storage_options: dict[str, Any] | None) -> dict[str, int]:
    """File name -> size, for everything in the folder (listed afresh)."""
    fs, path = url_filesystem(uri, storage_options)
    fs.invalidate_cache(path)  # object stores cache listings; sizes must be current
    try:
        entries = fs.ls(path, detail=True)
    except FileNotFoundError as error:
        raise InputError(f"{uri}: no such folder") from error
    return {
        posixpath.basename(entry["name"].rstrip("/")): int(entry.get("size") or 0)
        for entry in entries
    }


def _meta_sizes(files: dict[str, int]) -> dict[str, int]:
    found = {
        name[: -len(META_SUFFIX)]: size
        for name, size in files.items()
        if name.endswith(META_SUFFIX) and not name.startswith((".", "_"))
    }
    return dict(sorted(found.items()))


def dataset_kind(manifest: dict[str, Any]) -> str:
    """`image_text` or `audio_text` for the output of a processing run that wrote image or
    audio shards, else `tokens`.

    Example:
        >>> dataset_kind({"kind": "process", "config": {"output_format": "webdataset"}})
        'image_text'
        >>> dataset_kind({"kind": "process",
        ...               "config": {"output_format": "webdataset", "output_media": "audio"}})
        'audio_text'
        >>> dataset_kind({"kind": "tokenize"})
        'tokens'
    """
    config = manifest.get("config") or {}
    if manifest.get("kind") == "process" and config.get("output_format") == "webdataset":
        return AUDIO_TEXT if config.get("output_media") == "audio" else IMAGE_TEXT
    return TOKENS


def scan_folder(folder: str, storage_options: dict[str, Any] | None = None) -> FolderScan:
    """Read and cross-check a tokenized or image-text folder; raise `InputError` naming any
    inconsistency."""
    uri = normalize_uri(folder)
    files = list_folder(uri, storage_options)
    sizes = _meta_sizes(files)
    manifest = _read_manifest(uri, storage_options)
    if not sizes:
        raise InputError(f"{uri}: no shard metadata (*{META_SUFFIX}) in this dataset folder")
    recorded = manifest_shards(manifest)
    _check_same_shards(uri, list(sizes), recorded)
    if dataset_kind(manifest) in MEDIA_KINDS:
        _check_media_files(uri, list(sizes), files, dataset_kind(manifest))
    stems = list(sizes)
    urls = [join_url(uri, stem + META_SUFFIX) for stem in stems]
    connection = sandbox(urls, storage_options)
    try:
        uniform = same_schema(connection, urls)
        schema = describe(connection, urls)
        _check_columns(uri, schema)
        counts = shard_counts(connection, urls, union=not uniform)
    except duckdb.Error as error:
        raise engine_error(error, f"{uri}: cannot read shard metadata") from error
    finally:
        connection.close()
    shards = []
    for stem, (documents, tokens) in zip(stems, counts, strict=True):
        _check_counts(uri, stem, documents, tokens, recorded.get(stem, {}))
        shards.append(Shard(stem, documents, tokens, sizes[stem]))
    fingerprint = content_fingerprint(manifest, shards, schema)
    return FolderScan(uri, manifest, tuple(shards), schema, fingerprint, uniform)


def manifest_shards(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Shard stem -> the manifest's record of it (counts and file hashes).

    An image-text folder's manifest lists files, not shards: a shard's record is built from
    its three files' entries (documents = the records of its metadata file, no tokens).
    """
    if dataset_kind(manifest) in MEDIA_KINDS:
        return _image_shards(manifest)
    shards = {}
    for entry in manifest.get("shards") or []:
        stem = entry.get("stem") or entry.get("name")
        if stem:
            shards[str(stem)] = entry
    return shards


def _image_shards(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    shards: dict[str, dict[str, Any]] = {}
    for entry in manifest.get("outputs") or []:
        path = str(entry.get("path", ""))
        if "/" in path:
            continue  # _excluded/, _quarantine/
        for suffix, key in ((META_SUFFIX, "meta"), *((s, s[1:]) for s in IMAGE_FILES)):
            if path.endswith(suffix):
                stem = path[: -len(suffix)]
                record = shards.setdefault(stem, {"name": stem, "tokens": 0, "files": {}})
                record["files"][key] = {"size": entry.get("size"), "hash": entry.get("hash")}
                if key == "meta" and entry.get("records") is not None:
                    record["documents"] = int(entry["records"])
    return dict(sorted(shards.items()))


def _check_media_files(uri: str, stems: list[str], files: dict[str, int], kind: str) -> None:
    """Every media shard has its tar and index beside its metadata (`files`: the folder)."""
    what = "image" if kind == IMAGE_TEXT else "audio"
    for stem in stems:
        for suffix in IMAGE_FILES:
            if stem + suffix not in files:
                raise InputError(f"{uri}: {what} shard {stem} has no {stem}{suffix}")


def content_fingerprint(manifest: dict[str, Any], shards: list[Shard], schema: dict) -> str:
    """A hash of what the data is (shards, counts, file hashes, tokenizer, schema), not where.

    Registering a folder whose fingerprint matches the latest version is a no-op.
    """
    recorded = manifest_shards(manifest)
    content = {
        "tokenizer": manifest.get("tokenizer"),
        "schema": schema,
        "shards": [
            [shard.stem, shard.documents, shard.tokens, shard.meta_size, recorded.get(shard.stem)]
            for shard in shards
        ],
    }
    digest = xxhash.xxh3_128(orjson.dumps(content, option=orjson.OPT_SORT_KEYS))
    return f"xxh3_128:{digest.hexdigest()}"


def _read_manifest(uri: str, storage_options: dict[str, Any] | None) -> dict[str, Any]:
    url = join_url(uri, MANIFEST)
    fs, path = url_filesystem(url, storage_options)
    if not fs.exists(path):
        raise InputError(f"{url}: missing; register a folder written by `mixplane tokenize`")
    try:
        manifest = read_json(url, storage_options)
    except orjson.JSONDecodeError as error:
        raise InputError(f"{url}: not valid JSON ({error})") from error
    if not isinstance(manifest, dict):
        raise InputError(f"{url}: not a JSON object")
    if manifest.get("kind") == "tokenize" or dataset_kind(manifest) in MEDIA_KINDS:
        return manifest
    kind = manifest.get("kind")
    if kind == "process":
        raise InputError(
            f"{url}: kind is 'process', not 'tokenize': a processing run's documents; "
            "tokenize them to register them (image-text or audio-text data: process it with "
            "`output_format: webdataset`)"
        )
    raise InputError(
        f"{url}: kind is {kind!r}; only tokenized folders and image-text or audio-text processing "
        "outputs (output_format: webdataset) can be registered"
    )


def _check_same_shards(uri: str, on_disk: list[str], recorded: dict[str, Any]) -> None:
    if not recorded:
        return
    missing = sorted(set(recorded) - set(on_disk))
    extra = sorted(set(on_disk) - set(recorded))
    if missing:
        raise InputError(f"{uri}: shard {missing[0]} is in the manifest but has no metadata file")
    if extra:
        raise InputError(f"{uri}: shard {extra[0]} is on disk but not in the manifest")


def _check_columns(uri: str, schema: dict[str, str]) -> None:
    for column in REQUIRED_COLUMNS:
        if column not in schema:
            raise InputError(f"{uri}: shard metadata has no {column!r} column")
    if not schema["n_tokens"].upper().startswith(("BIGINT", "INTEGER", "UBIGINT", "UINTEGER")):
        raise InputError(f"{uri}: column n_tokens is {schema['n_tokens']}, expected an integer")


def _check_counts(uri: str, stem: str, documents: int, tokens: int, entry: dict) -> None:
    for key, actual in (("documents", documents), ("tokens", tokens)):
        expected = entry.get(key)
        if expected is not None and int(expected) != actual:
            raise InputError(
                f"{uri}: shard {stem} metadata has {actual:,} {key}, the manifest says "
                f"{int(expected):,}; the folder is inconsistent, write it again"
            )
