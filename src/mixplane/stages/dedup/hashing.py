"""Vectorised 64-bit hashing of words and word n-grams for a batch of normalised texts.

A batch is one byte string: texts ending in newlines, words separated by spaces (see
`text.shingle_text`). Each word's hash is a polynomial over its bytes, computed for all
words at once from prefix sums (arithmetic wraps modulo 2^64; the base is odd, so it has an
inverse). An n-gram's hash mixes its words' hashes with per-position constants, then a
finaliser spreads the bits. No Python code runs per word.
"""

from __future__ import annotations

import numpy as np

_BASE = 0x9E3779B97F4A7C15
_BASE_INVERSE = pow(_BASE, -1, 1 << 64)
CACHED_POWERS = 1 << 20
_powers_cache: dict[int, np.ndarray] = {}
_POSITION = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
     0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9,
     0x2545F4914F6CDD1D, 0x9FB21C651E98DF25, 0x5851F42D4C957F2D, 0x14057B7EF767814F,
     0xD1342543DE82EF95, 0xAF251AF3B0F025B5, 0xE9846AF9B1A615D1, 0x8C2B7A4F3DE1C2A7],
    dtype=np.uint64,
)  # fmt: skip
MAX_NGRAM = len(_POSITION)


def mix64(values: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, element-wise: every input bit affects every output bit.

    Example:
        >>> int(mix64(np.array([1], dtype=np.uint64))[0]) != 1
        True
    """
    x = values.astype(np.uint64, copy=True)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _powers(base: int, size: int) -> np.ndarray:
    """base^0 .. base^(size-1) modulo 2^64; the first `CACHED_POWERS` are computed once."""
    if size > CACHED_POWERS:
        factors = np.full(size, base, dtype=np.uint64)
        factors[0] = 1
        return np.cumprod(factors, dtype=np.uint64)
    if base not in _powers_cache:
        _powers_cache[base] = _powers(base, CACHED_POWERS + 1)
    return _powers_cache[base][:size]


def word_hashes(batch: bytes, texts: int) -> tuple[np.ndarray, np.ndarray]:
    """Hash every word of every text in `batch` (texts end with b"\\n", words are separated
    by spaces; runs of spaces are allowed). Batches up to `CACHED_POWERS` bytes are fastest.

    Returns the hashes of all words in order and `starts`: text i's words are
    `hashes[starts[i]:starts[i+1]]`.

    Example:
        >>> hashes, starts = word_hashes(b"a  b\\nb\\n\\n", 3)
        >>> starts.tolist(), bool(hashes[1] == hashes[2])
        ([0, 2, 3, 3], True)
    """
    data = np.frombuffer(batch, dtype=np.uint8)
    separators = np.flatnonzero(data <= 0x20)
    begins = np.empty(len(separators), dtype=np.int64)
    begins[0:1] = 0
    begins[1:] = separators[:-1] + 1
    words = separators > begins
    begins, ends = begins[words], separators[words]
    prefix = np.zeros(len(data) + 1, dtype=np.uint64)
    np.cumsum(data * _powers(_BASE, len(data)), dtype=np.uint64, out=prefix[1:])
    # sum of data[j] * B^(j - begin) over the word: shift the prefix difference by B^-begin.
    hashes = (prefix[ends] - prefix[begins]) * _powers(_BASE_INVERSE, len(data))[begins]
    hashes += (ends - begins).astype(np.uint64)
    newline = data[separators] == 0x0A
    text_of_separator = np.cumsum(newline) - newline
    starts = np.searchsorted(text_of_separator[words], np.arange(texts + 1), side="left")
    return mix64(hashes), starts.astype(np.int64)


def ngram_hashes(words: np.ndarray, starts: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of the word n-grams of each text; a text shorter than `size` words gives one
    n-gram of all its words, an empty text none.

    Returns the hashes and `offsets` (text i owns `hashes[offsets[i]:offsets[i+1]]`).

    Example:
        >>> words, starts = word_hashes(b"a b c d\\na b\\n\\n", 3)
        >>> hashes, offsets = ngram_hashes(words, starts, 3)
        >>> offsets.tolist()
        [0, 2, 3, 3]
    """
    if not 1 <= size <= MAX_NGRAM:
        raise ValueError(f"n-gram size must be between 1 and {MAX_NGRAM}, got {size}")
    counts = np.diff(starts)
    grams = np.where(counts >= size, counts - size + 1, np.minimum(counts, 1))
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(grams, out=offsets[1:])
    first_word = np.repeat(starts[:-1] - offsets[:-1], grams) + np.arange(offsets[-1])
    length = np.repeat(np.minimum(counts, size), grams)
    # Positions past a short text's last word read a zero appended after all words.
    padded = np.concatenate((words, np.zeros(1, dtype=np.uint64)))
    hashes = np.zeros(offsets[-1], dtype=np.uint64)
    shortest = int(length.min(initial=size))
    for position in range(size):
        index = first_word + position
        if position >= shortest:
            index = np.where(position < length, index, len(words))
        hashes += padded[index] * _POSITION[position]
    return mix64(hashes), offsets
