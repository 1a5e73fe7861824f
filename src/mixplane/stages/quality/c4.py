"""`c4`: the line and document rules used to build C4 (Raffel et al., 2020).

Each line is judged on its own and removed when it has a word longer than `max_word_length`,
does not end in terminal punctuation (or ends in an ellipsis), has fewer than
`min_words_per_line` words, mentions "javascript" or a cookie/terms-of-use phrase. The whole
document is dropped when a kept line contains "lorem ipsum" or a curly brace, or when the
kept lines hold fewer than `min_sentences` sentences. In filter mode the kept document's text
becomes its kept lines (`rewrite_text: false` keeps the text as it was).

Words of a line are its whitespace-separated parts; in text written without spaces
(Chinese, Japanese, Thai) they are its characters.

Example (YAML):
    - c4: {min_sentences: 3, drop_lines_without_end_punctuation: false}
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from pydantic import Field, PrivateAttr

from mixplane.document import Document
from mixplane.stages.quality.base import Check, QualityFilter, at_least, ratio
from mixplane.stages.text import TextAnalysis, count_sentences, split_units

POLICY_PHRASES = [
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
]
_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")


@dataclass
class _Scan:
    kept: list[str] = field(default_factory=list)
    sentences: int = 0
    lines: int = 0
    lorem_ipsum: bool = False
    curly_bracket: bool = False
    failure: str = ""


class C4(QualityFilter):
    """Removes unlikely lines and drops documents with placeholder text, code or too few
    sentences."""

    name = "c4"
    signal_prefix: ClassVar[str] = "c4_"
    adds = ("c4_lorem_ipsum", "c4_curly_bracket", "c4_kept_lines_ratio", "c4_sentences")

    max_word_length: int | None = Field(
        1000, description="remove lines with a word longer than this many characters"
    )
    remove_citations: bool = Field(
        True, description="delete Wikipedia-style citation marks like [1], [edit] from lines"
    )
    drop_lines_without_end_punctuation: bool = Field(
        True, description="remove lines not ending in end_punctuation, or ending in '...'"
    )
    end_punctuation: list[str] = Field(
        default_factory=lambda: [".", "?", "!", '"', "'"],
        description="characters a line must end with to be kept",
    )
    min_words_per_line: int | None = Field(3, description="remove lines with fewer words than this")
    drop_lorem_ipsum: bool = Field(
        True, description="drop documents with a kept line containing 'lorem ipsum'"
    )
    drop_javascript_lines: bool = Field(True, description="remove lines mentioning 'javascript'")
    drop_curly_bracket: bool = Field(
        True, description="drop documents with a kept line containing '{'"
    )
    drop_policy_lines: bool = Field(
        True, description="remove lines containing one of policy_phrases"
    )
    policy_phrases: list[str] = Field(
        default_factory=lambda: list(POLICY_PHRASES),
        description="lowercase phrases marking cookie, privacy and terms-of-use notices",
    )
    min_sentences: int | None = Field(
        5, description="drop documents whose kept lines hold fewer sentences than this"
    )
    rewrite_text: bool = Field(
        True, description="in filter mode, replace the text by its kept lines"
    )
    # The kept lines of the document being judged, for `keep` to write back.
    _kept_lines: list[str] = PrivateAttr(default_factory=list)

    def _scan(self, analysis: TextAnalysis, stop_at_failure: bool) -> _Scan:
        scan = _Scan()
        ends = tuple(self.end_punctuation)
        policy = self.policy_phrases
        for raw in analysis.lines:
            scan.lines += 1
            line = raw.strip()
            words = split_units(line) if analysis.unspaced else line.split()
            if self.max_word_length is not None and any(
                len(word) > self.max_word_length for word in words
            ):
                continue
            if self.remove_citations:
                line = _CITATION.sub("", line)
            if self.drop_lines_without_end_punctuation and (
                not line.endswith(ends) or line.endswith("...")
            ):
                continue
            if self.min_words_per_line is not None and len(words) < self.min_words_per_line:
                continue
            lowered = line.lower()
            if "lorem ipsum" in lowered:
                scan.lorem_ipsum = True
                if self.drop_lorem_ipsum and not scan.failure:
                    scan.failure = "lorem_ipsum"
                    if stop_at_failure:
                        return scan
            if self.drop_javascript_lines and "javascript" in lowered:
                continue
            if "{" in line:
                scan.curly_bracket = True
                if self.drop_curly_bracket and not scan.failure:
                    scan.failure = "curly_bracket"
                    if stop_at_failure:
                        return scan
            if self.drop_policy_lines and any(phrase in lowered for phrase in policy):
                continue
            if self.min_sentences is not None:
                scan.sentences += count_sentences(line, analysis.unspaced)
            scan.kept.append(line)
        return scan

    def checks(self, doc: Document, analysis: TextAnalysis) -> Iterator[Check]:
        scan = self._scan(analysis, stop_at_failure=self.mode == "filter")
        yield Check("lorem_ipsum", scan.lorem_ipsum, None, scan.failure == "lorem_ipsum",
                    "lorem_ipsum")  # fmt: skip
        yield Check("curly_bracket", scan.curly_bracket, None,
                    scan.failure == "curly_bracket", "curly_bracket")  # fmt: skip
        yield Check("kept_lines_ratio", ratio(len(scan.kept), scan.lines), None, False, "")
        yield at_least("sentences", scan.sentences, self.min_sentences, "too_few_sentences")
        self._kept_lines = scan.kept

    def keep(self, doc: Document, analysis: TextAnalysis) -> Document:
        if self.rewrite_text:
            doc.text = "\n".join(self._kept_lines).strip()
        return doc
