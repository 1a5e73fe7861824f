"""An HTTP proxy on loopback that makes an object store flaky, slow or narrow, on purpose.

Put it in front of an S3-compatible endpoint (point `endpoint_url` at it) to rehearse what a
training job meets on real networks: 5xx bursts, reset connections, bodies cut mid-way,
slow bodies, corrupted bytes, refusals (`refuse`: 403, never in the default rotation, as
no retry helps), added latency and a bandwidth limit. Faults are injected
deterministically: every `every`-th request (GET by default) whose path matches `match` gets
the next kind of fault in `kinds`, so a test can say exactly what happened. A `Gate` holds
chosen downloads halfway until the test lets them go, `gets` counts each path's GETs,
`served` lists the size of each GET's body and `stored` the size of the last PUT, per path.

Example:
    >>> proxy = FlakyProxy("http://127.0.0.1:5000", Faults(every=3, match=r"\\.bin$"))
    >>> endpoint = proxy.start()  # doctest: +SKIP
    >>> options = {"client_kwargs": {"endpoint_url": endpoint}}  # doctest: +SKIP
    >>> proxy.counters  # doctest: +SKIP
    {'requests': 41, 'bytes': 90210, 'matched': 30, 'error': 3, 'reset': 2, 'cut': 2, 'slow': 2}
    >>> proxy.gets["/bucket/tokens/web/_manifest.json"]  # doctest: +SKIP
    1
    >>> proxy.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import http.client
import re
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

KINDS = ("error", "reset", "cut", "slow", "flip")  # the default rotation
KNOWN_KINDS = (*KINDS, "refuse")
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "host"}


@dataclass
class Faults:
    """What the proxy does to the traffic.

    `every`: one matching request in `every` gets a fault (0: none), its kind taken in turn
    from `kinds`; `methods`: the requests that may get one (GETs: reads; add PUT and POST
    to fail uploads); `burst`: an `error` fault answers that many consecutive matching
    requests with 503;
    `latency`: seconds added before every response; `bandwidth`: bytes per second over all
    response bodies (None: unlimited); `match`: a regex searched in the request target (the
    path and its query): only requests that match are touched (faults, latency and
    bandwidth alike).
    """

    every: int = 0
    kinds: tuple[str, ...] = KINDS
    burst: int = 1
    latency: float = 0.0
    bandwidth: float | None = None
    match: str = ""
    methods: tuple[str, ...] = ("GET",)

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(KNOWN_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {list(KNOWN_KINDS)}")


class Gate:
    """Holds the bodies of GET responses whose path matches `match` halfway, until `open()`:
    a test sees what other processes do while one is mid-download, or kills the one reading.

    Example:
        >>> gate = Gate(r"catalog\\.duckdb$")
        >>> proxy = FlakyProxy("http://127.0.0.1:5000", gate=gate)  # doctest: +SKIP
        >>> gate.wait_held(1)  # doctest: +SKIP
        >>> gate.open()
    """

    def __init__(self, match: str):
        self.match = match
        self.held = 0  # responses that reached the gate
        self._opened = threading.Event()
        self._changed = threading.Condition()

    def wait_held(self, count: int, timeout: float = 120.0) -> None:
        """Wait until `count` responses are (or were) held; TimeoutError if they never come."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.held >= count, timeout):
                raise TimeoutError(f"{self.held} of {count} responses reached the gate")

    def open(self) -> None:
        """Let every held response (and every later one) through."""
        self._opened.set()

    def hold(self) -> None:
        with self._changed:
            self.held += 1
            self._changed.notify_all()
        self._opened.wait()


class _Bucket:
    """A token bucket shared by all connections: `rate` bytes per second."""

    def __init__(self, rate: float):
        self.rate = rate
        self.lock = threading.Lock()
        self.free_at = time.monotonic()

    def take(self, size: int) -> None:
        with self.lock:
            now = time.monotonic()
            start = max(now, self.free_at)
            self.free_at = start + size / self.rate
            wait = self.free_at - now
        if wait > 0:
            time.sleep(wait)


class FlakyProxy:
    """A threaded HTTP/1.1 proxy to `upstream` that injects `faults`."""

    def __init__(
        self, upstream: str, faults: Faults | None = None, port: int = 0, gate: Gate | None = None
    ):
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.faults = faults or Faults()
        self.gate = gate
        self.port = port
        self.counters: dict[str, int] = {"requests": 0, "bytes": 0}
        # GETs per path (without the query: a presigned URL's signature differs each time),
        # to check how often each object was read.
        self.gets: Counter[str] = Counter()
        # The body size of every GET answered, per path: what each read of an object moved;
        # and of the last PUT, per path: the size of what was stored there.
        self.served: dict[str, list[int]] = {}
        self.stored: dict[str, int] = {}
        self._lock = threading.Lock()
        self._matched = 0
        self._burst_left = 0
        self._bucket = _Bucket(self.faults.bandwidth) if self.faults.bandwidth else None
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> str:
        """Serve on loopback in a background thread; returns the proxy's URL."""
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self.gate is not None:
            self.gate.open()  # no handler thread is left waiting
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _count(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self.counters[key] = self.counters.get(key, 0) + amount

    def fault_for(self, method: str, path: str) -> str | None:
        """The fault (or None) for the next request, in the deterministic order."""
        faults = self.faults
        self._count("requests")
        if method not in faults.methods or not faults.every or not re.search(faults.match, path):
            return None
        with self._lock:
            if self._burst_left:
                self._burst_left -= 1
                kind = "error"
            else:
                self._matched += 1
                if self._matched % faults.every:
                    return None
                kind = faults.kinds[(self._matched // faults.every - 1) % len(faults.kinds)]
                if kind == "error":
                    self._burst_left = faults.burst - 1
            self.counters[kind] = self.counters.get(kind, 0) + 1
        return kind


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: FlakyProxy

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
        pass

    def _forward(self) -> None:
        owner = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        touched = bool(re.search(owner.faults.match, self.path))
        if touched:
            owner._count("matched")
        if self.command == "GET":
            with owner._lock:
                owner.gets[urlsplit(self.path).path] += 1
        if self.command == "PUT":
            with owner._lock:
                owner.stored[urlsplit(self.path).path] = length
        fault = owner.fault_for(self.command, self.path)
        if owner.faults.latency and touched:
            time.sleep(owner.faults.latency)
        if fault == "reset":
            self._reset()
            return
        if fault in ("error", "refuse"):
            self._send_error(refuse=fault == "refuse")
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        headers["Host"] = "{}:{}".format(*owner.upstream)
        upstream = http.client.HTTPConnection(*owner.upstream, timeout=60)
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
        finally:
            upstream.close()
        self.send_response(response.status, response.reason)
        head = self.command == "HEAD"  # its Content-Length is the object's: passed through
        for key, value in response.getheaders():
            if key.lower() not in HOP_HEADERS and (head or key.lower() != "content-length"):
                self.send_header(key, value)
        if not head:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if head:
            return
        if self.command == "GET":
            with owner._lock:
                owner.served.setdefault(urlsplit(self.path).path, []).append(len(data))
        if fault == "flip" and data:
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]
        if fault == "cut":
            self._write(data[: len(data) // 2], limited=touched)
            self._reset()
            return
        gate = owner.gate
        if gate is not None and self.command == "GET" and re.search(gate.match, self.path):
            self._write(data[: len(data) // 2], limited=touched)
            gate.hold()
            data = data[len(data) // 2 :]
        self._write(data, slow=fault == "slow", limited=touched)

    def _write(self, data: bytes, slow: bool = False, limited: bool = True) -> None:
        owner = self.owner
        step = 64 * 1024
        for start in range(0, len(data), step):
            piece = data[start : start + step]
            if owner._bucket is not None and limited:
                owner._bucket.take(len(piece))
            if slow:
                time.sleep(0.02)
            self.wfile.write(piece)
            owner._count("bytes", len(piece))
        self.wfile.flush()

    def _send_error(self, refuse: bool = False) -> None:
        code, message = ("AccessDenied", "Access Denied") if refuse else ("SlowDown", "Slow Down")
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>"
        ).encode()
        self.send_response(403 if refuse else 503, message)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _reset(self) -> None:
        """Drop the connection with a TCP reset (SO_LINGER 0), as a crashed peer does."""
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward  # noqa: N815
