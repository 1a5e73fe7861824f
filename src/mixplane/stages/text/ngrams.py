"""Repetition measures over a word list, as the Gopher rules define them.

Example:
    >>> words = "a b c a b c a b c".split()
    >>> top_ngram_chars(words, 2)  # "a b" occurs 3 times, 3 characters each
    9
    >>> duplicate_ngram_chars(words, 3)  # two later copies of "abc"
    6
"""

from __future__ import annotations

from collections import Counter


def ngrams(words: list[str], n: int) -> list[tuple[str, ...]]:
    """All n-grams of `words`, in order."""
    return list(zip(*(words[i:] for i in range(n)), strict=False))


def top_ngram_chars(words: list[str], n: int) -> int:
    """Characters covered by the most frequent n-gram: its length (words joined by single
    spaces) times its count; among equally frequent n-grams the first one seen counts."""
    if len(words) < n:
        return 0
    grams = zip(*(words[i:] for i in range(n)), strict=False)
    (gram, count), *_ = Counter(grams).most_common(1)
    return (sum(map(len, gram)) + n - 1) * count


def repeated_positions(words: list[str], n: int, candidates: list[int] | None = None) -> list[int]:
    """Start positions of n-grams that occur more than once, in order.

    `candidates` (the answer for a smaller n) limits the search: an n-gram can only repeat
    where its shorter prefix repeats.
    """
    if candidates is None:
        grams = list(zip(*(words[i:] for i in range(n)), strict=False))
        counts = Counter(grams)
        if len(counts) == len(grams):
            return []
        return [position for position, gram in enumerate(grams) if counts[gram] > 1]
    last = len(words) - n
    keyed = [(p, tuple(words[p : p + n])) for p in candidates if p <= last]
    counts = Counter(gram for _, gram in keyed)
    return [p for p, gram in keyed if counts[gram] > 1]


def duplicate_ngram_chars(words: list[str], n: int, positions: list[int] | None = None) -> int:
    """Characters (spaces not counted) in n-grams that repeat an earlier n-gram.

    The text is read left to right; an n-gram seen before counts and the reading jumps past
    it, so overlapping repeats are not counted twice. Only positions whose n-gram repeats
    somewhere can count, so only those (`repeated_positions`) are visited.
    """
    if positions is None:
        positions = repeated_positions(words, n)
    seen = set()
    chars = 0
    next_start = 0
    for position in positions:
        if position < next_start:
            continue
        gram = tuple(words[position : position + n])
        if gram in seen:
            chars += sum(map(len, gram))
            next_start = position + n
        else:
            seen.add(gram)
            next_start = position + 1
    return chars


def duplicate_items(items: list[str]) -> tuple[int, int]:
    """(count, characters) of items that repeat an earlier item.

    Example:
        >>> duplicate_items(["ab", "c", "ab", "ab"])
        (2, 4)
    """
    counts = Counter(items)
    repeats = len(items) - len(counts)
    if not repeats:
        return 0, 0
    chars = sum((count - 1) * len(item) for item, count in counts.items() if count > 1)
    return repeats, chars
