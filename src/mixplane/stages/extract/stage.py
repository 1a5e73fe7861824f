"""The `extract` stage: options, content-type routing and drop reasons; the engines do the
parsing."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, PrivateAttr, model_validator

from mixplane.document import Document, Drop
from mixplane.stages.base import Result, Stage
from mixplane.stages.extract.detect import HTML_TYPES, looks_like_html
from mixplane.stages.extract.resiliparse_engine import ResiliparseEngine
from mixplane.stages.extract.trafilatura_engine import TrafilaturaEngine

ENGINES = {"trafilatura": TrafilaturaEngine, "resiliparse": ResiliparseEngine}
# Options only trafilatura can honour, and why resiliparse cannot.
_TRAFILATURA_ONLY = {
    "favor": "it has one main-content heuristic, no precision/recall trade-off",
    "fast": "it has no fallback extractors to skip",
    "prune_xpath": "it takes no XPath",
}


class Extract(Stage):
    """HTML to main text; keeps `title` and `url` as metadata.

    `engine` picks the library: `trafilatura` (default; thorough, 4-20 ms of CPU a page at
    the median) or `resiliparse` (6-18x less CPU, as accurate or more on the known-answer
    pages of docs/benchmarks.md, tables and linked lists included). Other options say what
    the text keeps; an option the chosen engine cannot honour is a ConfigError, never
    ignored. Documents that yield no text are dropped with reason `no_text`; pages larger
    than `max_html_chars` with `html_too_large`; documents of other, non-text content types
    (images, PDFs found in a crawl) with `unsupported_content_type` unless
    `other_content_types` is `keep`. The `title` is the page's `<title>`: as written with
    resiliparse, while trafilatura often trims the site's name from it ("Station in Adelaide
    | Kaly Info" -> "Station in Adelaide").

    Example:
        >>> stage = Extract(engine="resiliparse")
        >>> html = "<html><head><title>Hi</title></head><body><article><p>"
        >>> html += "A long enough paragraph. " * 8 + "</p></article></body></html>"
        >>> doc = Document("a", html, "web", {"content_type": "text/html"})
        >>> stage.apply(doc).metadata["title"]
        'Hi'
    """

    name: ClassVar[str] = "extract"
    adds: ClassVar[tuple[str, ...]] = ("title", "url", "content_type")

    engine: Literal["trafilatura", "resiliparse"] = Field(
        "trafilatura",
        description="trafilatura: thorough; resiliparse: 6-18x less CPU, tables put back",
    )
    favor: Literal["balanced", "precision", "recall"] = Field(
        "precision",
        description="precision: less boilerplate, may miss text; recall: the reverse "
        "(trafilatura only)",
    )
    fast: bool = Field(
        False,
        description="skip the fallback extractors (readability, jusText): faster, less text "
        "(trafilatura only)",
    )
    include_tables: bool = Field(True, description="keep the text of tables")
    include_comments: bool = Field(False, description="keep user comments below an article")
    include_links: bool = Field(
        False,
        description="keep link targets (trafilatura: markdown output only; resiliparse: "
        "after the link text)",
    )
    include_formatting: bool = Field(
        False, description="keep bold, italics and headings (markdown output, trafilatura only)"
    )
    output_format: Literal["text", "markdown"] = Field(
        "text", description="form of the text (markdown: trafilatura only)"
    )
    prune_xpath: list[str] = Field(
        default_factory=list,
        description="XPath expressions of elements to remove first (trafilatura only)",
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

    _engine: TrafilaturaEngine | ResiliparseEngine | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _engine_honours_options(self) -> Extract:
        if self.engine == "trafilatura":
            return self
        for option, why in _TRAFILATURA_ONLY.items():
            if option in self.model_fields_set and getattr(self, option):
                raise ValueError(
                    f"{option!r} is a trafilatura option and engine 'resiliparse' cannot "
                    f"honour it ({why}): remove it or use engine: trafilatura"
                )
        if self.output_format == "markdown" or self.include_formatting:
            raise ValueError(
                "engine 'resiliparse' writes plain text only (output_format: markdown and "
                "include_formatting need engine: trafilatura)"
            )
        return self

    def setup(self) -> None:
        self._engine = ENGINES[self.engine](self)

    def provenance(self) -> dict[str, str]:
        """The engine and its library's version, for the dataset's manifest.

        Example:
            >>> Extract(engine="resiliparse").provenance()["library"]
            'resiliparse'
        """
        engine = ENGINES[self.engine]
        return {"engine": self.engine, "library": engine.library, "version": engine.version()}

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
        if self._engine is None:
            self.setup()
        page = self._engine.extract(doc.text)
        if page is None:
            return Drop("no_text", {"why": "not parseable as HTML"})
        if not page.text.strip():
            return Drop("no_text")
        doc.text = page.text
        doc.metadata["title"] = page.title
        doc.metadata["url"] = doc.metadata.get("url") or page.url
        doc.metadata["content_type"] = (
            "text/markdown" if self.output_format == "markdown" else "text/plain"
        )
        return doc
