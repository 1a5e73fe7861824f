"""Tables and lists resiliparse's main-content heuristics left out, put back.

resiliparse scores blocks by their link density and class names, and drops some blocks that
are the page's content: a data table of short cells, a list of linked entries, a reference
table of linked names. When its main-content text holds much less than the plain text of the
page's main container (`<main>`, `[role=main]`, `<article>`, else `<body>`) without the
elements that are boilerplate by their tag or role (navigation, header, footer, asides,
forms, comment sections), the container's text replaces it: on those pages losing the
content costs more than keeping a little boilerplate. The threshold was measured on the
known-answer set (bench/extract/quality.py).
"""

from __future__ import annotations

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

#: Main-content text shorter than this share of the container's text is replaced by it.
KEPT_SHARE = 0.6
_CONTAINERS = ("main", '[role="main"]', "article")
BOILERPLATE = [
    "nav", "header", "footer", "aside", "form", "button", "noscript",
    '[role="navigation"]', '[role="banner"]', '[role="contentinfo"]', '[role="complementary"]',
    '[role="search"]', "#comments", ".comments",
]  # fmt: skip


def container_text(tree: HTMLTree, links: bool, comments: bool) -> str:
    """Plain text of the page's main container without boilerplate elements."""
    node = None
    for selector in _CONTAINERS:
        node = tree.document.query_selector(selector)
        if node is not None:
            break
    source = HTMLTree.parse(node.html) if node is not None else tree
    skip = BOILERPLATE if not comments else [s for s in BOILERPLATE if "comments" not in s]
    return extract_plain_text(
        source,
        main_content=False,
        preserve_formatting=True,
        list_bullets=True,
        alt_texts=False,
        links=links,
        skip_elements=skip,
    )


def with_recovered_content(tree: HTMLTree, text: str, links: bool, comments: bool) -> str:
    """`text`, or the container's text when `text` kept less than KEPT_SHARE of its words."""
    whole = container_text(tree, links, comments)
    if len(text.split()) < KEPT_SHARE * len(whole.split()):
        return whole
    return text
