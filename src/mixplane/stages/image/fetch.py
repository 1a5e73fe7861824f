"""Downloading the images of samples that have a URL and no image yet (`fetch_images`).

A batch is downloaded concurrently (asyncio + aiohttp), politely: at most `per_host`
requests in flight to one host, optionally `host_delay` seconds between request starts to a
host, a `timeout` per attempt, `retries` with exponential backoff on 5xx answers and
connection errors (never on 4xx answers or timeouts: a 404 stays a 404, and a slow host is
not waited for twice), redirects followed up to `max_redirects`. An answer whose
`X-Robots-Tag` has a disallowed directive (noai, noimageai, noindex, noimageindex, as
img2dataset honours) is dropped as `robots_noai`. An answer that is not an image (an HTML
page served with status 200, say: no image signature in its bytes and a Content-Type that is
no image's) is dropped as `fetch_not_image`. Each sample records `fetch_status` ("success"
or the failure kind), `http_status`, `fetch_error` and `content_type` (the answer's media
type); failures are dropped with reason `fetch_<kind>` (`fetch_http_404`, `fetch_timeout`,
`fetch_error`, ...) and these in the detail. The outcome depends only on the servers'
answers, never on timing or batch order.

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
from mixplane.media import IMAGE_EXTENSIONS
from mixplane.stages.base import Result, Stage

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
# Content-Types that say nothing about the bytes.
_UNTYPED = ("", "application/octet-stream", "binary/octet-stream", "application/unknown")
# X-Robots-Tag directives that take a value after a colon (not a user agent before it).
_VALUED_DIRECTIVES = ("unavailable_after", "max-snippet", "max-image-preview", "max-video-preview")


@dataclass(frozen=True, slots=True)
class Fetched:
    """What one download gave: `status` is "success" or the failure kind."""

    status: str
    http_status: int | None = None
    error: str | None = None
    data: bytes = b""
    content_type: str = ""  # the answer's media type, lowercased, without parameters
    extension: str = ""  # of the image, when it is one


class FetchImages(Stage):
    """Download `metadata["url"]` into `media` for samples without an image."""

    name: ClassVar[str] = "fetch_images"
    adds: ClassVar[tuple[str, ...]] = ("fetch_status", "http_status", "fetch_error", "content_type")

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
        meta = doc.metadata
        meta["fetch_status"] = fetched.status
        meta["http_status"] = fetched.http_status
        meta["fetch_error"] = fetched.error
        meta["content_type"] = fetched.content_type or None
        if fetched.status != "success":
            reason = "robots_noai" if fetched.status == "robots" else f"fetch_{fetched.status}"
            detail = {"url": meta["url"], "http_status": fetched.http_status}
            return Drop(
                reason, detail | {"error": fetched.error, "content_type": meta["content_type"]}
            )
        doc.media = {fetched.extension: fetched.data}
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
                return await self._answer(response, url)
        except aiohttp.TooManyRedirects as error:
            status = error.status or None
            return Fetched("too_many_redirects", status, f"over {self.max_redirects} redirects")
        except (asyncio.TimeoutError, TimeoutError):
            return Fetched("timeout", None, f"no complete answer within {self.timeout} s")
        except (aiohttp.ClientError, OSError, ValueError) as error:
            return Fetched("error", None, describe_error(error))

    async def _answer(self, response, url: str) -> Fetched:
        """What an answer gives: the image, or why not (with its status and media type)."""
        status = response.status
        kind = response.headers.get("Content-Type", "")
        media_type = kind.split(";")[0].strip().lower()[:200]

        def failed(what: str, error: str) -> Fetched:
            return Fetched(what, status, error, b"", media_type)

        if status >= 400:
            return failed(f"http_{status}", f"HTTP {status} {response.reason}")
        robots = self._robots(response.headers.getall("X-Robots-Tag", []))
        if robots:
            return failed("robots", f"X-Robots-Tag: {robots}")
        declared = response.content_length
        if declared is not None and declared > self.max_bytes:
            return failed("too_large", f"{declared} bytes declared, max_bytes={self.max_bytes}")
        data = bytearray()
        async for chunk in response.content.iter_chunked(1 << 16):
            data += chunk
            if len(data) > self.max_bytes:
                return failed("too_large", f"over max_bytes={self.max_bytes}")
        if not data:
            return failed("empty", "the answer has no body")
        ext = _extension(media_type, url, data)
        if ext is None:
            return failed(
                "not_image",
                f"not an image: Content-Type {kind[:200]!r}, {len(data)} bytes beginning "
                f"{bytes(data[:24])!r}",
            )
        return Fetched("success", status, None, bytes(data), media_type, ext)

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


def _extension(media_type: str, url: str, data: bytes) -> str | None:
    """The media extension of an answer: from the image signature of its bytes, else its
    Content-Type, else (an untyped answer) the URL's suffix; None when it is no image."""
    sniffed = next(iter(image_media(data) or {"bin": b""}))
    if sniffed != "bin":
        return sniffed
    if media_type in _CONTENT_TYPES:
        return _CONTENT_TYPES[media_type]
    suffix = posixpath.splitext(urlsplit(url).path)[1].lstrip(".").lower()
    if media_type.startswith("image/") or media_type in _UNTYPED:
        # Decoding judges formats without a signature here (or broken bytes).
        return suffix if suffix in IMAGE_EXTENSIONS else "bin"
    return None


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
