"""Web pages whose main content is known exactly, to measure HTML text extraction.

Each page wraps its main content in the boilerplate of `synth.webpages` (cookie banner,
header with a menu and a search form, footer with links, styles and scripts) and adds more:
a sidebar of link lists, share buttons and a reader comments section. The known answer is the
main content's text only: the heading, paragraphs, sub-headings and every table cell, in page
order. Kinds:

- `article`: paragraphs under sub-headings.
- `article_table`: an article with a data table between its paragraphs.
- `data_table`: a short introduction, then a large table is most of the page's text.
- `definition_table`: reference documentation: a table of linked names and one-sentence
  definitions, as API docs write them.
- `short_tables`: several short sections, each a heading, a sentence and a small table of
  short cells (the shape of a docs page's option tables).
- `index_table`: an index: a table whose cells hold lists of linked entries.
- `linked_list`: release notes: a list of sentences, each linking to its issue.

Example:
    >>> pages = known_answer_pages(seed=1, count=5)
    >>> [page.kind for page in pages]
    ['article', 'article_table', 'data_table', 'definition_table', 'short_tables']
    >>> pages[2].answer.splitlines()[0] == pages[2].title
    True
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from html import escape

from mixplane.synth import prose
from mixplane.synth.languages import LANGUAGES
from mixplane.synth.lexicon import Language, Topic, between, pick
from mixplane.synth.webpages import _document, make_site

KINDS = (
    "article", "article_table", "data_table", "definition_table", "short_tables",
    "index_table", "linked_list",
)  # fmt: skip
_WORD = re.compile(r"\w+")
# Han, kana and Hangul: one token per character, as those scripts do not space words.
_CJK_RANGE = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_CJK = re.compile(f"[{_CJK_RANGE}]")
_CJK_SPLIT = re.compile(f"[{_CJK_RANGE}]|[^{_CJK_RANGE}]+")
TABLE_KINDS = frozenset(
    {"article_table", "data_table", "definition_table", "short_tables", "index_table"}
)
LIST_KINDS = frozenset({"linked_list"})


@dataclass(frozen=True, slots=True)
class KnownPage:
    """A page, the exact text of its main content, and what kind of page it is."""

    html: str
    answer: str
    title: str
    language: str
    kind: str

    @property
    def group(self) -> str:
        """`tables`, `lists` or `prose`: how benchmarks report the page."""
        if self.kind in TABLE_KINDS:
            return "tables"
        return "lists" if self.kind in LIST_KINDS else "prose"


class _Main:
    """The main content as HTML and, block by block, as its known text."""

    def __init__(self) -> None:
        self.html: list[str] = []
        self.text: list[str] = []

    def block(self, tag: str, text: str) -> None:
        self.html.append(f"<{tag}>{escape(text, quote=False)}</{tag}>")
        self.text.append(text)

    def table(self, header: list[str], rows: list[list[str]], linked: bool = False) -> None:
        head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
        body = []
        for row in rows:
            cells = [escape(cell, quote=False) for cell in row]
            if linked:  # a reference table links its first column to the entry
                cells[0] = f'<a href="#{escape(row[0])}"><code>{cells[0]}</code></a>'
            body.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
        self.html.append(
            f'<table class="data"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>"
        )
        self.text += [" ".join(header)] + [" ".join(row) for row in rows]

    def linked_list(self, items: list[tuple[str, str, str]], tag: str = "ul") -> None:
        """Items of (text before, link text, text after), the link in the middle."""
        lis = "".join(
            f'<li>{escape(before, quote=False)}<a href="/{index}">{escape(link, quote=False)}'
            f"</a>{escape(after, quote=False)}</li>"
            for index, (before, link, after) in enumerate(items)
        )
        self.html.append(f"<{tag}>{lis}</{tag}>")
        self.text += ["".join(item) for item in items]

    def index_table(self, columns: list[list[str]]) -> None:
        """A one-row table, each cell a list of linked entries (an index page)."""
        cells = "".join(
            "<td><ul>"
            + "".join(
                f'<li><a href="#{i}">{escape(entry, quote=False)}</a></li>'
                for i, entry in enumerate(column)
            )
            + "</ul></td>"
            for column in columns
        )
        self.html.append(f'<table class="indextable"><tr>{cells}</tr></table>')
        self.text += [entry for column in columns for entry in column]


def known_answer_pages(
    seed: int, count: int, languages: tuple[str, ...] = ("en", "de", "fr", "es", "zh", "ja")
) -> list[KnownPage]:
    """`count` pages cycling through the kinds and languages; the same seed, the same pages."""
    rng = random.Random(seed)
    pages = []
    for number in range(count):
        language = LANGUAGES[languages[(number // len(KINDS)) % len(languages)]]
        kind = KINDS[number % len(KINDS)]
        pages.append(known_answer_page(rng, language, kind, number))
    return pages


def known_answer_page(rng: random.Random, language: Language, kind: str, number: int) -> KnownPage:
    """One page of `kind` (see the module's docstring) in `language`."""
    site = make_site(rng, language, number)
    topic = language.topic(rng)
    title = prose.title(language, rng, topic)
    main = _Main()
    main.block("h1", title)
    if kind in ("article", "article_table"):
        paragraphs = prose.body_paragraphs(language, rng, topic, between(rng, 8, 20))
        table_at = between(rng, 1, len(paragraphs)) if kind == "article_table" else -1
        for index, text in enumerate(paragraphs):
            if index and index % 3 == 0:
                main.block("h2", pick(rng, language.headings))
            if index == table_at:
                main.table(*_data_table(rng, language, topic, between(rng, 4, 10)))
            main.block("p", text)
        if index + 1 == table_at:
            main.table(*_data_table(rng, language, topic, between(rng, 4, 10)))
    elif kind == "data_table":
        main.block("p", prose.paragraph(language, rng, topic, 1))
        main.table(*_data_table(rng, language, topic, between(rng, 15, 45)))
    elif kind == "definition_table":
        main.block("p", prose.paragraph(language, rng, topic, 1))
        main.table(*_definition_table(rng, language, topic, between(rng, 6, 20)), linked=True)
    elif kind == "short_tables":
        for _ in range(between(rng, 3, 6)):
            main.block("h2", pick(rng, language.headings))
            main.block("p", prose.paragraph(language, rng, topic, 1))
            main.table(*_data_table(rng, language, topic, between(rng, 2, 4)))
    elif kind == "index_table":
        main.block("p", prose.paragraph(language, rng, topic, 1))
        main.index_table(
            [
                [_entry(rng, language, topic) for _ in range(between(rng, 8, 30))]
                for _ in range(between(rng, 2, 3))
            ]
        )
    elif kind == "linked_list":
        main.block("p", prose.paragraph(language, rng, topic, 1))
        for _ in range(between(rng, 1, 3)):
            main.block("h2", pick(rng, language.headings))
            main.linked_list(
                [_linked_sentence(rng, language, topic) for _ in range(between(rng, 4, 12))]
            )
    else:
        raise ValueError(f"unknown page kind {kind!r}; kinds: {', '.join(KINDS)}")
    body = (
        '<div class="share"><a href="/share/fb">f</a> <a href="/share/x">x</a> '
        f'<a href="/share/mail">{escape(language.ui["share"])}</a></div>\n'
        "<article>\n"
        + "\n".join(main.html)
        + "\n</article>\n"
        + _comments(rng, language, topic)
        + "\n"
        + _sidebar(rng, language)
    )
    html = _document(rng, language, site, title, body)
    return KnownPage(html, "\n".join(main.text), title, language.code, kind)


def _word(rng: random.Random, language: Language, topic: Topic) -> str:
    entry = pick(rng, topic.words if rng.random() < 0.5 else language.nouns)
    return entry if isinstance(entry, str) else entry[1]


def _data_table(
    rng: random.Random, language: Language, topic: Topic, rows: int
) -> tuple[list[str], list[list[str]]]:
    """A header and `rows` rows: a label, a year, counts and a share in percent."""
    columns = between(rng, 3, 6)
    header = rng.sample(language.headings, min(columns, len(language.headings)))
    columns = len(header)
    body = []
    for _ in range(rows):
        row = [_word(rng, language, topic).capitalize(), str(between(rng, 1850, 2024))]
        while len(row) < columns:
            row.append(
                f"{between(rng, 0, 999)}.{between(rng, 0, 9)} %"
                if rng.random() < 0.3
                else str(between(rng, 1, 99999))
            )
        body.append(row)
    return header, body


def _entry(rng: random.Random, language: Language, topic: Topic) -> str:
    """An index entry: a name and where it is defined."""
    name = f"{_word(rng, language, topic)}_{_word(rng, language, topic)}".lower()
    return f"{name}() ({_word(rng, language, topic)})"


def _linked_sentence(rng: random.Random, language: Language, topic: Topic) -> tuple[str, str, str]:
    """A sentence split around a link on one of its words, and a trailing issue number."""
    sentence = prose.sentences(language, rng, topic, 1)[0]
    issue = f" (#{between(rng, 1000, 99999)})"
    words = sentence.split(" ")
    if len(words) < 3:  # unspaced scripts: link a run of characters
        cut = between(rng, 1, max(1, len(sentence) - 4))
        return sentence[:cut], sentence[cut : cut + 3], sentence[cut + 3 :] + issue
    at = between(rng, 1, len(words) - 2)
    return " ".join(words[:at]) + " ", words[at], " " + " ".join(words[at + 1 :]) + issue


def _definition_table(
    rng: random.Random, language: Language, topic: Topic, rows: int
) -> tuple[list[str], list[list[str]]]:
    """Names like `road_structure` and a sentence saying what each one is."""
    header = rng.sample(language.headings, 2)
    body = []
    for _ in range(rows):
        name = f"{_word(rng, language, topic)}_{_word(rng, language, topic)}".lower()
        body.append([name, prose.sentences(language, rng, topic, 1)[0]])
    return header, body


def _comments(rng: random.Random, language: Language, topic: Topic) -> str:
    posts = []
    for number in range(between(rng, 0, 4)):
        author = escape(language.person(rng))
        text = escape(prose.forum_post(language, rng, topic, between(rng, 1, 3), None))
        posts.append(
            f'<li class="comment" id="comment-{number}"><span class="author">{author}</span>'
            f'<p>{text}</p><a class="reply" href="#reply-{number}">Reply</a></li>'
        )
    if not posts:
        return ""
    heading = '<section class="comments" id="comments"><h3>Comments</h3>'
    return f"{heading}<ol>{''.join(posts)}</ol></section>"


def _sidebar(rng: random.Random, language: Language) -> str:
    lists = []
    for _ in range(between(rng, 1, 3)):
        items = "".join(
            f'<li><a href="/{between(rng, 100, 9999)}">'
            f"{escape(pick(rng, language.headings))} {between(rng, 2, 99)}</a></li>"
            for _ in range(between(rng, 4, 9))
        )
        lists.append(f"<h3>{escape(language.ui['related'])}</h3><ul>{items}</ul>")
    return f'<aside class="sidebar widget-area">{"".join(lists)}</aside>'


def tokens(text: str) -> Counter[str]:
    """Lower-cased word tokens; each Chinese or Japanese character counts as one token.

    Example:
        >>> sorted(tokens("Der Fluss, 12.5 % 東京").elements())
        ['12', '5', 'der', 'fluss', '京', '東']
    """
    found: Counter[str] = Counter()
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word):
            found.update(piece for piece in _CJK_SPLIT.findall(word))
        else:
            found[word] += 1
    return found


def token_scores(answer: str, extracted: str) -> tuple[float, float, float]:
    """Bag-of-tokens (precision, recall, F1) of `extracted` against the known `answer`.

    Example:
        >>> token_scores("a b c d", "a b x")
        (0.6666666666666666, 0.5, 0.5714285714285715)
    """
    truth, found = tokens(answer), tokens(extracted)
    common = sum((truth & found).values())
    if not truth and not found:
        return 1.0, 1.0, 1.0
    precision = common / sum(found.values()) if found else 0.0
    recall = common / sum(truth.values()) if truth else 0.0
    f1 = 2 * precision * recall / (precision + recall) if common else 0.0
    return precision, recall, f1
