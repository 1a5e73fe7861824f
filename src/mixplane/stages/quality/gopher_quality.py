"""`gopher_quality`: the document-level quality rules of the Gopher paper (Rae et al., 2021).

Defaults are the published thresholds as the usual reference implementation applies them.
Words are tokens with at least one character that is not punctuation; ratios "per token"
count punctuation tokens too (so the alphabetic-words rule counts a '.', '(' or '=' token
against a text, as datatrove does: technical prose full of code and numbers fails it). For
text written without spaces (Chinese, Japanese, Thai) the words are single characters, so
the mean word length bounds are not applied to it.

Stop words follow the document's `language` (run `langid` first): each language has its own
list (`stop_words.STOP_WORDS`), as FineWeb-2 has; a document without `language` gets the
paper's English words, and one whose language has no list is not checked for stop words
(`gopher_stop_words_skipped` says why) rather than dropped. `stop_words` sets one list for
every document, `stop_words_by_language` lists per language, and `language_aware: false`
uses the English words for all, as the paper and datatrove do.

Example (YAML):
    - gopher_quality: {min_words: 100, min_stop_words: 3}
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from pydantic import Field

from mixplane.document import Document
from mixplane.stages.quality.base import Check, QualityFilter, at_least, at_most, ratio
from mixplane.stages.quality.stop_words import STOP_WORDS
from mixplane.stages.text import TextAnalysis
from mixplane.stages.text.scripts import language_code

_BULLETS = ("\u2022", "-")
_ELLIPSES = ("...", "\u2026")


class GopherQuality(QualityFilter):
    """Drops documents that are too short or long, have odd word lengths, too many symbols,
    bullet or ellipsis lines, too few alphabetic words or too few stop words."""

    name = "gopher_quality"
    signal_prefix: ClassVar[str] = "gopher_"
    adds = (
        "gopher_words",
        "gopher_mean_word_length",
        "gopher_hash_ratio",
        "gopher_ellipsis_ratio",
        "gopher_bullet_lines_ratio",
        "gopher_ellipsis_lines_ratio",
        "gopher_alpha_words_ratio",
        "gopher_stop_words",
        "gopher_stop_words_skipped",
    )

    min_words: int | None = Field(
        50, description="drop documents with fewer words (punctuation-only tokens not counted)"
    )
    max_words: int | None = Field(100_000, description="drop documents with more words")
    min_mean_word_length: float | None = Field(
        3, description="drop documents whose mean word length (characters) is below this"
    )
    max_mean_word_length: float | None = Field(
        10, description="drop documents whose mean word length (characters) is above this"
    )
    max_hash_ratio: float | None = Field(
        0.1, description="drop documents with more '#' characters per token than this"
    )
    max_ellipsis_ratio: float | None = Field(
        0.1, description="drop documents with more ellipses ('...' or '…') per token than this"
    )
    max_bullet_lines_ratio: float | None = Field(
        0.9, description="drop documents where a larger share of lines starts with '•' or '-'"
    )
    max_ellipsis_lines_ratio: float | None = Field(
        0.3, description="drop documents where a larger share of lines ends with an ellipsis"
    )
    min_alpha_words_ratio: float | None = Field(
        0.8, description="drop documents where a smaller share of tokens contains a letter"
    )
    min_stop_words: int | None = Field(
        2, description="drop documents containing fewer distinct stop words than this"
    )
    stop_words: list[str] | None = Field(
        None,
        description="one list of stop words for every document (matched case-sensitively, "
        "as whole tokens); default: the document's language's list (English without one)",
    )
    stop_words_by_language: dict[str, list[str]] = Field(
        default_factory=dict,
        description="stop words for documents whose `language` metadata is the key "
        "(e.g. {de: [der, die, und]}), over the built-in list of that language",
    )

    def checks(self, doc: Document, analysis: TextAnalysis) -> Iterator[Check]:
        stats = analysis.word_stats
        text = doc.text
        yield at_least("words", stats.words, self.min_words, "too_few_words")
        yield at_most("words", stats.words, self.max_words, "too_many_words")
        mean_length = ratio(stats.word_chars, stats.words)
        if not analysis.unspaced:
            yield at_least(
                "mean_word_length", mean_length, self.min_mean_word_length, "short_mean_word"
            )
            yield at_most(
                "mean_word_length", mean_length, self.max_mean_word_length, "long_mean_word"
            )
        else:
            yield Check("mean_word_length", mean_length, None, False, "")
        yield at_most(
            "hash_ratio",
            ratio(text.count("#"), stats.tokens),
            self.max_hash_ratio,
            "too_many_hashes",
        )
        ellipses = text.count("...") + text.count("\u2026")
        yield at_most(
            "ellipsis_ratio",
            ratio(ellipses, stats.tokens),
            self.max_ellipsis_ratio,
            "too_many_ellipses",
        )
        lines = analysis.lines
        bullets = sum(1 for line in lines if line.lstrip().startswith(_BULLETS))
        yield at_most(
            "bullet_lines_ratio",
            ratio(bullets, len(lines)),
            self.max_bullet_lines_ratio,
            "too_many_bullet_lines",
        )
        trailing = sum(1 for line in lines if line.rstrip().endswith(_ELLIPSES))
        yield at_most(
            "ellipsis_lines_ratio",
            ratio(trailing, len(lines)),
            self.max_ellipsis_lines_ratio,
            "too_many_ellipsis_lines",
        )
        yield at_least(
            "alpha_words_ratio",
            ratio(stats.alphabetic_tokens, stats.tokens),
            self.min_alpha_words_ratio,
            "too_few_alphabetic_words",
        )
        stop_words = self.stop_words_for(analysis.language)
        if isinstance(stop_words, str):  # no list: the check is skipped, and why is kept
            yield Check("stop_words", None, None, False, "")
            yield Check("stop_words_skipped", stop_words, None, False, "")
            return
        present = len(analysis.word_set.intersection(stop_words))
        yield at_least("stop_words", present, self.min_stop_words, "too_few_stop_words")
        yield Check("stop_words_skipped", "", None, False, "")

    def stop_words_for(self, language: str | None) -> frozenset[str] | str:
        """The stop words for text in `language` (None: not known), or why there are none.

        Example:
            >>> GopherQuality().stop_words_for("xx")
            "no stop-word list for language 'xx'"
        """
        code = language_code(language)
        for key in (language, code):
            if key in self.stop_words_by_language:
                return frozenset(self.stop_words_by_language[key])
        if self.stop_words is not None:
            return frozenset(self.stop_words)
        if code is None:
            return STOP_WORDS["en"]
        return STOP_WORDS.get(code, f"no stop-word list for language {language!r}")
