"""Atomic writes: a file appears under its final name only once it is complete."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from mixplane.io.urls import url_filesystem


def is_local(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def local_path(url: str) -> str:
    return url[len("file://") :] if url.startswith("file://") else url


@contextmanager
def atomic_open(url: str, storage_options: dict[str, Any] | None = None) -> Iterator[IO[bytes]]:
    """Open `url` for binary writing; it appears only if the block finishes without error.

    Local files are written under a hidden temporary name and renamed. Object stores make an
    upload visible only when it completes, so remote files are written in place.
    """
    if is_local(url):
        path = local_path(url)
        folder, name = os.path.split(path)
        os.makedirs(folder or ".", exist_ok=True)
        temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            with open(temporary, "wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
    else:
        fs, path = url_filesystem(url, storage_options)
        with fs.open(path, "wb") as handle:
            yield handle


def write_bytes(url: str, data: bytes, storage_options: dict[str, Any] | None = None) -> None:
    """Write a whole file atomically."""
    with atomic_open(url, storage_options) as handle:
        handle.write(data)


def join_url(base: str, *parts: str) -> str:
    """Join URL path parts with '/', keeping the scheme of `base`."""
    return "/".join([base.rstrip("/"), *parts])
