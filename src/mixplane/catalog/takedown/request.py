"""A takedown request: which documents to remove (domains, URL prefixes, ids) and why.

Pure: parsing and normalizing the criteria, the request file format and the request's id.
A domain matches its subdomains (`example.com` takes `www.example.com`, not
`notexample.com`); a URL is a prefix (`https://x.org/a/` takes everything under it; an exact
URL takes itself and any longer URL that starts with it); an id is exact.

Example:
    >>> request = TakedownRequest.build(domains=["WWW.Example.com."], reference="T-1")
    >>> request.domains, request.request_id == TakedownRequest.build(
    ...     domains=["www.example.com"], reference="T-1").request_id
    (('www.example.com',), True)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from mixplane.errors import ConfigError, InputError

KINDS = ("domain", "url", "id")
# A host name: labels of letters, digits and '-', separated by dots (IDNs in punycode).
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_-]+)*$")
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://\S+$")


def normal_domain(value: str) -> str:
    """A domain as it is matched: lower case, without a trailing dot; refuses anything
    that is not a host name (a URL or a pattern given by mistake).

    Example:
        >>> normal_domain("News.Example.COM.")
        'news.example.com'
        >>> normal_domain("https://example.com")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        mixplane.errors.ConfigError: 'https://example.com' is not a domain ...
    """
    domain = value.strip().lower().rstrip(".")
    if not _DOMAIN.match(domain):
        raise ConfigError(
            f"{value!r} is not a domain (like example.com); give a URL with --url instead"
        )
    return domain


def normal_url(value: str) -> str:
    """A URL prefix as given (URLs are case-sensitive past the host), checked to be a URL."""
    url = value.strip()
    if not _URL.match(url):
        raise ConfigError(f"{value!r} is not a URL (like https://example.com/page)")
    return url


def normal_id(value: str) -> str:
    if not value or value != value.strip():
        raise ConfigError(f"document id {value!r} is empty or has spaces around it")
    return value


@dataclass(frozen=True)
class TakedownRequest:
    """What to remove, sorted and without repeats, and the reference it answers (a ticket)."""

    domains: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    reference: str = ""

    @classmethod
    def build(
        cls,
        domains: Iterable[str] = (),
        urls: Iterable[str] = (),
        ids: Iterable[str] = (),
        reference: str = "",
    ) -> TakedownRequest:
        """A request from criteria as users write them; refuses an empty one."""
        reference = reference.strip()
        if not reference:
            raise ConfigError("a takedown needs --reference (the ticket or letter it answers)")
        request = cls(
            tuple(sorted({normal_domain(d) for d in domains})),
            tuple(sorted({normal_url(u) for u in urls})),
            tuple(sorted({normal_id(i) for i in ids})),
            reference,
        )
        if not (request.domains or request.urls or request.ids):
            raise ConfigError("a takedown needs at least one --domain, --url, --id or --file")
        return request

    @property
    def criteria(self) -> dict[str, list[str]]:
        """The criteria as recorded in manifests and the catalog."""
        return {"domains": list(self.domains), "urls": list(self.urls), "ids": list(self.ids)}

    @property
    def request_id(self) -> str:
        """`td-` and 16 hex digits of a hash of the criteria and the reference: the same
        request always has the same id."""
        content = orjson.dumps({"criteria": self.criteria, "reference": self.reference})
        return "td-" + hashlib.sha256(content).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        return {"request": self.request_id, "reference": self.reference, "criteria": self.criteria}


def parse_request_file(text: str, where: str) -> dict[str, list[str]]:
    """The criteria of a request file: one `domain D`, `url U` or `id I` per line; `#`
    starts a comment (a whole line, or after a space), blank lines are skipped.

    Example:
        >>> parse_request_file("# from T-1\\ndomain example.com\\nid doc-7  # twice\\n", "f")
        {'domain': ['example.com'], 'url': [], 'id': ['doc-7']}
        >>> parse_request_file("host example.com", "req.txt")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        mixplane.errors.InputError: req.txt line 1: 'host example.com': ...
    """
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            continue
        line = re.split(r"\s#", line, maxsplit=1)[0].strip()
        if not line:
            continue
        kind, _, value = line.partition(" ")
        value = value.strip()
        if kind not in KINDS or not value or " " in value:
            raise InputError(
                f"{where} line {number}: {raw.strip()!r}: expected 'domain NAME', 'url URL' "
                "or 'id ID' (one per line, # for comments)"
            )
        try:
            {"domain": normal_domain, "url": normal_url, "id": normal_id}[kind](value)
        except ConfigError as error:
            raise InputError(f"{where} line {number}: {error}") from None
        found[kind].append(value)
    return found
