"""Ranged GETs of S3 objects over plain HTTP connections, for whole-shard downloads.

Through s3fs a ranged GET costs about 3.5 CPU-seconds per GB (aiohttp gathers the body in
small pieces that botocore wraps and joins), taken from the interpreter of the process that
reads batches. Read with `http.client` straight into one buffer, it costs about 1.4. The
object's URL is presigned by the same s3fs client, so its credentials, endpoint and region
are the ones used; options this path cannot honour (proxies, extra request headers or
parameters, a client's own TLS settings) keep the s3fs path, and so does an answer it does
not expect (a redirect, a refusal): `PlainObject.read` then reads through s3fs for good.

Example:
    >>> read = range_reader("s3://bucket/tokens/shard-00000.bin", options)  # doctest: +SKIP
    >>> len(read(0, 1 << 20))  # doctest: +SKIP
    1048576
"""

from __future__ import annotations

# Imported now, not by a connection's first name lookup (`idna`) or TLS setup (`certifi`):
# a thread importing a module while a DataLoader forks its workers leaves that module's
# import lock held in them for good, and their own first import of it waits forever.
import encodings.idna  # noqa: F401
import functools
import http.client
import os
import ssl
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

try:
    import certifi
except ImportError:  # botocore's default bundle, when installed
    certifi = None

from mixplane.io.retry import CorruptRead, read_exact
from mixplane.io.urls import url_filesystem

# The storage options (and their client and config entries) this path honours as s3fs does.
PLAIN_OPTIONS = {"key", "secret", "token", "endpoint_url", "anon", "client_kwargs",
                 "config_kwargs", "skip_instance_cache", "use_listings_cache"}  # fmt: skip
PLAIN_CLIENT = {"region_name", "endpoint_url", "aws_access_key_id", "aws_secret_access_key"}
PLAIN_CONFIG = {"max_pool_connections", "connect_timeout", "read_timeout", "retries"}
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
PRESIGNED_SECONDS = 3600
TIMEOUT_SECONDS = 60.0


def plain_http_possible(url: str, storage_options: dict[str, Any] | None) -> bool:
    """Whether `url` can be read by plain HTTP exactly as s3fs would read it with these
    options: an `s3://` URL, no option beyond credentials, endpoint, region and pool sizes,
    no proxy in the environment."""
    if not url.startswith(("s3://", "s3a://")):
        return False
    options = storage_options or {}
    if set(options) - PLAIN_OPTIONS:
        return False
    if set(options.get("client_kwargs") or {}) - PLAIN_CLIENT:
        return False
    if set(options.get("config_kwargs") or {}) - PLAIN_CONFIG:
        return False
    return not any(os.environ.get(name) or os.environ.get(name.upper()) for name in PROXY_VARIABLES)


def range_reader(url: str, storage_options: dict[str, Any] | None) -> Callable[[int, int], Any]:
    """`read(start, end)` for byte ranges of the file at `url`: by plain HTTP when
    `plain_http_possible`, else through its fsspec filesystem (`read_exact`)."""
    fs, path = url_filesystem(url, storage_options)
    if plain_http_possible(url, storage_options):
        return PlainObject(fs, path).read
    return lambda start, end: read_exact(fs, path, start, end)


class HTTPStatusError(OSError):
    """An HTTP answer other than the bytes asked for (`status` says which)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class PlainObject:
    """One S3 object read by ranges over keep-alive HTTP connections (one per thread)."""

    def __init__(self, fs: Any, path: str):
        self.fs = fs
        self.path = path
        self.url = urlsplit(fs.url(path, expires=PRESIGNED_SECONDS))
        self.target = self.url.path + ("?" + self.url.query if self.url.query else "")
        self.fallback = False  # an unexpected answer: read through s3fs from then on

    def read(self, start: int, end: int) -> bytes | bytearray:
        """Bytes `[start, end)`; a short body is a `CorruptRead`, a server error an
        `HTTPStatusError` (both retried by `Retry`)."""
        if self.fallback:
            return read_exact(self.fs, self.path, start, end)
        connection = _connection(self.url.scheme, self.url.hostname or "", self.url.port)
        try:
            connection.request("GET", self.target, headers={"Range": f"bytes={start}-{end - 1}"})
            response = connection.getresponse()
            length = int(response.getheader("Content-Length") or -1)
            # 206 with the range asked for; 200 (a server that ignores ranges) from byte 0.
            ranged = response.status == 206 and length == end - start
            if ranged or (response.status == 200 and start == 0 and length >= end):
                data = _read_into(response, end - start, start)
                if response.length:  # not all of it was read
                    _drop(connection)
                return data
            body = response.read(2048)
            _drop(connection)
            if response.status >= 500 or response.status in (408, 429):
                raise HTTPStatusError(response.status, f"HTTP {response.status}: {body!r}")
            if response.status == 404:
                raise FileNotFoundError(f"{self.path}: HTTP 404 {body[:300]!r}")
        except BaseException:
            _drop(connection)
            raise
        self.fallback = True  # a redirect, a refusal, a range not honoured: s3fs knows more
        return read_exact(self.fs, self.path, start, end)


def _read_into(response: http.client.HTTPResponse, size: int, start: int) -> bytearray:
    """`size` bytes of a response body, read into one buffer."""
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        count = response.readinto(view[got:])
        if not count:
            raise CorruptRead(f"bytes {start}-{start + size}: {got} arrived instead of {size}")
        got += count
    return data


_local = threading.local()


def _forget_connections() -> None:
    """A forked process shares its parent's sockets: it opens its own connections."""
    global _local
    _local = threading.local()


os.register_at_fork(after_in_child=_forget_connections)


def _connection(scheme: str, host: str, port: int | None) -> http.client.HTTPConnection:
    """This thread's open connection to `host` (made on first use)."""
    pool = _local.__dict__.setdefault("pool", {})
    key = (scheme, host, port)
    found = pool.get(key)
    if found is None:
        if scheme == "https":
            found = http.client.HTTPSConnection(
                host, port, timeout=TIMEOUT_SECONDS, context=_tls_context()
            )
        else:
            found = http.client.HTTPConnection(host, port, timeout=TIMEOUT_SECONDS)
        pool[key] = found
    return found


def _drop(connection: http.client.HTTPConnection) -> None:
    """Close a connection left in an unknown state; the next read opens a new one."""
    connection.close()
    pool = _local.__dict__.get("pool", {})
    for key, value in list(pool.items()):
        if value is connection:
            del pool[key]


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The certificates botocore trusts: AWS_CA_BUNDLE, else certifi's, else the system's."""
    bundle = os.environ.get("AWS_CA_BUNDLE") or (certifi.where() if certifi else None)
    return ssl.create_default_context(cafile=bundle)
