"""Documents made of sentences: encyclopedia articles, web article bodies, forum posts.

Every function takes the random generator it draws from, so a document depends only on
the generator's state. Lengths are counted in sentences (about twelve words each in spaced
languages, about twenty characters in Chinese and Japanese).

Example:
    >>> import random
    >>> from mixplane.synth.languages import LANGUAGES
    >>> title, text = encyclopedia_article(LANGUAGES["en"], random.Random(3), sentences=12)
    >>> text.startswith(title)
    True
"""

from __future__ import annotations

import random

from mixplane.synth.lexicon import Language, Topic, between, pick


def sentences(language: Language, rng: random.Random, topic: Topic, count: int) -> list[str]:
    """`count` sentences from the language's encyclopedic templates."""
    templates = language.compiled_sentences
    size = len(templates)
    return [templates[int(rng.random() * size)](rng, topic) for _ in range(count)]


def paragraph(language: Language, rng: random.Random, topic: Topic, count: int) -> str:
    return language.join(sentences(language, rng, topic, count))


def title(language: Language, rng: random.Random, topic: Topic) -> str:
    return language.fill(pick(rng, language.compiled_titles), rng, topic)


def paragraph_sizes(rng: random.Random, total: int) -> list[int]:
    """Split `total` sentences into paragraphs of 2 to 7 sentences."""
    sizes = []
    while total > 0:
        size = min(total, between(rng, 2, 7))
        sizes.append(size)
        total -= size
    return sizes


def encyclopedia_article(
    language: Language, rng: random.Random, sentences: int, topic: Topic | None = None
) -> tuple[str, str]:
    """`(title, text)`: a lead paragraph naming the title, then headed sections.

    Sections are separated by blank lines; a heading is a line of its own, as in
    plain-text encyclopedia dumps.
    """
    topic = topic or language.topic(rng)
    name = title(language, rng, topic)
    lead = language.fill(pick(rng, language.compiled_leads), rng, topic, name)
    sizes = paragraph_sizes(rng, max(1, sentences - 1))
    blocks = [language.join([lead, paragraph(language, rng, topic, sizes[0])])]
    headings = rng.sample(language.headings, min(len(language.headings), len(sizes)))
    for index, size in enumerate(sizes[1:]):
        if index % 2 == 0:
            blocks.append(headings[(index // 2) % len(headings)])
        blocks.append(paragraph(language, rng, topic, size))
    return name, "\n\n".join(blocks)


def body_paragraphs(
    language: Language, rng: random.Random, topic: Topic, sentences: int
) -> list[str]:
    """The paragraphs of a web article, without headings."""
    return [paragraph(language, rng, topic, size) for size in paragraph_sizes(rng, sentences)]


def forum_post(
    language: Language, rng: random.Random, topic: Topic, sentences: int, quote: str | None
) -> str:
    """A post: conversational sentences mixed with factual ones, maybe quoting another."""
    chat = language.compiled_chat
    lines = []
    if quote:
        lines.append("> " + quote)
    body = [
        language.fill(pick(rng, chat), rng, topic)
        if rng.random() < 0.6
        else language.fill(pick(rng, language.compiled_sentences), rng, topic)
        for _ in range(sentences)
    ]
    if sentences > 5:
        middle = len(body) // 2
        lines += [language.join(body[:middle]), "", language.join(body[middle:])]
    else:
        lines.append(language.join(body))
    return "\n".join(lines)


def first_sentence(language: Language, text: str) -> str:
    """The first sentence of a text, to quote it in a reply."""
    line = text.lstrip("> ").split("\n", 1)[0]
    end = "。" if not language.spaced else ". "
    cut = line.find(end)
    return line if cut < 0 else line[: cut + len(end.strip())]
