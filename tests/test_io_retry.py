"""Retries: transient failures are retried with counters, permanent ones raised at once."""

from __future__ import annotations

import errno

import pytest

from mixplane.errors import InputError
from mixplane.io.flaky_proxy import FlakyProxy
from mixplane.io.retry import CorruptRead, Retry, is_transient, read_whole


class Status(Exception):
    """An error carrying an HTTP status the way botocore's ClientError does."""

    def __init__(self, status: int):
        super().__init__(f"status {status}")
        self.response = {"ResponseMetadata": {"HTTPStatusCode": status}}


def failing(errors: list[BaseException], result: str = "done"):
    calls = []

    def operation() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return result

    return operation, calls


@pytest.mark.parametrize(
    "error, transient",
    [
        (Status(503), True),
        (Status(500), True),
        (Status(429), True),
        (Status(404), False),
        (Status(403), False),
        (ConnectionResetError(errno.ECONNRESET, "reset"), True),
        (TimeoutError("slow"), True),
        (CorruptRead("short"), True),
        (FileNotFoundError("gone"), False),
        (PermissionError("no"), False),
        (ValueError("a bug"), False),
        (OSError("wrapped transport failure"), True),
    ],
)
def test_what_is_worth_retrying(error, transient):
    assert is_transient(error) is transient


def test_a_cause_decides_for_a_wrapper():
    try:
        try:
            raise Status(503)
        except Status as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert is_transient(outer)


def test_transient_failures_are_retried_and_counted():
    retry = Retry(attempts=4, base_seconds=0.001)
    operation, calls = failing([Status(503), ConnectionResetError(), CorruptRead("short")])
    assert retry.call(operation, what="s3://b/x") == "done"
    assert len(calls) == 4
    assert retry.counters["attempts"] == 4 and retry.counters["retries"] == 3
    assert retry.counters["retried"] == {
        "Status 503": 1,
        "ConnectionResetError": 1,
        "CorruptRead": 1,
    }


def test_giving_up_names_what_and_why():
    retry = Retry(attempts=3, base_seconds=0.001)
    operation, calls = failing([Status(503)] * 5)
    with pytest.raises(InputError, match=r"s3://b/x: status 503 \(gave up after 3 attempts\)"):
        retry.call(operation, what="s3://b/x")
    assert len(calls) == 3


def test_permanent_failures_are_not_retried():
    retry = Retry(attempts=5, base_seconds=0.001)
    operation, calls = failing([FileNotFoundError("gone")])
    with pytest.raises(InputError, match="s3://b/x: not found"):
        retry.call(operation, what="s3://b/x")
    operation, calls = failing([ValueError("a bug")])
    with pytest.raises(ValueError):
        retry.call(operation, what="s3://b/x")
    assert len(calls) == 1


def test_waits_grow_and_stay_under_the_cap():
    retry = Retry(base_seconds=0.1, max_seconds=1.0)
    for attempt in range(10):
        wait = retry.wait_seconds(attempt)
        assert 0 <= wait <= min(1.0, 0.1 * 2**attempt)


def test_a_whole_object_is_read_in_one_request(s3_bucket):
    """Small files a cold start reads (metadata, manifests, checksums) cost one round trip
    each, not a HEAD and a GET; empty objects read too."""
    import s3fs

    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    fs.pipe(f"{bucket}/data", b"x" * 100_000)
    fs.pipe(f"{bucket}/empty", b"")
    proxy = FlakyProxy(options["endpoint_url"])
    with proxy as url:
        proxy_fs = s3fs.S3FileSystem(**dict(options, endpoint_url=url), skip_instance_cache=True)
        before = proxy.counters["requests"]
        assert read_whole(proxy_fs, f"{bucket}/data") == b"x" * 100_000
        assert proxy.counters["requests"] - before == 1
        assert read_whole(proxy_fs, f"{bucket}/empty") == b""
