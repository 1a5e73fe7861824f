"""`extract`: HTML to its main text, with navigation, footers, banners and scripts removed.

Documents are HTML when their `content_type` metadata says so (the HTML-file and WARC
readers set it) or, without that metadata, when the text itself looks like an HTML page.
Plain text passes through untouched. Extraction uses trafilatura with settings that keep it
deterministic and offline: no deduplication cache shared between documents, no date search
(it depends on today's date), no network.

Example:
    >>> stage = Extract(favor="precision")
    >>> stage.setup()
    >>> html = "<html><head><title>Hi</title></head><body><article><p>"
    >>> doc = Document("a", html + "A long enough paragraph. " * 8 + "</p></article></body></html>",
    ...                "web", {"content_type": "text/html"})
    >>> stage.apply(doc).metadata["title"]
    'Hi'
"""

from __future__ import annotations

import logging
import re
from typing import ClassVar, Literal

from pydantic import Field, PrivateAttr

from mixplane.document import Document, Drop
from mixplane.stages.base import Result, Stage

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# A page starts (after an optional XML declaration, comments and whitespace) with one of
# these; a plain-text document that merely mentions tags does not.
_PAGE_START = re.compile(
    r"\A(?:\s|<\?xml[^>]*>|<!--.*?-->)*<(?:!doctype\s+html|html|head|body)\b",
    re.IGNORECASE | re.DOTALL,
)
# Fragments without <html>: starting with a tag and closing common block elements.
_CLOSING_TAG = re.compile(r"</(?:p|div|span|a|li|ul|ol|table|tr|td|h[1-6]|section|article)>", re.I)
_SNIFF_CHARS = 4096


def looks_like_html(text: str) -> bool:
    """Whether a document without a content type is an HTML page or fragment.

    Example:
        >>> looks_like_html("<!DOCTYPE html><html><body>x</body></html>")
        True
        >>> looks_like_html("Use <b> for bold text.")
        False
    """
    head = text[:_SNIFF_CHARS]
    if _PAGE_START.match(head):
        return True
    stripped = head.lstrip()
    return stripped.startswith("<") and len(_CLOSING_TAG.findall(stripped)) >= 2


class Extract(Stage):
    """HTML to main text (trafilatura); keeps `title` and `url` as metadata.

    Options say how trafilatura trades precision for recall and what it keeps. Documents that
    yield no text are dropped with reason `no_text`; pages larger than `max_html_chars` with
    `html_too_large`; documents of other, non-text content types (images, PDFs found in a
    crawl) with `unsupported_content_type` unless `other_content_types` is `keep`.
    """

    name: ClassVar[str] = "extract"
    adds: ClassVar[tuple[str, ...]] = ("title", "url", "content_type")

    favor: Literal["balanced", "precision", "recall"] = Field(
        "precision", description="precision: less boilerplate, may miss text; recall: the reverse"
    )
    fast: bool = Field(
        False, description="skip the fallback extractors (readability, jusText): faster, less text"
    )
    include_tables: bool = Field(True, description="keep the text of tables")
    include_comments: bool = Field(False, description="keep user comments below an article")
    include_links: bool = Field(False, description="keep link targets (markdown output only)")
    include_formatting: bool = Field(
        False, description="keep bold, italics and headings (markdown output only)"
    )
    output_format: Literal["text", "markdown"] = Field("text", description="form of the text")
    prune_xpath: list[str] = Field(
        default_factory=list, description="XPath expressions of elements to remove first"
    )
    max_html_chars: int = Field(
        5_000_000, gt=0, description="larger pages are dropped (html_too_large), not parsed"
    )
    other_content_types: Literal["keep", "drop"] = Field(
        "drop", description="what to do with documents whose content type is not text"
    )
    detect_html: bool = Field(
        True, description="treat documents without content_type as HTML when they look like it"
    )

    _options: object | None = PrivateAttr(None)

    def setup(self) -> None:
        from trafilatura.settings import Extractor

        # trafilatura logs a warning for every page it finds empty; drops are recorded anyway.
        library_log = logging.getLogger("trafilatura")
        if library_log.level == logging.NOTSET:
            library_log.setLevel(logging.ERROR)
        markdown = self.output_format == "markdown"
        self._options = Extractor(
            output_format="markdown" if markdown else "txt",
            fast=self.fast,
            precision=self.favor == "precision",
            recall=self.favor == "recall",
            comments=self.include_comments,
            formatting=self.include_formatting and markdown,
            links=self.include_links and markdown,
            images=False,
            tables=self.include_tables,
            dedup=False,
            with_metadata=False,
        )

    def apply(self, doc: Document) -> Result:
        content_type = doc.metadata.get("content_type")
        if content_type:
            kind = str(content_type).split(";")[0].strip().lower()
            if kind not in HTML_TYPES:
                if kind.startswith("text/") or self.other_content_types == "keep":
                    return doc
                return Drop("unsupported_content_type", {"content_type": kind})
        elif not (self.detect_html and looks_like_html(doc.text)):
            return doc
        if len(doc.text) > self.max_html_chars:
            return Drop("html_too_large", {"chars": len(doc.text), "max": self.max_html_chars})
        return self._extract(doc)

    def _extract(self, doc: Document) -> Result:
        import trafilatura
        from trafilatura.metadata import extract_title, extract_url

        if self._options is None:
            self.setup()
        tree = trafilatura.load_html(doc.text)
        if tree is None:
            return Drop("no_text", {"why": "not parseable as HTML"})
        # Title and canonical URL come from the full page, before extraction prunes it.
        title = extract_title(tree)
        url = doc.metadata.get("url") or extract_url(tree)
        text = trafilatura.extract(
            tree, options=self._options, prune_xpath=self.prune_xpath or None
        )
        if not text or not text.strip():
            return Drop("no_text")
        doc.text = text
        doc.metadata["title"] = title.strip() if title else None
        doc.metadata["url"] = url
        doc.metadata["content_type"] = (
            "text/markdown" if self.output_format == "markdown" else "text/plain"
        )
        return doc
