"""Downloading the images of samples that have a URL and no image yet (`fetch_images`).

A batch is downloaded concurrently (asyncio + aiohttp), politely: at most `per_host`
requests in flight to one host, optionally `host_delay` seconds between request starts to a
host, a `timeout` per attempt, `retries` with exponential backoff on 5xx answers and
connection errors (never on 4xx answers or timeouts: a 404 stays a 404, and a slow host is
not waited for twice), redirects followed up to `max_redirects`. An answer whose
`X-Robots-Tag` has a disallowed directive (noai, noimageai, noindex, noimageindex, as
img2dataset honours) is dropped as `robots_noai`. Each sample records `fetch_status`
("success" or the failure kind), `http_status` and `fetch_error`; failures are dropped with
reason `fetch_<kind>` (`fetch_http_404`, `fetch_timeout`, `fetch_error`, ...). The outcome
depends only on the servers' answers, never on timing or batch order.

Example (pipeline YAML):
    stages:
      - fetch_images: {timeout: 10, retries: 2, per_host: 4, user_agent: "mybot/1.0"}
      - decode_image: {}
"""

from __future__ import annotations

import asyncio
import posixpath
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import urlsplit

from pydantic import Field

from mixplane.document import Document, Drop
from mixplane.error_text import describe_error
from mixplane.io.readers.base import image_media
from mixplane.process.stage import Result, Stage
from mixplane.stages.image.media import IMAGE_EXTENSIONS

_CONTENT_TYPES = {
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/pjpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
    "image/gif": "gif",
    "image/bmp": "bmp",
    "image/x-ms-bmp": "bmp",
    "image/tiff": "tiff",
}
# X-Robots-Tag directives that take a value after a colon (not a user agent before it).
_VALUED_DIRECTIVES = ("unavailable_after", "max-snippet", "max-image-preview", "max-video-preview")


@dataclass(frozen=True, slots=True)
class Fetched:
    """What one download gave: `status` is "success" or the failure kind."""

    status: str
    http_status: int | None = None
    error: str | None = None
    data: bytes = b""
    content_type: str = ""


class FetchImages(Stage):
    """Download `metadata["url"]` into `media` for samples without an image."""

    name: ClassVar[str] = "fetch_images"
    adds: ClassVar[tuple[str, ...]] = ("fetch_status", "http_status", "fetch_error")

    timeout: float = Field(10.0, gt=0, description="seconds per attempt (connect to last byte)")
    retries: int = Field(2, ge=0, description="retries after a 5xx answer or connection error")
    backoff: float = Field(1.0, ge=0, description="first retry waits this long, then doubles")
    concurrency: int = Field(64, ge=1, description="requests in flight in all")
    per_host: int = Field(4, ge=1, description="requests in flight to one host")
    host_delay: float = Field(0.0, ge=0, description="seconds between request starts to a host")
    user_agent: str = "mixplane-fetch/1.0"
    user_agent_token: str = Field(
        "mixplane", description="name X-Robots-Tag lines addressed to a user agent must match"
    )
    disallowed: list[str] = Field(
        default_factory=lambda: ["noai", "noimageai", "noindex", "noimageindex"],
        description="X-Robots-Tag directives that exclude the image",
    )
    max_redirects: int = Field(5, ge=0)
    max_bytes: int = Field(20 << 20, gt=0, description="larger images are dropped")

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        wanted = [i for i, doc in enumerate(docs) if _needs_fetch(doc)]
        results: list[Result] = list(docs)
        if not wanted:
            return results
        urls = [str(docs[i].metadata["url"]) for i in wanted]
        for i, fetched in zip(wanted, _run(self._fetch_all(urls)), strict=True):
            results[i] = self._outcome(docs[i], fetched)
        return results

    def _outcome(self, doc: Document, fetched: Fetched) -> Result:
        doc.metadata["fetch_status"] = fetched.status
        doc.metadata["http_status"] = fetched.http_status
        doc.metadata["fetch_error"] = fetched.error
        if fetched.status != "success":
            reason = "robots_noai" if fetched.status == "robots" else f"fetch_{fetched.status}"
            detail = {"url": doc.metadata["url"], "http_status": fetched.http_status}
            return Drop(reason, detail | {"error": fetched.error})
        ext = _extension(fetched.content_type, str(doc.metadata["url"]), fetched.data)
        doc.media = {ext: fetched.data}
        return doc

    async def _fetch_all(self, urls: list[str]) -> list[Fetched]:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=self.timeout)
        connector = aiohttp.TCPConnector(limit=self.concurrency, limit_per_host=self.per_host)
        headers = {"User-Agent": self.user_agent}
        hosts = _Hosts(self.per_host, self.host_delay)
        async with aiohttp.ClientSession(
            timeout=timeout, connector=connector, headers=headers
        ) as session:
            return list(await asyncio.gather(*(self._fetch(session, hosts, u) for u in urls)))

    async def _fetch(self, session, hosts: _Hosts, url: str) -> Fetched:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return Fetched("bad_url", error=f"not an http(s) URL: {url[:200]!r}")
        attempt = 0
        while True:
            async with hosts.slot(parts.netloc.lower()):
                fetched = await self._attempt(session, url)
            transient = fetched.status == "error" or (
                fetched.http_status is not None and fetched.http_status >= 500
            )
            if not transient or attempt >= self.retries:
                return fetched
            await asyncio.sleep(self.backoff * 2**attempt)
            attempt += 1

    async def _attempt(self, session, url: str) -> Fetched:
        import aiohttp

        try:
            async with session.get(url, max_redirects=self.max_redirects) as response:
                status = response.status
                if status >= 400:
                    return Fetched(f"http_{status}", status, f"HTTP {status} {response.reason}")
                robots = self._robots(response.headers.getall("X-Robots-Tag", []))
                if robots:
                    return Fetched("robots", status, f"X-Robots-Tag: {robots}")
                declared = response.content_length
                if declared is not None and declared > self.max_bytes:
                    error = f"{declared} bytes declared, max_bytes={self.max_bytes}"
                    return Fetched("too_large", status, error)
                data = bytearray()
                async for chunk in response.content.iter_chunked(1 << 16):
                    data += chunk
                    if len(data) > self.max_bytes:
                        error = f"over max_bytes={self.max_bytes}"
                        return Fetched("too_large", status, error)
                if not data:
                    return Fetched("empty", status, "the answer has no body")
                return Fetched("success", status, None, bytes(data), response.content_type)
        except aiohttp.TooManyRedirects as error:
            status = error.status or None
            return Fetched("too_many_redirects", status, f"over {self.max_redirects} redirects")
        except (asyncio.TimeoutError, TimeoutError):
            return Fetched("timeout", None, f"no complete answer within {self.timeout} s")
        except (aiohttp.ClientError, OSError, ValueError) as error:
            return Fetched("error", None, describe_error(error))

    def _robots(self, values: list[str]) -> str | None:
        """The disallowed directives an X-Robots-Tag addresses to us, or None."""
        disallowed = {name.lower() for name in self.disallowed}
        found = []
        for value in values:
            head, colon, rest = value.partition(":")
            agent = head.strip().lower()
            addressed = colon and agent and " " not in agent and "," not in agent
            if addressed and agent not in _VALUED_DIRECTIVES:
                if agent not in (self.user_agent_token.lower(), "*"):
                    continue  # addressed to another user agent
                value = rest
            found += [
                d.strip().lower() for d in value.split(",") if d.strip().lower() in disallowed
            ]
        return ", ".join(sorted(set(found))) or None


class _Hosts:
    """Per-host politeness: a limit on requests in flight and a delay between starts."""

    def __init__(self, per_host: int, delay: float):
        self.per_host = per_host
        self.delay = delay
        self.slots: dict[str, asyncio.Semaphore] = defaultdict(lambda: asyncio.Semaphore(per_host))
        self.locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self.next_start: dict[str, float] = {}

    def slot(self, host: str) -> _Slot:
        return _Slot(self, host)


class _Slot:
    def __init__(self, hosts: _Hosts, host: str):
        self.hosts, self.host = hosts, host

    async def __aenter__(self) -> None:
        await self.hosts.slots[self.host].acquire()
        if self.hosts.delay:
            async with self.hosts.locks[self.host]:
                wait = self.hosts.next_start.get(self.host, 0.0) - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                self.hosts.next_start[self.host] = time.monotonic() + self.hosts.delay

    async def __aexit__(self, *exc) -> None:
        self.hosts.slots[self.host].release()


def _needs_fetch(doc: Document) -> bool:
    return not doc.media and bool(doc.metadata.get("url"))


def _extension(content_type: str, url: str, data: bytes) -> str:
    """The media extension: from the Content-Type, else the URL's suffix, else the bytes."""
    if content_type.lower() in _CONTENT_TYPES:
        return _CONTENT_TYPES[content_type.lower()]
    suffix = posixpath.splitext(urlsplit(url).path)[1].lstrip(".").lower()
    if suffix in IMAGE_EXTENSIONS:
        return suffix
    return next(iter(image_media(data) or {"bin": b""}))


def _run(coroutine):
    """Run a coroutine to completion, also from a thread whose event loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: list = []

    def run() -> None:
        try:
            box.append(asyncio.run(coroutine))
        except BaseException as error:  # handed to the caller's thread
            box.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]
