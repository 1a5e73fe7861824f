"""Word 5-gram Jaccard similarity, and near-duplicates edited to a chosen similarity.

Words are the maximal runs of Unicode letters, digits and underscores in the lower-cased
text (punctuation and spacing are ignored). A text's shingles are the set of its word
5-grams; a text of fewer than five words has one shingle, the whole word sequence.

To make a copy at similarity `t`, words are replaced at scattered positions (alphabetic
words of three or more letters, so elided articles and numbers stay intact). With `S`
distinct shingles of which `m` are destroyed, Jaccard is `(S - m) / (S + m)`, so the
number of destroyed shingles is chosen as `S (1 - t) / (1 + t)` and refined by bisection
on the measured value.

Example:
    >>> import random
    >>> text = " ".join(f"word{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(400))
    >>> copy, score = near_duplicate(text, 0.8, random.Random(1), ["alpha", "beta", "gamma"])
    >>> abs(score - 0.8) <= 0.02 and abs(jaccard(text, copy) - score) < 1e-12
    True
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence

import numpy as np

WORD = re.compile(r"\w+")
# Odd 64-bit multipliers for hashing a window of word ids (wrapping arithmetic).
_MULTIPLIERS = tuple(
    np.uint64(m)
    for m in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
              0xFF51AFD7ED558CCD)
)  # fmt: skip
NGRAM = 5
TOLERANCE = 0.02


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def shingles(text: str, n: int = NGRAM) -> set[tuple[str, ...]]:
    return token_shingles(words(text), n)


def token_shingles(tokens: Sequence[str], n: int = NGRAM) -> set[tuple[str, ...]]:
    if len(tokens) < n:
        return {tuple(tokens)}
    return set(zip(*(tokens[i:] for i in range(n)), strict=False))


def jaccard(a: str, b: str, n: int = NGRAM) -> float:
    """Jaccard similarity of the two texts' word n-gram sets."""
    first, second = shingles(a, n), shingles(b, n)
    union = len(first | second)
    return len(first & second) / union if union else 1.0


def near_duplicate(
    text: str,
    target: float,
    rng: random.Random,
    replacements: Sequence[str],
    tolerance: float = TOLERANCE,
) -> tuple[str, float]:
    """A copy of `text` whose word 5-gram Jaccard with it lies within `tolerance` of `target`.

    Returns the copy and its exact Jaccard. Raises ValueError when the text is too short
    to reach the target that closely.
    """
    matches = list(WORD.finditer(text))
    raw = [match.group() for match in matches]
    tokens = [word.lower() for word in raw]
    # Only whole alphabetic words of 3+ letters are replaced, never elided articles or years.
    eligible = [i for i, word in enumerate(raw) if len(word) > 2 and word.isalpha()]
    if len(eligible) < 3 * NGRAM:
        raise ValueError(f"text of {len(eligible)} words is too short for a near-duplicate")
    draws = np.random.default_rng(rng.getrandbits(64))
    order = draws.permutation(np.array(eligible, dtype=np.int64))
    picks = draws.integers(0, len(replacements), size=len(order))
    swaps = []
    for index, choice in zip(order.tolist(), picks.tolist(), strict=True):
        word = replacements[choice]
        if word == tokens[index]:
            word = replacements[(choice + 1) % len(replacements)]
        swaps.append((index, word))
    vocabulary = {word: i for i, word in enumerate(dict.fromkeys(tokens + [w for _, w in swaps]))}
    ids = np.array([vocabulary[token] for token in tokens], dtype=np.uint64)
    positions = np.array([index for index, _ in swaps], dtype=np.int64)
    new_ids = np.array([vocabulary[word] for _, word in swaps], dtype=np.uint64)
    original = _distinct(_shingle_hashes(ids))

    def estimate(count: int) -> float:
        # Hashed shingles steer the search; the result is measured exactly below.
        edited = ids.copy()
        edited[positions[:count]] = new_ids[:count]
        other = _distinct(_shingle_hashes(edited))
        shared = np.intersect1d(original, other, assume_unique=True).size
        return shared / (original.size + other.size - shared)

    # Smallest number of replaced words whose similarity falls to the target or below,
    # then whichever of it and one fewer lands closer. The search starts from the count
    # expected when each edit destroys five shingles at random (`expected_edits`).
    guess = expected_edits(original.size, target)
    low, high = max(0, guess // 2), min(len(swaps), 2 * guess + NGRAM)
    if estimate(low) <= target or estimate(high) > target:
        low, high = 0, len(swaps)
    while low < high:
        middle = (low + high) // 2
        if estimate(middle) > target:
            low = middle + 1
        else:
            high = middle
    count = min((c for c in (low - 1, low) if c >= 0), key=lambda c: abs(estimate(c) - target))
    edited_tokens = list(tokens)
    for index, word in swaps[:count]:
        edited_tokens[index] = word
    first, second = token_shingles(tokens), token_shingles(edited_tokens)
    value = len(first & second) / len(first | second)
    if abs(value - target) > tolerance:
        raise ValueError(f"could not reach similarity {target} (got {value:.3f})")
    pieces, position = [], 0
    for index, word in sorted(swaps[:count]):
        start, end = matches[index].span()
        pieces += [text[position:start], word.capitalize() if raw[index][0].isupper() else word]
        position = end
    pieces.append(text[position:])
    return "".join(pieces), value


def expected_edits(shingles: int, target: float) -> int:
    """Word replacements expected to bring Jaccard to `target` for a text of `shingles`.

    Jaccard `(S - m) / (S + m)` gives `m = S (1 - t) / (1 + t)` destroyed shingles; `k`
    random edits, each hitting `NGRAM` of `S` shingles, leave `S (1 - NGRAM / S) ** k`.

    Example:
        >>> expected_edits(500, 0.8)
        12
    """
    if shingles <= NGRAM:
        return 1
    destroyed = shingles * (1 - target) / (1 + target)
    remaining = max(1e-9, 1 - destroyed / shingles)
    return max(1, round(math.log(remaining) / math.log(1 - NGRAM / shingles)))


def _shingle_hashes(ids: np.ndarray) -> np.ndarray:
    """A 64-bit hash of every window of `NGRAM` word ids."""
    count = len(ids) - NGRAM + 1
    hashes = np.zeros(count, dtype=np.uint64)
    for offset, multiplier in enumerate(_MULTIPLIERS):
        hashes ^= ids[offset : offset + count] * multiplier
        hashes = (hashes << np.uint64(7)) | (hashes >> np.uint64(57))
    return hashes


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (faster than `np.unique` on short arrays)."""
    ordered = np.sort(values)
    keep = np.empty(len(ordered), dtype=bool)
    keep[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
