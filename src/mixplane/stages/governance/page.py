"""What an HTML page says about its licence and its use for AI, read before extraction.

`read_page` parses a page once (resiliparse's HTML5 parser, which `extract` uses too) and
keeps only what the governance stages look at:

- `rel_license`: the `href` of each `<link>`, `<a>` or `<area>` whose `rel` holds `license`;
- `meta`: `<meta name|property|http-equiv=... content=...>` by lowercased name, in page order;
- `schema_org`: `license` values of schema.org data: JSON-LD (`<script
  type="application/ld+json">`, nested objects and `@graph` included) and microdata
  (`itemprop="license"`: its `href`, `content` or `src`);
- `cc_links`: the `href` of every link to a Creative Commons licence or public-domain deed.

A stage passes the pattern of words its signals need: a page without any is not parsed at
all, which spares most pages the parse.

Example:
    >>> page = read_page('<html><head><meta name="dcterms.license" content="CC0"></head><body>'
    ...                  '<a rel="license" href="https://creativecommons.org/licenses/by/4.0/">'
    ...                  'CC BY</a></body></html>')
    >>> page.rel_license, page.meta["dcterms.license"]
    (['https://creativecommons.org/licenses/by/4.0/'], ['CC0'])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from resiliparse.parse.html import HTMLTree

# A page without any of these holds no licence statement the default options read.
LICENSE_WORDS = ("license", "licence", "creativecommons", "dc.rights", "dcterms.rights")
_CC_LINK = re.compile(r"creativecommons\.org/(?:licenses|publicdomain)/", re.IGNORECASE)
_LINKS = frozenset({"a", "link", "area"})
# The elements any signal is on, found by the parser's own selector engine (in page order).
_SELECTOR = (
    "a[rel], link[rel], area[rel], a[href*=creativecommons], link[href*=creativecommons], "
    "meta, script[type], [itemprop]"
)


@dataclass
class PageSignals:
    """The licence and opt-out hints of one page, in page order."""

    rel_license: list[str] = field(default_factory=list)
    meta: dict[str, list[str]] = field(default_factory=dict)
    schema_org: list[Any] = field(default_factory=list)
    cc_links: list[str] = field(default_factory=list)


def read_page(html: str, words: tuple[str, ...] = LICENSE_WORDS) -> PageSignals:
    """The signals of a page; an empty `PageSignals` when it holds none of `words` (in
    lowercase), whatever their case in the page."""
    signals = PageSignals()
    lowered = html.lower()  # then plain substring searches: far faster than a regex with re.I
    if not any(word in lowered for word in words):
        return signals
    tree = HTMLTree.parse(html)
    if tree.document is None:
        return signals
    microdata: list[str] = []
    for element in tree.document.query_selector_all(_SELECTOR):
        _collect(element, signals, microdata)
    signals.schema_org.extend(microdata)
    return signals


def _collect(element: Any, signals: PageSignals, microdata: list[str]) -> None:
    """Add what one element says to `signals` (JSON-LD at once, microdata after)."""
    tag = element.tag
    attr = element.getattr
    if tag == "meta":
        name = attr("name") or attr("property") or attr("http-equiv")
        content = attr("content")
        if name and content is not None:
            signals.meta.setdefault(name.strip().lower(), []).append(content)
    elif tag == "script" and _media_type(attr("type")) == "application/ld+json":
        signals.schema_org.extend(json_ld_licenses(element.text))
    href = (attr("href") or "").strip()
    if tag in _LINKS and href:
        if "license" in (attr("rel") or "").lower().split():
            signals.rel_license.append(href)
        if _CC_LINK.search(href):
            signals.cc_links.append(href)
    if (attr("itemprop") or "").strip().lower() == "license":
        value = attr("href") or attr("content") or attr("src")
        if value and value.strip():
            microdata.append(value.strip())


def json_ld_licenses(script: str) -> list[Any]:
    """The `license` values of a JSON-LD block, outermost first; [] when it is not JSON.

    Example:
        >>> json_ld_licenses('{"@graph": [{"@type": "Article", "license": "CC0"}]}')
        ['CC0']
    """
    try:
        data = orjson.loads(script.strip().encode("utf-8", "surrogatepass"))
    except (orjson.JSONDecodeError, UnicodeEncodeError):
        return []
    found: list[Any] = []
    queue = [data]
    while queue:  # breadth first: the page's own object before those it mentions
        item = queue.pop(0)
        if isinstance(item, list):
            queue.extend(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                if key in ("license", "schema:license", "http://schema.org/license"):
                    found.extend(_license_values(value))
                elif isinstance(value, dict | list):
                    queue.append(value)
    return found


def _license_values(value: Any) -> list[str]:
    """A JSON-LD licence: a string, an object with `@id`/`url`/`name`, or a list of them."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [found for item in value for found in _license_values(item)]
    if isinstance(value, dict):
        for key in ("@id", "url", "name", "identifier"):
            if isinstance(value.get(key), str):
                return [value[key]]
    return []


def _media_type(value: str | None) -> str:
    return (value or "").split(";")[0].strip().lower()
