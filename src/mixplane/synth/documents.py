"""Fresh documents for each source, before they get an id and a place in a file.

A `Draft` carries the text the pipeline will read (HTML for web pages), the fields its
file format stores beside it, and its labels: language, kind of page, planted PII.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from mixplane.synth import pii, prose, sourcecode
from mixplane.synth.languages import LANGUAGES
from mixplane.synth.lexicon import between, pick
from mixplane.synth.plan import KIND_WEIGHTS, LANGUAGE_WEIGHTS, PROGRAMMING_LANGUAGES, draw
from mixplane.synth.webpages import Site, clean_page, low_quality_page, make_site, spam_page

SITES_PER_LANGUAGE = 40
LICENSE = "CC-BY-SA-4.0"
_FORUM_NOISE = ("+1", "bump", "thx!!", "same", "lol", "following", "???", "first!", "this")
_EMOJI = ("🙂", "😂", "👍", "🔥", "🙏", "😅", "🎉", "👀", "💯", "🤔", "😡", "✅")


@dataclass(slots=True)
class Draft:
    """A document's text, the fields stored beside it, and its labels.

    `words` is set for spaced-language encyclopedia text, which near-duplicates are made of.
    """

    source: str
    text: str
    language: str | None
    kind: str
    fields: dict[str, Any] = field(default_factory=dict)
    pii: list[dict[str, Any]] = field(default_factory=list)
    lookalikes: list[dict[str, Any]] = field(default_factory=list)
    programming_language: str | None = None
    words: int = 0
    #: Response headers beyond the usual (WARC pages only) and the planted licence and
    #: opt-out, with `synth --governance` (see `governance`).
    headers: list[tuple[str, str]] = field(default_factory=list)
    governance: dict[str, Any] | None = None


def length(rng: random.Random, median: float, spread: float, low: int, high: int) -> int:
    """A log-normal count of sentences, clipped to `[low, high]`."""
    return max(low, min(high, round(rng.lognormvariate(math.log(median), spread))))


def make_sites(rng: random.Random) -> dict[str, list[Site]]:
    return {
        code: [make_site(rng, language, i) for i in range(SITES_PER_LANGUAGE)]
        for code, language in LANGUAGES.items()
    }


def web_draft(rng: random.Random, sites: dict[str, list[Site]], number: int) -> Draft:
    """A web page of a kind drawn from the web mix (clean, spam, low quality, with PII)."""
    kind = draw(rng, KIND_WEIGHTS["web"])
    code = draw(rng, LANGUAGE_WEIGHTS["web"])
    language, site = LANGUAGES[code], pick(rng, sites[code])
    sentences = length(rng, 18, 0.6, 4, 90)
    if kind == "spam":
        page = spam_page(rng, language, site, number)
    elif kind == "low_quality":
        page = low_quality_page(rng, language, site, number)
    else:
        extra, found, lookalikes = [], [], []
        for _ in range(between(rng, 1, 3) if kind == "pii" else 0):
            sentence, items = pii.pii_sentence(code, rng)
            extra.append(sentence)
            found += items
        if rng.random() < 0.15:
            sentence, lookalikes = pii.lookalike_sentence(code, rng)
            extra.append(sentence)
        page = clean_page(rng, language, site, number, sentences, extra)
        page.kind, page.pii, page.lookalikes = kind, found, lookalikes
    return Draft(
        "web",
        page.html,
        page.language,
        page.kind,
        {"url": page.url, "title": page.title},
        page.pii,
        page.lookalikes,
    )


def wiki_draft(rng: random.Random) -> Draft:
    """An encyclopedia article; one in ten cites a book (an ISBN look-alike)."""
    code = draw(rng, LANGUAGE_WEIGHTS["wiki"])
    language = LANGUAGES[code]
    title, text = prose.encyclopedia_article(language, rng, length(rng, 34, 0.55, 6, 160))
    lookalikes = []
    if rng.random() < 0.1:
        sentence, lookalikes = pii.lookalike_sentence(code, rng)
        text = f"{text}\n\n{sentence}"
    slug = title.replace(" ", "_")
    fields = {
        "title": title,
        "url": f"https://{code}.encyclopedia.example/wiki/{slug}",
        "lang": code,
        "license": LICENSE,
    }
    draft = Draft("wiki", text, code, "clean", fields, lookalikes=lookalikes)
    draft.words = len(text.split()) if language.spaced else 0
    return draft


def code_draft(rng: random.Random) -> Draft:
    """A source file; a few carry their author's e-mail address in a copyright line."""
    kind = draw(rng, KIND_WEIGHTS["code"])
    programming = draw(rng, PROGRAMMING_LANGUAGES)
    found = []
    author = None
    if kind == "pii":
        first, last = pick(rng, ("Anna", "Jonas", "Mei", "Carlos")), pick(rng, ("Smith", "Ito"))
        address = pii.email(rng, first, last)
        author = f"{first} {last} <{address}>"
        found.append({"type": "email", "value": address})
    source = sourcecode.source_file(rng, programming, author)
    fields = {
        "path": source.path,
        "repo": sourcecode.repository(rng),
        "language": programming,
        "license": pick(rng, sourcecode.LICENSES),
    }
    return Draft("code", source.text, None, kind, fields, found, programming_language=programming)


def forum_draft(rng: random.Random, language_code: str, quote: str | None) -> Draft:
    """A post in a thread's language: chat, noise, spam, or a post sharing contact data."""
    kind = draw(rng, KIND_WEIGHTS["forum"])
    language = LANGUAGES[language_code]
    topic = language.topic(rng)
    found: list[dict[str, Any]] = []
    code = language_code
    if kind == "low_quality":
        noise = [pick(rng, _FORUM_NOISE)] + rng.choices(_EMOJI, k=between(rng, 1, 5))
        text = " ".join(noise)
        code = "und"
    elif kind == "spam":
        keyword = pick(rng, ("cheap watches", "casino bonus", "crypto signals", "diet pills"))
        link = f"https://{keyword.replace(' ', '-')}-{between(rng, 10, 99999)}.biz"
        text = f"Best {keyword} here!!! {link} Buy now, {keyword} {keyword} {keyword}!"
        code = "en"
    else:
        sentences = length(rng, 3, 0.9, 1, 40)
        text = prose.forum_post(language, rng, topic, sentences, quote)
        if kind == "pii":
            sentence, found = pii.pii_sentence(language_code, rng)
            text = language.join([text, sentence])
    return Draft("forum", text, code, kind, {}, found)
