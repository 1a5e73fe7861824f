"""What every request passes before it is routed: its Host header, its token and the size of
its body.

- Host: a page on another site can make a browser send requests to the service under that
  site's name, once its DNS points at this machine (DNS rebinding); the browser then lets the
  page read the answers. So only the names the service is bound to are accepted (any IP
  address when it listens on all of them; `localhost` and the machine's own names), and those
  the operator adds (`--allowed-host`).
- Token: checked before routing, so a request without it learns nothing, not even which
  paths exist; only the dashboard's own files and the API's description are public.
- Body: counted as it arrives, whatever the Content-Length says or whether there is one (a
  chunked body has none); past the limit the answer is 413 and the rest is not kept.

Example:
    >>> hosts = allowed_hosts("127.0.0.1", ["data.example.org"])
    >>> host_allowed(b"localhost:8000", hosts), host_allowed(b"evil.example:8000", hosts)
    (True, False)
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Iterable

from starlette.responses import JSONResponse

from mixplane.serve.settings import is_loopback

MAX_BODY = 1 << 20  # bytes of a request body (a mixture, a metric sample)
TOKEN_HEADER = "X-Mixplane-Token"
# Paths without data: the dashboard's page and files, and the API's description.
PUBLIC = frozenset(["/", "/openapi.json", "/docs"])
PUBLIC_PREFIX = "/static/"
ANY_ADDRESS = "*address*"  # in a host set: any IP address is accepted
TOO_BIG, GONE = object(), object()


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names a service bound to `bound` answers to, plus `extra` (names, with or
    without a port: the port is not checked)."""
    names = {_normal(bound), *(host_name(name) for name in extra)}
    if bound in ("0.0.0.0", "::", ""):
        names |= {ANY_ADDRESS, "localhost", *_own_names()}
    elif is_loopback(bound):
        names |= {"localhost", "127.0.0.1", "::1"}
    else:
        names |= {*_own_names(), *_addresses(bound)}
    return frozenset(names)


def host_name(text: str) -> str:
    """The host of `name`, `name:port`, `[v6]` or `[v6]:port`, lower case, no final dot.

    Example:
        >>> host_name("Data.Example.org.:8000"), host_name("[::1]:8000"), host_name("::1")
        ('data.example.org', '::1', '::1')
    """
    text = text.strip()
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.rsplit(":", 1)[0]
    return _normal(text)


def host_allowed(header: bytes | None, hosts: frozenset[str]) -> bool:
    """Whether a Host header names one of `hosts` (from `allowed_hosts`)."""
    if not header:
        return False
    name = host_name(header.decode("latin-1"))
    if name in hosts:
        return True
    if ANY_ADDRESS in hosts:
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True
    return False


def token_matches(headers: dict[bytes, bytes], expected: str) -> bool:
    """`Authorization: Bearer TOKEN` or `X-Mixplane-Token: TOKEN`, compared in constant time."""
    given = headers.get(TOKEN_HEADER.lower().encode(), b"")
    scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
    if scheme.lower() == b"bearer":
        given = credentials.strip()
    return hmac.compare_digest(given, expected.encode())


class Guard:
    """A plain ASGI middleware that refuses, before routing: a Host header the service does
    not answer to (400), a request without the token when there is one (401), a body over
    `max_body` bytes (413). A body within the limit is handed on as it was received."""

    def __init__(self, app, hosts: frozenset[str], token: str | None, max_body: int = MAX_BODY):
        self.app = app
        self.hosts = hosts
        self.token = token
        self.max_body = max_body

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if not host_allowed(headers.get(b"host"), self.hosts):
            detail = "the Host header names no host this service answers to (see --allowed-host)"
            await JSONResponse({"detail": detail}, 400)(scope, receive, send)
            return
        if self.token and not _public(scope["path"]) and not token_matches(headers, self.token):
            await JSONResponse(
                {
                    "detail": "missing or wrong token: send `Authorization: Bearer TOKEN` "
                    "(in the dashboard: open it as /#token=TOKEN)"
                },
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )(scope, receive, send)
            return
        length = headers.get(b"content-length", b"0")
        declared = int(length) if length.isdigit() else self.max_body + 1
        body = await self._body(receive) if declared <= self.max_body else TOO_BIG
        if body is TOO_BIG:
            too_big = {"detail": f"request bodies are limited to {self.max_body:,} bytes"}
            await JSONResponse(too_big, 413, headers={"Connection": "close"})(scope, receive, send)
        elif body is not GONE:
            await self.app(scope, _replay(body, receive), send)

    async def _body(self, receive) -> bytes | object:
        """The whole body; `TOO_BIG` as soon as it passes the limit (the rest is not read),
        `GONE` if the client left before sending it all."""
        pieces, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return GONE
            size += len(message.get("body", b""))
            if size > self.max_body:
                return TOO_BIG
            pieces.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(pieces)


def _replay(body: bytes, receive):
    """A `receive` that gives the body read already, then whatever comes next (a
    disconnect)."""
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _public(path: str) -> bool:
    return path in PUBLIC or path.startswith(PUBLIC_PREFIX)


def _normal(name: str) -> str:
    return name.strip().lower().rstrip(".").strip("[]")


def _addresses(name: str) -> set[str]:
    """The addresses a bound host name stands for (none if it does not resolve)."""
    try:
        return {_normal(str(info[4][0])) for info in socket.getaddrinfo(name, None)}
    except (OSError, UnicodeError):
        return set()


def _own_names() -> list[str]:
    """This machine's host name and fully qualified name."""
    names = []
    for look_up in (socket.gethostname, socket.getfqdn):
        try:
            names.append(_normal(look_up()))
        except OSError:
            continue
    return [name for name in names if name]
