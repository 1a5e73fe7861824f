"""`license`: the licence each document was published under, as an SPDX identifier.

Sources, looked at in the order of `precedence` (by default the order below); the first
whose value names a licence `spdx.spdx_id` knows wins:

1. `input`: the input's declaration in the config (`license: CC-BY-4.0` on an input, which
   the reader passes on as the `declared_license` field);
2. `record`: the record's own field (`record_key`, default `license`: a JSON Lines or
   Parquet column, such as Wikipedia dumps and code corpora carry);
3. `dataset_card`: for a saved Hugging Face dataset (`hf_disk`), the licence its card
   declares (the `license` of its `dataset_info.json`, kept as `dataset_license`);
4. `rel_license`: `<link rel="license" href>` and `<a rel="license" href>` in the HTML;
5. `meta`: `<meta>` tags named in `meta_names` (`license`, `dcterms.license`, `dc.rights`...);
6. `schema_org`: schema.org `license` in JSON-LD or microdata;
7. `cc_link`: any link to a Creative Commons licence or public-domain deed (a badge in a
   footer, without `rel="license"`).

Each kept document gets `license` (the SPDX id, `PDM` for public domain, or `unknown`),
`license_source` (the source it came from; None when no source said anything) and
`license_raw` (the value as written, at most 200 characters). When sources speak but none
names a known licence ("All rights reserved" in `dc.rights`), `license` is `unknown` and
the source is the first that spoke. Nothing is dropped.

The HTML sources read the document's text while it is still HTML, so place the stage before
`extract`; after it (or on plain text) only `input` and `record` are read.

Example:
    >>> from mixplane.document import Document
    >>> html = ('<html><head></head><body><p>Text</p><a rel="license" '
    ...         'href="https://creativecommons.org/licenses/by-sa/4.0/">CC</a></body></html>')
    >>> doc = License().apply(Document("a", html, "web", {"content_type": "text/html"}))
    >>> doc.metadata["license"], doc.metadata["license_source"]
    ('CC-BY-SA-4.0', 'rel_license')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Literal

from pydantic import Field, PrivateAttr, field_validator

from mixplane.document import Document
from mixplane.stages.base import Result, Stage
from mixplane.stages.extract.detect import HTML_TYPES, looks_like_html
from mixplane.stages.governance import DECLARED_KEY
from mixplane.stages.governance.page import PageSignals, read_page
from mixplane.stages.governance.spdx import spdx_id

LicenseSource = Literal[
    "input", "record", "dataset_card", "rel_license", "meta", "schema_org", "cc_link"
]
SOURCES: tuple[str, ...] = (
    "input", "record", "dataset_card", "rel_license", "meta", "schema_org", "cc_link"
)  # fmt: skip
# The metadata field each source that is not the page reads (`record`: `record_key`).
FIELDS = {"input": DECLARED_KEY, "dataset_card": "dataset_license"}
PAGE_SOURCES = frozenset({"rel_license", "meta", "schema_org", "cc_link"})
UNKNOWN = "unknown"
RAW_CHARS = 200


def page_html(doc: Document) -> str | None:
    """The document's text when it is an HTML page (by content type, or by its look when it
    has none); None for plain text, as after `extract`."""
    content_type = doc.metadata.get("content_type")
    if content_type:
        kind = str(content_type).split(";")[0].strip().lower()
        return doc.text if kind in HTML_TYPES else None
    return doc.text if looks_like_html(doc.text) else None


class License(Stage):
    """Annotates each document with its licence; see the module doc."""

    name: ClassVar[str] = "license"
    adds: ClassVar[tuple[str, ...]] = ("license", "license_source", "license_raw")

    precedence: list[LicenseSource] = Field(
        default_factory=lambda: list(SOURCES),
        description="the sources looked at, first to last (leave one out to ignore it)",
    )
    record_key: str = Field("license", description="the record field holding a licence")
    meta_names: list[str] = Field(
        default_factory=lambda: [
            "license",
            "dcterms.license",
            "dc.license",
            "dc.rights",
            "dcterms.rights",
        ],  # fmt: skip
        description="<meta> names (or properties) whose content names the licence",
    )

    _words: tuple[str, ...] | None = PrivateAttr(None)

    @field_validator("precedence")
    @classmethod
    def _each_once(cls, sources: list[str]) -> list[str]:
        if not sources:
            raise ValueError("name at least one source")
        repeated = sorted({source for source in sources if sources.count(source) > 1})
        if repeated:
            raise ValueError(f"sources named twice: {', '.join(repeated)}")
        return sources

    @field_validator("meta_names")
    @classmethod
    def _lowercase(cls, names: list[str]) -> list[str]:
        return [name.strip().lower() for name in names]

    def _page_words(self) -> tuple[str, ...]:
        """What a page must hold to be parsed: a licence word, a Creative Commons link or one
        of the `meta_names` ("rights" alone is in most footers)."""
        if self._words is None:
            self._words = tuple(dict.fromkeys(["license", "licence", "creativecommons",
                                               *self.meta_names]))  # fmt: skip
        return self._words

    def apply(self, doc: Document) -> Result:
        first: tuple[str, Any] | None = None
        for source, value in self.candidates(doc):
            found = spdx_id(value)
            if found is not None:
                return _annotate(doc, found, source, value)
            first = first or (source, value)
        if first is None:
            return _annotate(doc, UNKNOWN, None, None)
        return _annotate(doc, UNKNOWN, *first)

    def candidates(self, doc: Document) -> Iterator[tuple[str, Any]]:
        """`(source, value)` for every licence statement, in the order of precedence."""
        page: PageSignals | None = None
        for source in self.precedence:
            if source in PAGE_SOURCES:
                if page is None:
                    html = page_html(doc)
                    page = read_page(html, self._page_words()) if html else PageSignals()
                yield from ((source, value) for value in self._page_values(page, source))
            else:
                key = FIELDS.get(source, self.record_key)
                yield from ((source, value) for value in _values(doc.metadata.get(key)))

    def _page_values(self, page: PageSignals, source: str) -> list[Any]:
        if source == "rel_license":
            return page.rel_license
        if source == "meta":
            return [value for name in self.meta_names for value in page.meta.get(name, ())]
        if source == "schema_org":
            return page.schema_org
        return page.cc_links


def _values(value: Any) -> list[Any]:
    """A field's licence values: a string, or the strings of a list (Hugging Face cards)."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str) and item.strip()]
    return []


def _annotate(doc: Document, spdx: str, source: str | None, raw: Any) -> Document:
    doc.metadata["license"] = spdx
    doc.metadata["license_source"] = source
    doc.metadata["license_raw"] = None if raw is None else str(raw).strip()[:RAW_CHARS]
    return doc
