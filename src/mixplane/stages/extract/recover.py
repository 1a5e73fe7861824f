"""Tables and lists resiliparse's main-content heuristics left out, put back.

resiliparse scores blocks by their link density and class names, and drops some blocks that
are the page's content: a data table of short cells, a list of linked entries, a reference
table of linked names. When its main-content text holds much less than the plain text of the
page's main container (`<main>`, `[role=main]`, `<article>`, else `<body>`) without the
elements that are boilerplate by their tag or role (navigation, header, footer, asides,
forms, comment sections), the container's text replaces it: on those pages losing the
content costs more than keeping a little boilerplate. bench/extract/quality.py sweeps the
threshold: on the synthetic known-answer pages any value from 0.4 to 0.9 gives the same F1
(what resiliparse drops, it drops nearly whole); on real manual pages the table-heavy ones
stay within 0.006 of their best F1 from 0.3 to 0.9, and values above 0.6 raise the others'
F1 by 0.002 to 0.004 only by moving towards the container text their known answer is.
"""

from __future__ import annotations

from typing import Any

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


def main_container(tree: HTMLTree):
    """The page's main container: the first of `<main>`, `[role=main]`, `<article>`, else
    `<body>` (None for a page without one)."""
    for selector in _CONTAINERS:
        node = tree.document.query_selector(selector)
        if node is not None:
            return node
    return tree.body


def container_text(tree: HTMLTree, settings: dict[str, Any]) -> str:
    """Plain text of the page's main container without boilerplate elements; `settings`
    are the main-content extraction's (links, comments, elements to skip)."""
    node = main_container(tree)
    source = HTMLTree.parse(node.html) if node is not None and node.tag != "body" else tree
    skip = [s for s in BOILERPLATE if not (settings["comments"] and "comments" in s)]
    return extract_plain_text(
        source,
        **{**settings, "main_content": False, "skip_elements": skip + settings["skip_elements"]},
    )


def with_recovered_content(tree: HTMLTree, text: str, settings: dict[str, Any]) -> str:
    """`text`, or the container's text when `text` kept less than KEPT_SHARE of its words."""
    node = main_container(tree)
    if node is None or not lost_content(text, node.text):
        # The container's whole text (boilerplate and all) bounds its extracted text: when
        # `text` holds enough of it, the second extraction is not needed.
        return text
    whole = container_text(tree, settings)
    return whole if lost_content(text, whole) else text


def lost_content(text: str, whole: str) -> bool:
    """Whether main-content `text` kept less than KEPT_SHARE of the container's words.

    Example:
        >>> lost_content("Prices", "Prices Name Value Row1 3.5 Row2 7.0")
        True
    """
    return len(text.split()) < KEPT_SHARE * len(whole.split())
