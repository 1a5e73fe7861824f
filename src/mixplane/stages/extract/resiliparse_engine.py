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
    """The page's own URL as it declares it: canonical link, else og:url."""
    head = tree.head
    if head is None:
        return None
    for selector, attribute in (
        ('link[rel="canonical"]', "href"),
        ('meta[property="og:url"]', "content"),
    ):
        element = head.query_selector(selector)
        value = element.getattr(attribute) if element is not None else None
        if value and value.strip():
            return value.strip()
    return None
