"""The resiliparse engine: a compiled DOM walk with main-content heuristics; about a
millisecond a page. Its heuristics drop or keep only a line of some table-heavy pages, so
what it left out is put back from the DOM (`recover`)."""

from __future__ import annotations

from importlib.metadata import version
from typing import TYPE_CHECKING

from mixplane.stages.extract.engine import Extracted
from mixplane.stages.extract.recover import with_recovered_content

if TYPE_CHECKING:
    from mixplane.stages.extract.stage import Extract


class ResiliparseEngine:
    """Main text, title and canonical URL of a page with resiliparse.

    Example:
        >>> from mixplane.stages.extract import Extract
        >>> engine = ResiliparseEngine(Extract(engine="resiliparse"))
        >>> body = "<p>" + "A long enough paragraph. " * 8 + "</p>"
        >>> engine.extract("<html><head><title>Hi</title></head><body>" + body).title
        'Hi'
    """

    library = "resiliparse"

    def __init__(self, options: Extract, recover: bool = True) -> None:
        # recover=False: resiliparse's main-content text as it is (to measure the recovery).
        self._recover = recover
        self._settings = {
            "main_content": True,
            "preserve_formatting": True,
            "list_bullets": True,
            "alt_texts": False,  # trafilatura's engine keeps no images either
            "links": options.include_links,
            "comments": options.include_comments,
            "skip_elements": [] if options.include_tables else ["table"],
        }

    @staticmethod
    def version() -> str:
        return version("resiliparse")

    def extract(self, html: str) -> Extracted:
        """The page's main text (empty when it has none), title and canonical URL."""
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        tree = HTMLTree.parse(html)
        text = extract_plain_text(tree, **self._settings)
        if self._recover:
            text = with_recovered_content(tree, text, self._settings)
        title = (tree.title or "").strip() or None
        return Extracted(text, title, _canonical_url(tree))


def _canonical_url(tree) -> str | None:
    """The page's canonical link when it is absolute (as trafilatura reads it: og:url is
    not a canonical URL; a protocol-relative link gets https)."""
    head = tree.head
    link = head.query_selector('link[rel="canonical"]') if head is not None else None
    url = (link.getattr("href") or "").strip() if link is not None else ""
    if url.startswith("//"):
        url = "https:" + url
    return url if url.startswith(("https://", "http://")) else None
