"""Web pages as a crawler stores them: boilerplate around an article, or spam, or junk.

A page has a `<head>` with styles and scripts, often a cookie banner, a `<header>` with a
`<nav>` menu, a `<main>` holding the `<article>`, sometimes an `<aside>`, and a `<footer>`
with a copyright line and links. Spam pages stuff keywords, repeat lines and farm links;
low-quality pages are very short, mostly links, mostly symbols, or lorem ipsum.

Example:
    >>> import random
    >>> from mixplane.synth.languages import LANGUAGES
    >>> rng = random.Random(1)
    >>> site = make_site(rng, LANGUAGES["de"], 0)
    >>> page = clean_page(rng, LANGUAGES["de"], site, 7, sentences=10)
    >>> "<article>" in page.html and page.url.startswith("https://")
    True
"""

from __future__ import annotations

import functools
import random
import re
import unicodedata
from dataclasses import dataclass, field
from html import escape
from typing import Any

from mixplane.synth import prose
from mixplane.synth.languages import LANGUAGES
from mixplane.synth.lexicon import Language, between, entries, pick

_SYLLABLES = ("ka", "lo", "mi", "ra", "ten", "vo", "su", "del", "mar", "no", "pi", "ber", "ly")
_TLDS = {
    "en": ("com", "org", "net", "co.uk"),
    "de": ("de", "at", "ch"),
    "fr": ("fr", "be"),
    "es": ("es", "com.mx"),
    "zh": ("cn", "com.cn"),
    "ja": ("jp", "co.jp"),
}
_SECTIONS = ("news", "blog", "travel", "science", "local", "culture", "guide", "history")
SPAM_KEYWORDS = (
    "replica watches", "weight loss pills", "casino bonus", "cheap flights", "payday loans",
    "crypto signals", "vpn deals", "phone cases", "cheap followers", "essay writing",
)  # fmt: skip
SPAM_LINES = (
    "Buy now and save 90%!",
    "Limited offer, click here!!!",
    "Best price guaranteed, order today.",
    "Free shipping worldwide, no prescription needed.",
)
LOREM = entries("""
    lorem, ipsum, dolor, sit, amet, consectetur, adipiscing, elit, sed, do, eiusmod, tempor,
    incididunt, ut, labore, et, dolore, magna, aliqua, enim, ad, minim, veniam, quis, nostrud,
    exercitation, ullamco, laboris, nisi, aliquip, ex, ea, commodo, consequat, duis, aute,
    irure, in, reprehenderit, voluptate, velit, esse, cillum, fugiat, nulla, pariatur,
    excepteur, sint, occaecat, cupidatat, non, proident
""")
_SYMBOLS = ("★", "☆", "→", "»", "$$$", "###", "!!!", "***", ">>>", "|", "©", "®", "::", "~~")


@dataclass(frozen=True, slots=True)
class Site:
    """A website: its pages share the domain, menu, colours and analytics snippet."""

    domain: str
    name: str
    language: str
    sections: tuple[str, ...]
    color: str
    tracker: str


@dataclass(slots=True)
class Page:
    """A rendered page and what it contains."""

    html: str
    url: str
    title: str
    language: str
    kind: str
    pii: list[dict[str, Any]] = field(default_factory=list)
    lookalikes: list[dict[str, Any]] = field(default_factory=list)


def make_site(rng: random.Random, language: Language, number: int) -> Site:
    stem = "".join(pick(rng, _SYLLABLES) for _ in range(between(rng, 2, 3)))
    suffix = pick(rng, ("", "-news", "-online", "-magazin", "-blog", "24", "-info"))
    domain = f"{stem}{suffix}.{pick(rng, _TLDS[language.code])}"
    name = stem.capitalize() + suffix.replace("-", " ").title()
    sections = tuple(rng.sample(_SECTIONS, between(rng, 3, 5)))
    color = f"#{rng.getrandbits(24):06x}"
    tracker = f"UA-{between(rng, 100000, 999999)}-{number % 9 + 1}"
    return Site(domain, name, language.code, sections, color, tracker)


def slug(text: str) -> str:
    """An ASCII URL slug: 'Der alte Fluss' -> 'der-alte-fluss'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:60] or "page"


def page_url(rng: random.Random, site: Site, title: str, number: int) -> str:
    year, month = between(rng, 2015, 2024), between(rng, 1, 12)
    section = pick(rng, site.sections)
    return f"https://{site.domain}/{section}/{year}/{month:02d}/{slug(title)}-{number}"


def clean_page(
    rng: random.Random,
    language: Language,
    site: Site,
    number: int,
    sentences: int,
    extra: list[str] | None = None,
) -> Page:
    """An article page; `extra` sentences (PII, look-alikes) are spliced into paragraphs."""
    topic = language.topic(rng)
    title = prose.title(language, rng, topic)
    paragraphs = prose.body_paragraphs(language, rng, topic, sentences)
    for sentence in extra or ():
        index = rng.randrange(len(paragraphs))
        paragraphs[index] = language.join([paragraphs[index], sentence])
    blocks = [f"<h1>{escape(title)}</h1>", _byline(rng, language)]
    for index, text in enumerate(paragraphs):
        if index and index % 3 == 0:
            blocks.append(f"<h2>{escape(pick(rng, language.headings))}</h2>")
        blocks.append(f"<p>{escape(text, quote=False)}</p>")
    main = "<article>\n" + "\n".join(blocks) + "\n</article>"
    if rng.random() < 0.5:
        main += "\n" + _aside(rng, language, site)
    url = page_url(rng, site, title, number)
    return Page(_document(rng, language, site, title, main), url, title, language.code, "clean")


def spam_page(rng: random.Random, language: Language, site: Site, number: int) -> Page:
    """Keyword stuffing, repeated lines and a link farm, in English as most spam is."""
    keyword = pick(rng, SPAM_KEYWORDS)
    title = f"Cheap {keyword} - Best {keyword} Online - Buy {keyword} Now"
    stuffing = " ".join(
        f"{pick(rng, ('cheap', 'best', 'buy', 'discount', 'top', 'free'))} {keyword}"
        for _ in range(between(rng, 30, 120))
    )
    blocks = [f"<h1>BEST {keyword.upper()} DEALS</h1>", f"<p>{stuffing}</p>"]
    blocks += [f"<p>{pick(rng, SPAM_LINES)}</p>"] * between(rng, 8, 25)
    name = slug(keyword)
    farm = "".join(
        f'<li><a href="https://{name}-{i}.biz/{name}">buy {keyword} now</a></li>'
        for i in range(between(rng, 20, 60))
    )
    blocks.append(f"<ul>{farm}</ul>")
    main = "<article>\n" + "\n".join(blocks) + "\n</article>"
    url = f"https://{name}-{site.domain.split('.')[0]}.biz/offer-{number}"
    return Page(_document(rng, language, site, title, main), url, title, "en", "spam")


def low_quality_page(rng: random.Random, language: Language, site: Site, number: int) -> Page:
    """A near-empty page: a stub, a list of links, mostly symbols, or placeholder text."""
    variant = pick(rng, ("stub", "links", "symbols", "lorem"))
    ui = language.ui
    code = language.code
    if variant == "stub":
        title = ui["not_found"]
        path = f"/{pick(rng, site.sections)}/{number}"
        main = (
            f"<main><h1>{escape(title)}</h1><p><code>{path}</code></p>"
            f'<p><a href="/">{escape(ui["back"])}</a></p></main>'
        )
    elif variant == "links":
        title = ui["related"]
        links = "".join(
            f'<li><a href="/{pick(rng, site.sections)}/{i}">{escape(_noun(rng, language))}</a></li>'
            for i in range(between(rng, 25, 80))
        )
        main = f"<main><h1>{escape(title)}</h1><ul>{links}</ul></main>"
    elif variant == "symbols":
        title, code = "★★★★★", "und"
        lines = [
            " ".join(pick(rng, _SYMBOLS) for _ in range(between(rng, 4, 12)))
            for _ in range(between(rng, 5, 20))
        ]
        main = "<main>" + "".join(f"<p>{escape(line)}</p>" for line in lines) + "</main>"
    else:
        title, code = "Lorem ipsum", "la"
        paragraphs = [
            " ".join(pick(rng, LOREM) for _ in range(between(rng, 30, 80))).capitalize() + "."
            for _ in range(between(rng, 1, 4))
        ]
        main = "<main>" + "".join(f"<p>{text}</p>" for text in paragraphs) + "</main>"
    url = f"https://{site.domain}/{variant}/{number}"
    html = _document(rng, language, site, title, main)
    return Page(html, url, title, code, "low_quality")


def _noun(rng: random.Random, language: Language) -> str:
    entry = pick(rng, language.nouns)
    return entry if isinstance(entry, str) else entry[1]


def _byline(rng: random.Random, language: Language) -> str:
    year, month, day = between(rng, 2015, 2024), between(rng, 1, 12), between(rng, 1, 28)
    by = escape(language.ui["by"])
    author = escape(language.person(rng))
    stamp = f"{year}-{month:02d}-{day:02d}"
    return f'<p class="byline">{by} {author} · <time datetime="{stamp}">{stamp}</time></p>'


def _aside(rng: random.Random, language: Language, site: Site) -> str:
    items = "".join(
        f'<li><a href="/{pick(rng, site.sections)}/{between(rng, 100, 9999)}">'
        f"{escape(_noun(rng, language).capitalize())}</a></li>"
        for _ in range(between(rng, 3, 6))
    )
    return f"<aside><h3>{escape(language.ui['related'])}</h3><ul>{items}</ul></aside>"


@functools.cache
def _escaped_ui(code: str) -> dict[str, str]:
    return {key: escape(value) for key, value in LANGUAGES[code].ui.items()}


def _document(rng: random.Random, language: Language, site: Site, title: str, main: str) -> str:
    ui = _escaped_ui(language.code)
    menu = [("/", ui["home"])] + [(f"/{s}/", s.capitalize()) for s in site.sections]
    menu += [("/about", ui["about"]), ("/contact", ui["contact"])]
    nav = "".join(f'<li><a href="{href}">{label}</a></li>' for href, label in menu)
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="{language.code}">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)} | {escape(site.name)}</title>",
        '<link rel="stylesheet" href="/static/css/main.css">',
        f"<style>body{{margin:0;font-family:sans-serif}}header{{background:{site.color}}}"
        ".cookie-banner{position:fixed;bottom:0}</style>",
        f"<script>window.dataLayer=window.dataLayer||[];gtag('config','{site.tracker}');</script>",
        "</head>",
        "<body>",
    ]
    if rng.random() < 0.6:
        parts.append(
            f'<div class="cookie-banner" id="cookie-consent"><p>{ui["cookie"]}</p>'
            f'<a href="/privacy">{ui["privacy"]}</a> <button>{ui["accept"]}</button></div>'
        )
    parts += [
        f'<header><a class="logo" href="/">{escape(site.name)}</a>',
        f'<nav class="main-menu"><ul>{nav}</ul></nav>',
        f'<form action="/search"><input name="q" placeholder="{ui["search"]}"></form></header>',
        main if main.startswith("<main>") else f"<main>\n{main}\n</main>",
        "<footer>",
        f"<p>© {between(rng, 2016, 2024)} {escape(site.name)}. {ui['rights']}</p>",
        f'<ul class="footer-links"><li><a href="/privacy">{ui["privacy"]}</a></li>'
        f'<li><a href="/terms">{ui["terms"]}</a></li>'
        f'<li><a href="/contact">{ui["contact"]}</a></li></ul>',
    ]
    if rng.random() < 0.3:
        parts.append(f'<form class="newsletter"><label>{ui["newsletter"]}</label></form>')
    parts += ["</footer>", '<script src="/static/js/app.js" defer></script>', "</body>", "</html>"]
    return "\n".join(parts) + "\n"
