"""`fineweb`: the extra line rules FineWeb added to the Gopher and C4 rules (Penedo et al.,
2024): enough lines ending in punctuation, not too many short lines, almost no repeated
lines, and not too many line breaks per word (lists and menus).

Lines are the non-blank parts between newline characters; their ends and lengths are taken
as they are, without stripping.

Example (YAML):
    - fineweb: {min_punctuated_lines_ratio: 0.2}
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from pydantic import Field

from mixplane.document import Document
from mixplane.stages.quality.base import Check, QualityFilter, at_least, at_most, ratio
from mixplane.stages.text import TextAnalysis
from mixplane.stages.text.chars import SENTENCE_TERMINALS


class FineWeb(QualityFilter):
    """Drops documents with few punctuated lines, many short or repeated lines, or many line
    breaks per word."""

    name = "fineweb"
    signal_prefix: ClassVar[str] = "fineweb_"
    adds = (
        "fineweb_line_punct_ratio",
        "fineweb_short_line_ratio",
        "fineweb_dup_line_char_ratio",
        "fineweb_newline_ratio",
    )

    min_punctuated_lines_ratio: float | None = Field(
        0.12, description="drop documents where a smaller share of lines ends in punctuation"
    )
    keep_without_punctuated_lines: bool = Field(
        False, description="exempt documents with no punctuated line at all from that rule"
    )
    line_end_characters: list[str] | None = Field(
        None, description="characters counting as line-end punctuation; default: all "
        "sentence-final marks of Unicode (. ! ? 。 ...)",
    )  # fmt: skip
    short_line_length: int = Field(
        30, description="lines of at most this many characters count as short"
    )
    max_short_lines_ratio: float | None = Field(
        0.67, description="drop documents where a larger share of lines is short"
    )
    max_duplicate_line_char_ratio: float | None = Field(
        0.01, description="drop documents where repeated lines hold a larger share of the "
        "characters (newlines not counted)",
    )  # fmt: skip
    max_newline_ratio: float | None = Field(
        0.3, description="drop documents with more newline characters per word than this"
    )

    def checks(self, doc: Document, analysis: TextAnalysis) -> Iterator[Check]:
        lines = analysis.nonblank_lines
        if not lines:
            yield Check("line_punct_ratio", 0.0, None, True, "empty", final=True)
            return
        ends = tuple(self.line_end_characters or SENTENCE_TERMINALS)
        punctuated = ratio(sum(1 for line in lines if line.endswith(ends)), len(lines))
        check = at_least(
            "line_punct_ratio", punctuated, self.min_punctuated_lines_ratio,
            "too_few_punctuated_lines",
        )  # fmt: skip
        if check.failed and punctuated == 0 and self.keep_without_punctuated_lines:
            check = Check(check.signal, punctuated, check.limit, False, check.reason)
        yield check
        limit = self.short_line_length
        short = ratio(sum(1 for line in lines if len(line) <= limit), len(lines))
        yield at_most("short_line_ratio", short, self.max_short_lines_ratio, "too_many_short_lines")
        text = doc.text
        characters = len(text) - text.count("\n")
        repeated = ratio(analysis.duplicates("nonblank_lines")[1], characters)
        yield at_most(
            "dup_line_char_ratio", repeated, self.max_duplicate_line_char_ratio,
            "duplicate_line_chars",
        )  # fmt: skip
        newlines = ratio(text.count("\n"), analysis.word_stats.tokens)
        yield at_most("newline_ratio", newlines, self.max_newline_ratio, "too_many_newlines")
