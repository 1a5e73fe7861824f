"""`gopher_repetition`: the repetition rules of the Gopher paper (Rae et al., 2021).

Repeated paragraphs and lines are measured by count and by characters; repeated word n-grams
by the characters they cover: for n = 2..4 the single most frequent n-gram, for n = 5..10 all
n-grams that repeat an earlier one. Character ratios are over the whole text's length.

Example (YAML):
    - gopher_repetition: {max_duplicate_line_ratio: 0.2, max_top_ngram_char_ratio: {2: 0.25}}
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from pydantic import Field

from mixplane.document import Document
from mixplane.stages.quality.base import Check, QualityFilter, at_most, ratio
from mixplane.stages.text import TextAnalysis

TOP_NGRAM_LIMITS = {2: 0.2, 3: 0.18, 4: 0.16}
DUPLICATE_NGRAM_LIMITS = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}


class GopherRepetition(QualityFilter):
    """Drops documents with too many repeated paragraphs, lines or word n-grams."""

    name = "gopher_repetition"
    signal_prefix: ClassVar[str] = "gopher_"
    adds = (
        "gopher_dup_para_ratio",
        "gopher_dup_para_char_ratio",
        "gopher_dup_line_ratio",
        "gopher_dup_line_char_ratio",
        *(f"gopher_top_{n}gram_char_ratio" for n in TOP_NGRAM_LIMITS),
        *(f"gopher_dup_{n}gram_char_ratio" for n in DUPLICATE_NGRAM_LIMITS),
    )

    max_duplicate_paragraph_ratio: float | None = Field(
        0.3, description="drop documents where a larger share of paragraphs repeats an earlier one"
    )
    max_duplicate_paragraph_char_ratio: float | None = Field(
        0.2, description="drop documents where repeated paragraphs hold a larger share of chars"
    )
    max_duplicate_line_ratio: float | None = Field(
        0.3, description="drop documents where a larger share of lines repeats an earlier one"
    )
    max_duplicate_line_char_ratio: float | None = Field(
        0.2, description="drop documents where repeated lines hold a larger share of characters"
    )
    max_top_ngram_char_ratio: dict[int, float] = Field(
        default_factory=lambda: dict(TOP_NGRAM_LIMITS),
        description="per n: drop documents whose most frequent word n-gram covers a larger "
        "share of characters",
    )
    max_duplicate_ngram_char_ratio: dict[int, float] = Field(
        default_factory=lambda: dict(DUPLICATE_NGRAM_LIMITS),
        description="per n: drop documents where repeated word n-grams cover a larger share "
        "of characters",
    )

    def checks(self, doc: Document, analysis: TextAnalysis) -> Iterator[Check]:
        text = doc.text
        if not text:
            yield Check("dup_para_ratio", 0.0, None, True, "empty", final=True)
            return
        length = len(text)
        for kind, name, reason, count_limit, char_limit in (
            (
                "paragraphs",
                "para",
                "duplicate_paragraph",
                self.max_duplicate_paragraph_ratio,
                self.max_duplicate_paragraph_char_ratio,
            ),
            (
                "newline_lines",
                "line",
                "duplicate_line",
                self.max_duplicate_line_ratio,
                self.max_duplicate_line_char_ratio,
            ),
        ):
            repeats, chars = analysis.duplicates(kind)
            items = len(getattr(analysis, kind))
            yield at_most(f"dup_{name}_ratio", ratio(repeats, items), count_limit, reason + "s")
            yield at_most(f"dup_{name}_char_ratio", chars / length, char_limit, reason + "_chars")
        for n, limit in sorted(self.max_top_ngram_char_ratio.items()):
            share = analysis.top_ngram_chars(n) / length
            yield at_most(f"top_{n}gram_char_ratio", share, limit, f"top_{n}gram")
        for n, limit in sorted(self.max_duplicate_ngram_char_ratio.items()):
            share = analysis.duplicate_ngram_chars(n) / length
            yield at_most(f"dup_{n}gram_char_ratio", share, limit, f"duplicate_{n}grams")
