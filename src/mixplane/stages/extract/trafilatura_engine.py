"""The trafilatura engine: thorough, with fallback extractors; 4 to 20 ms of CPU a page
(medians in docs/benchmarks.md).

Settings keep it deterministic and offline: no deduplication cache shared between
documents, no date search (it depends on today's date), no network.
"""

from __future__ import annotations

import logging
from importlib.metadata import version
from typing import TYPE_CHECKING

from mixplane.stages.extract.engine import Extracted

if TYPE_CHECKING:
    from mixplane.stages.extract.stage import Extract


class TrafilaturaEngine:
    """Main text, title and canonical URL of a page with trafilatura.

    Example:
        >>> from mixplane.stages.extract import Extract
        >>> engine = TrafilaturaEngine(Extract())
        >>> body = "<p>" + "A long enough paragraph. " * 8 + "</p>"
        >>> engine.extract("<html><head><title>Hi</title></head><body>" + body).title
        'Hi'
    """

    library = "trafilatura"

    def __init__(self, options: Extract) -> None:
        from trafilatura.settings import Extractor

        # trafilatura logs a warning for every page it finds empty; drops are recorded anyway.
        library_log = logging.getLogger("trafilatura")
        if library_log.level == logging.NOTSET:
            library_log.setLevel(logging.ERROR)
        markdown = options.output_format == "markdown"
        self._prune_xpath = options.prune_xpath or None
        self._options = Extractor(
            output_format="markdown" if markdown else "txt",
            fast=options.fast,
            precision=options.favor == "precision",
            recall=options.favor == "recall",
            comments=options.include_comments,
            formatting=options.include_formatting and markdown,
            links=options.include_links and markdown,
            images=False,
            tables=options.include_tables,
            dedup=False,
            with_metadata=False,
        )

    @staticmethod
    def version() -> str:
        return version("trafilatura")

    def extract(self, html: str) -> Extracted | None:
        """The page's main text, or None when it is not parseable as HTML."""
        import trafilatura
        from trafilatura.metadata import extract_title, extract_url

        tree = trafilatura.load_html(html)
        if tree is None:
            return None
        # Title and canonical URL come from the full page, before extraction prunes it.
        title = extract_title(tree)
        url = extract_url(tree)
        text = trafilatura.extract(tree, options=self._options, prune_xpath=self._prune_xpath)
        return Extracted(text or "", title.strip() if title else None, url)
