"""What an HTML page says about its licence and its use for AI, read before extraction.

`read_page` parses a page once (Python's `html.parser`: lenient, deterministic, no
dependency) and keeps only what the governance stages look at:

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
from html.parser import HTMLParser
from typing import Any

import orjson

# A page without any of these holds no licence statement the default options read.
LICENSE_WORDS = re.compile(r"licen[cs]e|creativecommons|dc\.rights|dcterms\.rights", re.I)
_CC_LINK = re.compile(r"creativecommons\.org/(?:licenses|publicdomain)/", re.IGNORECASE)
_LINKS = ("a", "link", "area")


@dataclass
class PageSignals:
    """The licence and opt-out hints of one page, in page order."""

    rel_license: list[str] = field(default_factory=list)
    meta: dict[str, list[str]] = field(default_factory=dict)
    schema_org: list[Any] = field(default_factory=list)
    cc_links: list[str] = field(default_factory=list)


def read_page(html: str, words: re.Pattern = LICENSE_WORDS) -> PageSignals:
    """The signals of a page; an empty `PageSignals` when `words` finds nothing in it."""
    signals = PageSignals()
    if words.search(html) is None:
        return signals
    parser = _Collector(signals)
    parser.feed(html)
    parser.close()
    for script in parser.scripts:
        signals.schema_org.extend(json_ld_licenses(script))
    signals.schema_org.extend(parser.microdata)
    return signals


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


class _Collector(HTMLParser):
    def __init__(self, signals: PageSignals):
        super().__init__(convert_charrefs=True)
        self.signals = signals
        self.scripts: list[str] = []
        self.microdata: list[str] = []
        self._in_json_ld = False
        self._script: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "meta":
            name = found.get("name") or found.get("property") or found.get("http-equiv")
            if name and "content" in found:
                self.signals.meta.setdefault(name.strip().lower(), []).append(found["content"])
        if tag == "script":
            kind = found.get("type", "").split(";")[0].strip().lower()
            self._in_json_ld = kind == "application/ld+json"
            self._script = []
        href = found.get("href", "").strip()
        if tag in _LINKS and href:
            if "license" in found.get("rel", "").lower().split():
                self.signals.rel_license.append(href)
            if _CC_LINK.search(href):
                self.signals.cc_links.append(href)
        if found.get("itemprop", "").strip().lower() == "license":
            value = found.get("href") or found.get("content") or found.get("src")
            if value:
                self.microdata.append(value.strip())

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "script":
            self._in_json_ld = False

    def handle_data(self, data: str) -> None:
        if self._in_json_ld:
            self._script.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._in_json_ld:
            self.scripts.append("".join(self._script))
            self._in_json_ld = False
