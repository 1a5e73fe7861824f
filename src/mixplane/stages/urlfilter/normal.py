"""How URLs, hosts and list entries are put in one form before they are compared.

Pure functions, so the stage, its list loading and the tests agree on one definition:

- a host is lowercased, loses a trailing dot, a port, user info and a leading `www.`, and
  internationalized labels are written in punycode (`bücher.de` and `xn--bcher-kva.de` are
  one host);
- a URL, for matching whole URLs, is its normalized host followed by its path and query as
  written (paths are case-sensitive on most servers); scheme, port and fragment are ignored,
  and an empty path is `/`;
- the words of a URL are the runs of letters and digits of the lowercased URL;
- its joined form is those words concatenated, so a banned sub-word is found across
  separators (`free-bets` contains `freebet`).

Example:
    >>> normal_host("WWW.Bücher.DE.:8080")
    'xn--bcher-kva.de'
    >>> normal_url("https://www.Example.com:443/a/B?x=1#top")
    'example.com/a/B?x=1'
    >>> url_words("https://Example.com/Free-Bets_now")
    ['https', 'example', 'com', 'free', 'bets', 'now']
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_WORD_SEPARATORS = re.compile(r"[\W_]+")
_SCHEME = re.compile(r"\A[a-zA-Z][a-zA-Z0-9+.-]*://")


def normal_host(host: str) -> str:
    """A host name in the one form lists and URLs are compared in ("" if there is none)."""
    host = host.strip().lower()
    if "@" in host:
        host = host.rpartition("@")[2]
    if host.startswith("["):  # an IPv6 literal, maybe with a port after the bracket
        return host.partition("]")[0] + "]"
    host = host.partition(":")[0].rstrip(".")
    labels = [_ascii_label(label) for label in host.split(".")]
    if len(labels) > 2 and labels[0] == "www":
        labels = labels[1:]
    return ".".join(labels)


def _ascii_label(label: str) -> str:
    if label.isascii():
        return label
    try:
        return label.encode("idna").decode("ascii")
    except UnicodeError:  # not a valid IDN label: compare it as written
        return label


def split_url(url: str) -> tuple[str, str]:
    """The normalized host and the path with its query (`/` when empty) of a URL; a URL
    without a scheme (`example.com/a`) is read as if it had one."""
    url = url.strip()
    if not _SCHEME.match(url):
        url = "//" + url
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced IPv6 bracket: no host can be read
        return "", url
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return normal_host(parts.netloc), path


def normal_url(url: str) -> str:
    """A URL in the one form whole-URL lists and documents are compared in."""
    host, path = split_url(url)
    return host + path


def host_suffixes(host: str) -> list[str]:
    """The host and each domain it belongs to, longest first: a listed domain covers its
    subdomains.

    Example:
        >>> host_suffixes("a.b.example.com")
        ['a.b.example.com', 'b.example.com', 'example.com', 'com']
        >>> host_suffixes("10.0.0.1")
        ['10.0.0.1']
    """
    labels = host.split(".")
    if host.startswith("[") or (len(labels) == 4 and all(label.isdigit() for label in labels)):
        return [host]  # an IP address is matched whole: it has no parent domains
    return [".".join(labels[i:]) for i in range(len(labels))]


def url_words(url: str) -> list[str]:
    """The words of a URL: runs of letters and digits, lowercased."""
    return [word for word in _WORD_SEPARATORS.split(url.lower()) if word]


def normal_word(entry: str) -> str:
    """A listed word or sub-word in the form it is matched in: its letters and digits,
    lowercased (`Free-Bet` is `freebet`)."""
    return "".join(url_words(entry))
