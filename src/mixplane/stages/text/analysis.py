"""One analysis per document text, shared by every quality filter.

Word splitting and n-gram counting are the costly parts of the heuristic filters and several
filters need the same results, so `analyze(text, language)` returns a `TextAnalysis` whose
measures are computed on first use and kept. Analyses live in a small per-process cache keyed
by text and language: a filter later in the chain gets the same object back, and a stage that
changes the text (C4 drops lines) naturally gets a fresh one.

Example:
    >>> analysis = analyze("The cat sat. The cat sat.", None)
    >>> analysis.words
    ['The', 'cat', 'sat', '.', 'The', 'cat', 'sat', '.']
    >>> analysis.word_stats.words
    6
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from mixplane.stages.text.chars import PUNCTUATION
from mixplane.stages.text.ngrams import (
    duplicate_items,
    duplicate_ngram_chars,
    repeated_positions,
)
from mixplane.stages.text.ngrams import top_ngram_chars as _top_ngram_chars
from mixplane.stages.text.scripts import is_unspaced, language_code
from mixplane.stages.text.units import split_units
from mixplane.stages.text.words import split_words

_PARAGRAPH_BREAK = re.compile(r"\n{2,}")
_LINE_BREAKS = re.compile(r"\n+")
_CACHE_SIZE = 2048
_cache: dict[tuple[str, str | None], TextAnalysis] = {}
# Per token: (is made of punctuation only, contains a letter).
_token_kinds: dict[str, tuple[bool, bool]] = {}


@dataclass(frozen=True, slots=True)
class WordStats:
    """Counts over the tokens of a text.

    `tokens` counts every token, punctuation included; `words` only tokens with at least one
    character that is not punctuation, and `word_chars` their total length.
    """

    tokens: int
    words: int
    word_chars: int
    alphabetic_tokens: int


class TextAnalysis:
    """Lazily computed measures of one text (see module docstring)."""

    __slots__ = ("text", "language", "unspaced", "_memo")

    def __init__(self, text: str, language: str | None):
        self.text = text
        self.language = language
        self.unspaced = is_unspaced(text, language)
        self._memo: dict[Any, Any] = {}

    def _remember(self, key, compute):
        memo = self._memo
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    @property
    def words(self) -> list[str]:
        """Word and punctuation tokens; characters for unspaced scripts."""
        return self._remember("words", self._split)

    def _split(self) -> list[str]:
        return split_units(self.text) if self.unspaced else split_words(self.text)

    @property
    def word_set(self) -> frozenset[str]:
        return self._remember("word_set", lambda: frozenset(self.words))

    @property
    def word_stats(self) -> WordStats:
        return self._remember("word_stats", self._word_stats)

    def _word_stats(self) -> WordStats:
        words = chars = alphabetic = 0
        kinds = _token_kinds
        for token, count in Counter(self.words).items():
            kind = kinds.get(token)
            if kind is None:
                kind = _token_kind(token)
            if not kind[0]:
                words += count
                chars += count * len(token)
            if kind[1]:
                alphabetic += count
        return WordStats(len(self.words), words, chars, alphabetic)

    @property
    def lines(self) -> list[str]:
        """`str.splitlines()` of the text."""
        return self._remember("lines", self.text.splitlines)

    @property
    def nonblank_lines(self) -> list[str]:
        """Lines between "\\n" characters that are not blank."""
        return self._remember(
            "nonblank_lines", lambda: [x for x in self.text.split("\n") if x.strip()]
        )

    @property
    def paragraphs(self) -> list[str]:
        """Parts of the stripped text between runs of two or more newlines."""
        return self._remember("paragraphs", lambda: _PARAGRAPH_BREAK.split(self.text.strip()))

    @property
    def newline_lines(self) -> list[str]:
        """Parts of the text between runs of newlines (empty first/last parts kept)."""
        return self._remember("newline_lines", lambda: _LINE_BREAKS.split(self.text))

    def duplicates(self, kind: str) -> tuple[int, int]:
        """(count, characters) of repeated items of a kind: paragraphs, newline_lines or
        nonblank_lines."""
        return self._remember(("dup", kind), lambda: duplicate_items(getattr(self, kind)))

    def top_ngram_chars(self, n: int) -> int:
        return self._remember(("top", n), lambda: _top_ngram_chars(self.words, n))

    def duplicate_ngram_chars(self, n: int) -> int:
        return self._remember(("dupgram", n), lambda: self._duplicate_ngram_chars(n))

    def repeated_positions(self, n: int) -> list[int]:
        """Where n-grams that occur more than once start; derived from the largest smaller n
        already computed, since a repeated n-gram starts with a repeated shorter one."""
        key = ("repeated", n)
        if key not in self._memo:
            known = [
                k[1] for k in self._memo if isinstance(k, tuple) and k[0] == "repeated" and k[1] < n
            ]
            shorter = self._memo[("repeated", max(known))] if known else None
            self._memo[key] = repeated_positions(self.words, n, shorter)
        return self._memo[key]

    def _duplicate_ngram_chars(self, n: int) -> int:
        return duplicate_ngram_chars(self.words, n, self.repeated_positions(n))


def _token_kind(token: str) -> tuple[bool, bool]:
    kind = (all(char in PUNCTUATION for char in token), any(c.isalpha() for c in token))
    if len(_token_kinds) > 500_000:
        _token_kinds.clear()
    _token_kinds[token] = kind
    return kind


def clear_caches() -> None:
    """Forget every cached analysis and word split (for memory, or to time a cold start)."""
    from mixplane.stages.text import sentences, words

    _cache.clear()
    _token_kinds.clear()
    words._cache.clear()
    sentences._punctuation_cache.clear()


def analyze(text: str, language: object = None) -> TextAnalysis:
    """The shared analysis of `text` in `language` (ISO code or None to detect the script)."""
    key = (text, language_code(language))
    analysis = _cache.get(key)
    if analysis is None:
        analysis = TextAnalysis(text, key[1])
        if len(_cache) >= _CACHE_SIZE:
            # Drop the oldest half: documents move through the stages in batches.
            for old in list(_cache)[: _CACHE_SIZE // 2]:
                del _cache[old]
        _cache[key] = analysis
    return analysis
