"""Sentence counting by punctuation, as rule-based sentence splitters do it.

A sentence ends after a token that is a sentence-final mark ("." "?" "!" "。"...) and the
next sentence starts at the first following token that is not punctuation. Abbreviations
stay whole because the word splitter keeps their period ("Dr.", "e.g."), so they never end
a sentence.

Example:
    >>> count_sentences("He left. She stayed (for now)! Dr. Who?")
    3
"""

from __future__ import annotations

import unicodedata

from mixplane.stages.text.chars import SENTENCE_TERMINALS, is_punctuation_token
from mixplane.stages.text.units import split_units
from mixplane.stages.text.words import split_words

_punctuation_cache: dict[str, bool] = {}


def count_sentences(text: str, unspaced: bool = False) -> int:
    """Number of sentences in `text` (0 for blank text); `unspaced` for text written without
    spaces, whose sentence marks sit between characters ("他来了。她走了。")."""
    if not text or text.isspace():
        return 0
    # Fast path: no sentence mark before the trailing punctuation means one sentence.
    body = text.rstrip()
    end = len(body)
    while end and unicodedata.category(body[end - 1])[0] == "P":
        end -= 1
    if not any(char in SENTENCE_TERMINALS for char in body[:end]):
        return 1
    return count_sentences_in_tokens(split_units(text) if unspaced else split_words(text))


def count_sentences_in_tokens(tokens: list[str]) -> int:
    """Number of sentences in a list of tokens (see module docstring)."""
    if not tokens:
        return 0
    sentences = 1
    seen_end = False
    for token in tokens:
        if token in SENTENCE_TERMINALS:
            seen_end = True
        elif seen_end and not _is_punctuation(token):
            sentences += 1
            seen_end = False
    return sentences


def _is_punctuation(token: str) -> bool:
    answer = _punctuation_cache.get(token)
    if answer is None:
        answer = is_punctuation_token(token)
        if len(_punctuation_cache) > 100_000:
            _punctuation_cache.clear()
        _punctuation_cache[token] = answer
    return answer
