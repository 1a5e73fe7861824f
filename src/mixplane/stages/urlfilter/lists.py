"""Reading the entries of a list file: one entry a line, `#` comments, blank lines ignored.

A line whose first non-blank character is `#` is a comment, and so is anything after a `#`
that follows a blank (`ads.example.com  # added in May`); a `#` inside an entry (a URL's
fragment) is kept. Files may be gzip-compressed, whatever their name; any fsspec URL works.

Example:
    >>> parse_entries("# domains\\nexample.com\\n\\nads.example.org  # tracker\\n")
    ['example.com', 'ads.example.org']
"""

from __future__ import annotations

import gzip
import re
import zlib
from typing import Any

from mixplane.errors import ConfigError
from mixplane.io.urls import open_url, url_filesystem

_GZIP_MAGIC = b"\x1f\x8b"
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
    try:
        with open_url(path, "rb", storage_options) as handle:
            raw = handle.read()
        if raw.startswith(_GZIP_MAGIC):  # compressed but not named .gz
            raw = gzip.decompress(raw)
        raw.decode("utf-8")
        return raw
    except FileNotFoundError:
        raise ConfigError(f"list file {path}: not found") from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
        raise ConfigError(f"list file {path}: cannot read: {error}") from None
