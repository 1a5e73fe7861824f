"""URL expansion (braces, globs) and opening files with compression chosen by suffix."""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import zstandard

from mixplane.errors import InputError

_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")
_GLOB_CHARS = set("*?[")
# Requests in flight to S3 through one client: a batch's pieces read by ranges are dozens of
# small requests, latency-bound (botocore's pool holds 10 connections unless told otherwise).
S3_CONNECTIONS = 64


def expand_braces(pattern: str) -> list[str]:
    """Expand shell-style braces: alternatives `{a,b}` and zero-padded ranges `{000..099}`.

    Example:
        >>> expand_braces("shard-{00..02}.jsonl")
        ['shard-00.jsonl', 'shard-01.jsonl', 'shard-02.jsonl']
        >>> expand_braces("{web,wiki}/*.html")
        ['web/*.html', 'wiki/*.html']
    """
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth = 0
    for end in range(start, len(pattern)):
        if pattern[end] == "{":
            depth += 1
        elif pattern[end] == "}":
            depth -= 1
            if depth == 0:
                break
    else:
        raise InputError(f"unbalanced '{{' in input pattern {pattern!r}")
    head, body, tail = pattern[:start], pattern[start + 1 : end], pattern[end + 1 :]
    options = _brace_options(body, pattern)
    return [expanded for option in options for expanded in expand_braces(head + option + tail)]


def _brace_options(body: str, pattern: str) -> list[str]:
    match = _RANGE.match(body)
    if match:
        first, last = match.groups()
        lo, hi = int(first), int(last)
        width = len(first) if first.lstrip("-").startswith("0") and len(first) > 1 else 0
        step = 1 if hi >= lo else -1
        return [str(n).zfill(width) for n in range(lo, hi + step, step)]
    parts, depth, current = [], 0, []
    for char in body:
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += char == "{"
        depth -= char == "}"
        current.append(char)
    parts.append("".join(current))
    if len(parts) == 1:
        raise InputError(f"braces in {pattern!r} need a ',' list or a 'a..b' range")
    return parts


def url_filesystem(url: str, storage_options: dict[str, Any] | None = None):
    """Return `(filesystem, path)` for a URL (for S3, a client allowing `S3_CONNECTIONS`
    requests at once unless the options set its pool size)."""
    options = storage_options or {}
    if url.startswith(("s3://", "s3a://")):
        config = dict(options.get("config_kwargs") or {})
        config.setdefault("max_pool_connections", S3_CONNECTIONS)
        options = dict(options, config_kwargs=config)
    import fsspec  # imported when a URL is first opened: a tenth of a second to start

    fs, path = fsspec.core.url_to_fs(url, **options)
    return fs, path


def _unstrip(fs, path: str) -> str:
    """Turn a filesystem path back into a URL the user would recognise."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol in ("file", "local"):
        return path
    return fs.unstrip_protocol(path)


def expand_inputs(
    patterns: str | list[str], storage_options: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """Expand braces and globs; return sorted `(url, pattern_root)` pairs, one per file.

    `pattern_root` is the static folder before the first wildcard, used to name records by
    their place relative to it. A pattern that matches nothing is an error.
    """
    if isinstance(patterns, str):
        patterns = [patterns]
    found: dict[str, str] = {}
    for pattern in patterns:
        for expanded in expand_braces(pattern):
            fs, path = url_filesystem(expanded, storage_options)
            if any(c in path for c in _GLOB_CHARS):
                matches = sorted(p for p in fs.glob(path) if not fs.isdir(p))
                root = _static_root(path)
            elif fs.isdir(path):
                # Skip hidden and bookkeeping entries (`_tasks/`, `_excluded/`, `.tmp` files).
                base = path.rstrip("/") + "/"
                matches = sorted(
                    p
                    for p in fs.find(path)
                    if not any(part.startswith((".", "_")) for part in p[len(base) :].split("/"))
                )
                root = path.rstrip("/")
            elif fs.exists(path):
                matches, root = [path], os.path.dirname(path)
            else:
                matches, root = [], ""
            if not matches:
                raise InputError(f"input {expanded!r} matches no file; check the path or glob")
            for match in matches:
                found.setdefault(_unstrip(fs, match), _unstrip(fs, root) if root else "")
    return sorted(found.items())


def _static_root(path: str) -> str:
    parts = path.split("/")
    static = []
    for part in parts:
        if any(c in part for c in _GLOB_CHARS):
            break
        static.append(part)
    return "/".join(static[:-1]) if len(static) == len(parts) else "/".join(static)


def compression_of(url: str) -> str | None:
    """The compression implied by a URL's suffix: 'gzip', 'zstd' or None."""
    lowered = url.lower()
    if lowered.endswith(".gz"):
        return "gzip"
    if lowered.endswith((".zst", ".zstd")):
        return "zstd"
    return None


def strip_compression(url: str) -> str:
    """The URL without its compression suffix (so `a.jsonl.zst` reads as `a.jsonl`)."""
    for suffix in (".gz", ".zst", ".zstd"):
        if url.lower().endswith(suffix):
            return url[: -len(suffix)]
    return url


def is_http(url: str) -> bool:
    """Whether `url` is read from a web server (which need not answer range requests)."""
    return url.lower().startswith(("http://", "https://"))


def open_forward(fs, path: str) -> IO[bytes]:
    """Open a file to read once from its start to its end. Over HTTP(S) that is one
    streamed GET: a server need not answer range requests (`python -m http.server` does
    not), and fsspec's default file asks for a range per block."""
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    if {"http", "https"} & set(protocols):
        return fs.open(path, "rb", block_size=0)
    return fs.open(path, "rb")


@contextmanager
def open_url(
    url: str, mode: str = "rb", storage_options: dict[str, Any] | None = None
) -> Iterator[IO[bytes]]:
    """Open a URL for binary reading (once through, see `open_forward`) or writing,
    decompressing or compressing by suffix."""
    if mode not in ("rb", "wb"):
        raise ValueError("open_url supports 'rb' and 'wb'")
    fs, path = url_filesystem(url, storage_options)
    raw_file = open_forward(fs, path) if mode == "rb" else fs.open(path, mode)
    with raw_file as raw, compressed(raw, url, mode) as stream:
        yield stream


@contextmanager
def compressed(raw: IO[bytes], url: str, mode: str = "rb") -> Iterator[IO[bytes]]:
    """Wrap an open binary file in the (de)compressor its URL's suffix names."""
    compression = compression_of(url)
    if compression is None:
        yield raw
    elif compression == "gzip":
        # mtime=0 and an empty name: the header must not depend on when or where it was written.
        with gzip.GzipFile(filename="", fileobj=raw, mode=mode, mtime=0) as stream:
            yield stream
    elif mode == "rb":
        with io.BufferedReader(_ZstdReader(raw), buffer_size=1 << 20) as stream:
            yield stream
    else:
        with zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as stream:
            yield stream


class _ZstdReader(io.RawIOBase):
    """Streaming zstd decompression that reports a truncated stream instead of ending quietly.

    Handles concatenated frames, as written by parallel compressors.
    """

    def __init__(self, raw: IO[bytes]):
        self._raw = raw
        self._decompressor = zstandard.ZstdDecompressor().decompressobj()
        self._pending = b""
        self._started = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            chunk = self._raw.read(1 << 20)
            if not chunk:
                if self._started and not self._decompressor.eof:
                    raise EOFError("compressed stream ended before the end of its zstd frame")
                return 0
            self._started = True
            self._pending = self._decompress(chunk)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def _decompress(self, chunk: bytes) -> bytes:
        output = []
        while chunk:
            if self._decompressor.eof:
                self._decompressor = zstandard.ZstdDecompressor().decompressobj()
            output.append(self._decompressor.decompress(chunk))
            chunk = self._decompressor.unused_data if self._decompressor.eof else b""
        return b"".join(output)
