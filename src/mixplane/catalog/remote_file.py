"""Registering into a catalog kept on object storage: a local copy, changed, put back.

DuckDB writes only local files, so `Catalog("s3://bucket/catalog.duckdb").register(...)`
downloads the catalog (when there is one), registers into the copy and uploads it when a
version was added. Object storage has no lock: before the upload the store is asked again for
the catalog's stamp (ETag, size), and a catalog another register changed meanwhile is left
as it is, with an error saying to run again. Registering is quick, so run one at a time.

Example:
    >>> with catalog_to_update("s3://bucket/catalog.duckdb", options) as copy:  # doctest: +SKIP
    ...     with Registry(copy.path, writable=True) as registry:
    ...         version, copy.changed = registry.add(scan, "web")
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mixplane.errors import MixplaneError
from mixplane.io.atomic import is_local, local_path, upload
from mixplane.io.urls import url_filesystem


@dataclass
class CatalogCopy:
    """The local copy's path; set `changed` when the block changed the catalog."""

    path: str
    changed: bool = False


@contextmanager
def catalog_to_update(url: str, storage_options: dict[str, Any] | None) -> Iterator[CatalogCopy]:
    """A local copy of the remote catalog `url` (a path where none exists yet), uploaded
    after the block if the block says it changed it."""
    fs, path = url_filesystem(url, storage_options)
    with tempfile.TemporaryDirectory(prefix="mixplane-catalog-") as folder:
        copy = CatalogCopy(os.path.join(folder, "catalog.duckdb"))
        before = _stamp(fs, path)
        if before is not None:
            fs.get_file(path, copy.path)
        yield copy
        if not copy.changed:
            return
        if _stamp(fs, path) != before:
            raise MixplaneError(
                f"{url} changed while this register ran (another register?); "
                "nothing was uploaded: run it again"
            )
        upload(copy.path, url, storage_options)


def _stamp(fs: Any, path: str) -> tuple | None:
    """What identifies the object's current content (None: there is none)."""
    fs.invalidate_cache(path)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        return None
    return info.get("size"), info.get("ETag") or info.get("etag"), info.get("LastModified")


@contextmanager
def catalog_file(
    catalog: str | os.PathLike, storage_options: dict[str, Any] | None, writable: bool = False
) -> Iterator[CatalogCopy]:
    """The catalog as a local file: a local catalog itself (its path; None when there is no
    file), a remote one as a copy, uploaded after the block when `writable` (refused if the
    catalog changed meanwhile).

    Example:
        >>> with catalog_file("catalog.duckdb", None) as found:
        ...     found.path is None  # no catalog here
        True
    """
    url = os.fspath(catalog)
    if is_local(url):
        path = local_path(url)
        yield CatalogCopy(path if writable or os.path.exists(path) else None)
        return
    with catalog_to_update(url, storage_options) as copy:
        exists = os.path.exists(copy.path)
        if not writable:
            yield CatalogCopy(copy.path if exists else None)
            return
        yield copy
        copy.changed = True
