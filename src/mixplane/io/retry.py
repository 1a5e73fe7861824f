"""Retries with exponential backoff and full jitter for reads from object storage.

Object stores fail in passing: 5xx bursts, reset connections, timeouts, bodies cut short.
`Retry.call` runs an operation again after such a failure, waiting a random time up to
`base * 2^attempt` (capped), and counts what happened; a failure that retrying cannot fix
(not found, access denied, a bad request) is raised at once.

Example:
    >>> retry = Retry(attempts=5, base_seconds=0.2)
    >>> retry.call(lambda: fs.cat_file(path), what=path)  # doctest: +SKIP
    >>> retry.counters  # doctest: +SKIP
    {'attempts': 3, 'retries': 2, 'retried': {'ServerError 503': 2}}
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mixplane.errors import InputError

T = TypeVar("T")

# Exception class names (anywhere in an exception's type hierarchy) that mean "try again":
# botocore's and aiohttp's transport errors, named so no client library has to be imported.
TRANSIENT_NAMES = {
    "ConnectionError",
    "ConnectionClosedError",
    "EndpointConnectionError",
    "ReadTimeoutError",
    "ConnectTimeoutError",
    "ResponseStreamingError",
    "IncompleteReadError",
    "IncompleteRead",
    "ProtocolError",
    "ClientPayloadError",
    "ServerDisconnectedError",
    "ClientConnectionError",
    "ClientOSError",
    "FSTimeoutError",
    "TimeoutError",
    "FlexibleChecksumError",  # the client's own check of a body that arrived corrupted
    "ChecksumError",
}
PERMANENT = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)


class CorruptRead(Exception):
    """Bytes that arrived but are not what the manifest says: short, long or another hash."""


def read_exact(fs, path: str, start: int, end: int) -> bytes:
    """Bytes `[start, end)` of a file in one ranged request; a short body is a `CorruptRead`
    (so it is retried)."""
    data = fs.cat_file(path, start=start, end=end)
    if len(data) != end - start:
        raise CorruptRead(f"bytes {start}-{end}: {len(data)} arrived instead of {end - start}")
    return data


def read_whole(fs, path: str) -> bytes:
    """A whole file in one request. (s3fs sizes a plain whole-file read with a HEAD first, to
    split large files into parallel parts; an open-ended range skips that round trip. An
    empty object has no byte to range over, so it is read the plain way.)"""
    try:
        return fs.cat_file(path, start=0)
    except OSError as error:
        if 416 not in (status_of(error), status_of(error.__cause__ or error)):
            raise
        return fs.cat_file(path)


def status_of(error: BaseException) -> int | None:
    """The HTTP status of a client error, when it carries one (botocore's, aiohttp's)."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(status, int):
            return status
    status = getattr(error, "status", None) or getattr(error, "code", None)
    return status if isinstance(status, int) else None


def is_transient(error: BaseException) -> bool:
    """Whether retrying may help: server errors, throttling, transport failures, corrupt or
    short reads. Not found, access denied and other client errors are final."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, CorruptRead):
            return True
        status = status_of(error)
        if status is not None:
            return status >= 500 or status in (408, 429)
        if isinstance(error, PERMANENT):
            return False
        names = {cls.__name__ for cls in type(error).__mro__}
        if names & TRANSIENT_NAMES or isinstance(error, (ConnectionError, TimeoutError)):
            return True
        if isinstance(error, OSError) and error.errno is None:
            return True  # s3fs and aiohttp wrap transport failures in bare OSErrors
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return False


def describe(error: BaseException) -> str:
    status = status_of(error)
    name = type(error).__name__
    return f"{name} {status}" if status is not None else name


@dataclass
class Retry:
    """How to retry a remote read: `attempts` in all, waits drawn uniformly from zero to
    `base_seconds * 2^n`, at most `max_seconds`. Counters are shared by the threads of a
    process."""

    attempts: int = 6
    base_seconds: float = 0.1
    max_seconds: float = 10.0
    counters: dict[str, Any] = field(
        default_factory=lambda: {"attempts": 0, "retries": 0, "retried": {}}
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def wait_seconds(self, attempt: int) -> float:
        return random.uniform(0, min(self.max_seconds, self.base_seconds * 2**attempt))

    def call(self, operation: Callable[[], T], what: str) -> T:
        """`operation()`, retried on transient failures; after the last attempt (or a
        permanent failure) an `InputError` naming `what` and the last problem."""
        for attempt in range(self.attempts):
            self.count("attempts")
            try:
                return operation()
            except Exception as error:  # noqa: BLE001 - classified just below
                if not is_transient(error):
                    if isinstance(error, FileNotFoundError):
                        raise InputError(f"{what}: not found") from error
                    raise
                if attempt + 1 == self.attempts:
                    raise InputError(
                        f"{what}: {error or describe(error)} "
                        f"(gave up after {self.attempts} attempts)"
                    ) from error
                self.count("retries", describe(error))
                time.sleep(self.wait_seconds(attempt))
        raise AssertionError("unreachable")

    def count(self, key: str, reason: str | None = None) -> None:
        with self._lock:
            self.counters[key] += 1
            if reason is not None:
                retried = self.counters["retried"]
                retried[reason] = retried.get(reason, 0) + 1
