"""What a registered version's files are on disk or object storage: the names gc may remove.

A token shard is `STEM.bin`, `.idx`, `.meta.parquet` and, when present, `.sums` and `.mask`;
an image shard `STEM.tar`, `.idx`, `.meta.parquet`; a column added by `mixplane annotate`
one `STEM.parquet` per shard in its own folder. The folder's `_manifest.json`, `_stats.json`
and lineage files are not a version's files: gc never lists them, so a collected version's
folder still tells what existed.

Each file has an `identity`: for a local file its resolved path (symlinks followed, for
comparing only), for an object its URL. Two versions share a file when identities match; a
hard link is a name of its own, so one version's name can go while another keeps its own.

Example:
    >>> files = version_files(catalog.get("web@1"))  # doctest: +SKIP
    >>> sum(file.size for file in files), files[0].url  # doctest: +SKIP
    (81234, '/data/tok/shard-00000-000.bin')
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mixplane.catalog.dataset import IMAGE_FILES, MEDIA_KINDS, META_SUFFIX, list_folder
from mixplane.errors import InputError
from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.store.format import SUFFIXES

if TYPE_CHECKING:
    from mixplane.catalog.registry import DatasetVersion


@dataclass(frozen=True)
class VersionFile:
    """One file a version references: where it is, its size, and what it is (`identity`)."""

    url: str
    size: int
    identity: str


def shard_names(version: DatasetVersion) -> list[tuple[str, str]]:
    """Every `(folder, file name)` the version references, present or not, in shard order:
    its shards' files, then each added column's."""
    suffixes = (META_SUFFIX, *IMAGE_FILES) if version.kind in MEDIA_KINDS else SUFFIXES
    names = [(version.uri, stem + suffix) for stem in version.stems for suffix in suffixes]
    for column in version.added:
        names += [(column.folder, url.rsplit("/", 1)[-1]) for url in column.urls(version.stems)]
    return names


def version_files(
    version: DatasetVersion, storage_options: dict[str, Any] | None = None
) -> list[VersionFile]:
    """The files of `version` that exist now (optional ones it never had, or ones already
    gone, are left out), each folder listed once."""
    found: list[VersionFile] = []
    listings: dict[str, dict[str, int]] = {}
    for folder, name in shard_names(version):
        if is_local(folder):
            file = _local_file(os.path.join(local_path(folder), name))
        else:
            if folder not in listings:
                listings[folder] = _listing(folder, storage_options)
            size = listings[folder].get(name)
            url = join_url(folder, name)
            file = None if size is None else VersionFile(url, size, url)
        if file is not None:
            found.append(file)
    return found


def _local_file(path: str) -> VersionFile | None:
    try:
        stat = os.lstat(path)  # a symlink is a name of the folder; its target is not read
    except FileNotFoundError:
        return None
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:  # a dangling symlink: only the name is there
        size = stat.st_size
    return VersionFile(os.path.abspath(path), size, os.path.realpath(path))


def _listing(folder: str, storage_options: dict[str, Any] | None) -> dict[str, int]:
    try:
        return list_folder(folder, storage_options)
    except InputError:
        return {}  # the folder is gone: none of its files is there to remove
