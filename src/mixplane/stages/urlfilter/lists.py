"""Reading the entries of a list file: one entry a line, `#` comments, blank lines ignored.

A line whose first non-blank character is `#` is a comment, and so is anything after a `#`
that follows a blank (`ads.example.com  # added in May`); a `#` inside an entry (a URL's
fragment) is kept. Files may be gzip- or zstd-compressed, whatever their name; any fsspec URL
works.

Example:
    >>> parse_entries("# domains\\nexample.com\\n\\nads.example.org  # tracker\\n")
    ['example.com', 'ads.example.org']
"""

from __future__ import annotations

import gzip
import re
import zlib
from typing import Any

import zstandard

from mixplane.errors import ConfigError
from mixplane.io.urls import open_forward, url_filesystem

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_TRAILING_COMMENT = re.compile(r"\s#.*\Z")


def parse_entries(text: str) -> list[str]:
    """The entries of a list's text, in file order."""
    entries = []
    for line in text.splitlines():
        if "#" in line:
            line = _TRAILING_COMMENT.sub("", line)
        line = line.strip()
        if line and not line.startswith("#"):
            entries.append(line)
    return entries


def check_list_exists(path: str, storage_options: dict[str, Any] | None) -> None:
    """Raise ValueError naming `path` when there is no such file (called at config time)."""
    fs, local = url_filesystem(path, storage_options)
    if not fs.isfile(local):
        raise ValueError(f"list file {path!r} not found")


def read_entries(path: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """The entries of the list file at `path`, decompressed if it is gzip."""
    return parse_entries(read_list(path, storage_options).decode("utf-8"))


def read_list(path: str, storage_options: dict[str, Any] | None = None) -> bytes:
    """The bytes of the list file at `path` (UTF-8, checked), decompressed if it is gzip."""
    return decoded(read_stored(path, storage_options), path)


def read_stored(path: str, storage_options: dict[str, Any] | None = None) -> bytes:
    """The bytes of the list file at `path` as stored (maybe compressed)."""
    try:
        fs, local = url_filesystem(path, storage_options)
        with open_forward(fs, local) as handle:
            return handle.read()
    except FileNotFoundError:
        raise ConfigError(f"list file {path}: not found") from None
    except OSError as error:
        raise ConfigError(f"list file {path}: cannot read: {error}") from None


def decoded(stored: bytes, path: str) -> bytes:
    """A list file's stored bytes, decompressed when they are gzip or zstd (whatever the
    file's name), checked to be UTF-8."""
    try:
        if stored.startswith(_GZIP_MAGIC):
            raw = gzip.decompress(stored)
        elif stored.startswith(_ZSTD_MAGIC):
            raw = zstandard.ZstdDecompressor().decompressobj().decompress(stored)
        else:
            raw = stored
        raw.decode("utf-8")
        return raw
    except (OSError, EOFError, zlib.error, zstandard.ZstdError, UnicodeDecodeError) as error:
        raise ConfigError(f"list file {path}: cannot read: {error}") from None
