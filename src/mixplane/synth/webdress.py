"""The `realistic` web profile: pages as big and as varied in encoding as a real crawl's.

Crawled HTML pages weigh 20-200 KB, most of it boilerplate: inline styles and scripts,
tracking and JSON-LD blocks, mega-menus and footers of links. `dress` wraps a generated page
in such boilerplate (inside `<head>`, `<nav>` and `<footer>`, so the article and its text are
unchanged) and encodes it as its site would: English and European pages in UTF-8 or
windows-1252, Japanese in UTF-8 or Shift_JIS, Chinese in UTF-8 or GB2312, the charset said
in the HTTP header, in a `<meta>` tag, or nowhere (left to detection). A few pages are cut
at a crawler's size limit and marked `WARC-Truncated: length`, as Common Crawl does past
1 MiB.

Everything is drawn from a generator seeded by the record id, so the profile changes the
WARC bytes only: the corpus's documents, ids and truth are the same as the compact one's.

Example:
    >>> html = '<html lang="ja"><head><meta charset="utf-8"></head><body><nav></nav>'
    >>> page = dress(html + "<p>本文</p><footer></footer></body></html>", "urn:uuid:1")
    >>> MIN_BYTES <= page.length <= MAX_BYTES, page.charset in ("utf-8", "shift_jis")
    (True, True)
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from mixplane.synth.lexicon import between

PROFILES = ("compact", "realistic")
MIN_BYTES, MAX_BYTES = 20_000, 200_000
TRUNCATED_SHARE = 0.02
_CHARSETS = {"ja": "shift_jis", "zh": "gb2312"}  # else windows-1252
_LANG = re.compile(r'<html lang="([a-z]+)"')
_WORDS = (
    "container", "header", "menu", "item", "active", "wrapper", "banner", "grid", "col",
    "row", "card", "btn", "primary", "hidden", "mobile", "sticky", "overlay", "icon", "link",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class DressedPage:
    """A page's bytes as served: its HTTP Content-Type, charset, and whether it was cut."""

    body: bytes
    content_type: str
    charset: str
    #: The page's whole length (its HTTP Content-Length); more than `body` when cut.
    length: int
    truncated: bool


def dress(html: str, record_id: str) -> DressedPage:
    """The page grown to a realistic size and encoded as its site would serve it."""
    rng = random.Random(f"webdress:{record_id}")
    target = int(MIN_BYTES * (MAX_BYTES / MIN_BYTES) ** rng.random())
    html = _grow(html, rng, target)
    found = _LANG.search(html)
    charset = "utf-8"
    if rng.random() < 0.4:
        charset = _CHARSETS.get(found.group(1) if found else "", "windows-1252")
    where = rng.choice(("header", "header", "meta", "none"))
    meta = f'<meta charset="{charset}">' if where == "meta" else ""
    html = html.replace('<meta charset="utf-8">', meta, 1)
    content_type = f"text/html; charset={charset}" if where == "header" else "text/html"
    # Characters a legacy charset lacks become character references, as servers write them.
    body = html.encode(charset, errors="xmlcharrefreplace")
    length = len(body)
    truncated = rng.random() < TRUNCATED_SHARE
    if truncated:
        body = body[: length * between(rng, 50, 90) // 100]
    return DressedPage(body, content_type, charset, length, truncated)


def _grow(html: str, rng: random.Random, target: int) -> str:
    """Boilerplate in the head, the menu and the footer until the page is `target` bytes."""
    size = len(html.encode("utf-8"))
    if size >= target:
        return html
    share = target - size
    style = _css(rng, share * 3 // 10)
    script = _script(rng, share * 4 // 10)
    rest = max(0, share - len(style) - len(script))
    menu, sitemap = _links(rng, rest // 2), _links(rng, rest - rest // 2)
    html = html.replace("</head>", f"<style>{style}</style>\n<script>{script}</script>\n</head>", 1)
    html = html.replace("</nav>", f'<div class="mega-menu">{menu}</div></nav>', 1)
    return html.replace("</footer>", f'<div class="sitemap">{sitemap}</div></footer>', 1)


def _repeat(size: int, piece: Callable[[], str]) -> str:
    """Pieces drawn one after another until they hold `size` characters."""
    pieces, total = [], 0
    while total < size:
        pieces.append(piece())
        total += len(pieces[-1])
    return "".join(pieces)


def _css(rng: random.Random, size: int) -> str:
    def rule() -> str:
        a, b = rng.choice(_WORDS), rng.choice(_WORDS)
        return (
            f".{a}-{b}-{between(rng, 1, 99)}{{margin:{between(rng, 0, 40)}px;"
            f"color:#{rng.getrandbits(24):06x};display:{rng.choice(('flex', 'block', 'none'))}}}"
        )

    return _repeat(size, rule)


def _script(rng: random.Random, size: int) -> str:
    def function() -> str:
        name = f"{rng.choice(_WORDS)}{rng.choice(_WORDS).title()}{between(rng, 1, 999)}"
        step = between(rng, 2, 64)
        return (
            f"function {name}(e,t){{var n=document.querySelectorAll('.{rng.choice(_WORDS)}');"
            f"for(var r=0;r<n.length;r++){{n[r].setAttribute('data-{name}',t+r*{step})}}"
            f"return e&&e.{rng.choice(_WORDS)}||{between(rng, 0, 9999)}}}"
        )

    return _repeat(size, function)


def _links(rng: random.Random, size: int) -> str:
    def item() -> str:
        path = "/".join(rng.choice(_WORDS) for _ in range(between(rng, 1, 3)))
        return (
            f'<li><a href="/{path}/{between(rng, 1, 9999)}">{rng.choice(_WORDS).title()}</a></li>'
        )

    return "<ul>" + _repeat(size, item) + "</ul>"
