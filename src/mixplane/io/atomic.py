"""Atomic writes: a file appears under its final name only once it is complete.

Every byte written goes through a `HashingWriter`, so a file's size and content hash are
known when it is written, without reading it back (a second download for object storage).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import xxhash

from mixplane.io.retry import Retry
from mixplane.io.urls import url_filesystem


def is_local(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def local_path(url: str) -> str:
    return url[len("file://") :] if url.startswith("file://") else url


class HashingWriter:
    """A binary file handle that counts and hashes the bytes written through it.

    Example:
        >>> import io
        >>> writer = HashingWriter(io.BytesIO())
        >>> writer.write(b"hello")
        5
        >>> writer.size, writer.fingerprint
        (5, 'xxh3_128:b5e9c1ad071b3e7fc779cfaa5e523818')
    """

    def __init__(self, handle: IO[bytes]):
        self._handle = handle
        self._hash = xxhash.xxh3_128()
        self.size = 0

    def write(self, data) -> int:
        self._hash.update(data)
        self.size += memoryview(data).nbytes
        return self._handle.write(data)

    def tell(self) -> int:
        return self.size

    @property
    def fingerprint(self) -> str:
        """`xxh3_128:HEX` of everything written so far (as `manifest.file_digest` gives)."""
        return f"xxh3_128:{self._hash.hexdigest()}"

    def __getattr__(self, name: str) -> Any:  # flush, closed, fileno... of the real handle
        return getattr(self._handle, name)


TEMPORARY_SUFFIX = ".tmp"


def remove_stale_temporaries(folder: str) -> int:
    """Delete the hidden temporaries a killed writer left under a local output `folder`
    (`atomic_open` renames or removes its own, but not after SIGKILL); returns how many.
    Call it before a run resumes in the folder, never while another run writes there.
    Remote folders have none: their temporaries are on local disk."""
    if not is_local(folder) or not os.path.isdir(local_path(folder)):
        return 0
    removed = 0
    for root, _, names in os.walk(local_path(folder)):
        for name in names:
            if name.startswith(".") and name.endswith(TEMPORARY_SUFFIX):
                os.remove(os.path.join(root, name))
                removed += 1
    return removed


@contextmanager
def atomic_open(url: str, storage_options: dict[str, Any] | None = None) -> Iterator[HashingWriter]:
    """Open `url` for binary writing; it appears only if the block finishes without error.

    Local files are written under a hidden temporary name and renamed; remote ones are
    written to a local temporary file and uploaded whole once the block ends. The handle
    knows the size and hash of what was written (also after the block).
    """
    if is_local(url):
        path = local_path(url)
        folder, name = os.path.split(path)
        os.makedirs(folder or ".", exist_ok=True)
        temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex[:8]}{TEMPORARY_SUFFIX}")
        try:
            with open(temporary, "wb") as handle:
                yield HashingWriter(handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
    else:
        # Staged on local disk, then uploaded whole: an upload is retried as a unit, and
        # the object appears only once complete.
        handle, staged = tempfile.mkstemp(prefix="mixplane-upload-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as raw:
                yield HashingWriter(raw)
            upload(staged, url, storage_options)
        finally:
            if os.path.exists(staged):
                os.remove(staged)


def upload(local: str, url: str, storage_options: dict[str, Any] | None = None) -> None:
    """Copy a finished local file to `url` on object storage, retried with backoff on
    transient failures (5xx, resets, timeouts)."""
    fs, path = url_filesystem(url, storage_options)
    Retry().call(lambda: fs.put_file(local, path), what=url)


def write_bytes(url: str, data: bytes, storage_options: dict[str, Any] | None = None) -> None:
    """Write a whole file atomically."""
    with atomic_open(url, storage_options) as handle:
        handle.write(data)


def join_url(base: str, *parts: str) -> str:
    """Join URL path parts with '/', keeping the scheme of `base`."""
    return "/".join([base.rstrip("/"), *parts])
