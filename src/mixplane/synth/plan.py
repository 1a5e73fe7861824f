"""How many documents each source gets, how they fill files, and what each one is.

All pure functions of the requested size: no I/O and no randomness except through the
generator passed in.

Example:
    >>> counts = source_counts(1_000_000)
    >>> sum(counts.values()), counts["web_html"]
    (1000000, 250)
    >>> sorted((s, len(file_sizes(s, n))) for s, n in counts.items() if s != "web_html")
    [('code', 6), ('forum', 10), ('web', 21), ('wiki', 10)]
"""

from __future__ import annotations

import math
import random

SHARES = {"web": 0.42, "wiki": 0.20, "code": 0.13, "forum": 0.25}
HTML_FILES_MAX = 250
HTML_SHARE = 0.04
PER_FILE_MAX = {"web": 20_000, "wiki": 20_000, "code": 25_000, "forum": 25_000}
PER_FILE_MIN = 50
FILES_AT_LEAST = 4
# Natural-language mix per source (English majority; a little Japanese).
LANGUAGE_WEIGHTS = {
    "web": {"en": 0.55, "de": 0.11, "fr": 0.10, "es": 0.10, "zh": 0.10, "ja": 0.04},
    "wiki": {"en": 0.50, "de": 0.13, "fr": 0.12, "es": 0.12, "zh": 0.10, "ja": 0.03},
    "forum": {"en": 0.64, "de": 0.09, "fr": 0.08, "es": 0.10, "zh": 0.07, "ja": 0.02},
}
KIND_WEIGHTS = {
    "web": {"clean": 0.70, "spam": 0.10, "low_quality": 0.10, "pii": 0.10},
    "forum": {"clean": 0.82, "spam": 0.04, "low_quality": 0.06, "pii": 0.08},
    "code": {"clean": 0.95, "pii": 0.05},
    "wiki": {"clean": 1.0},
}
PROGRAMMING_LANGUAGES = {"python": 0.35, "javascript": 0.25, "c": 0.15, "go": 0.15, "rust": 0.10}
# Chance that a document is a copy of an earlier one, by source.
EXACT_SHARE = {"web": 0.03, "web_html": 0.2, "wiki": 0.02, "code": 0.05, "forum": 0.03}
NEAR_SHARE = {"wiki": 0.05, "forum": 0.03}
NEAR_TARGETS = (0.95, 0.9, 0.85, 0.8, 0.7, 0.5)


def largest_remainder(total: int, weights: dict[str, float]) -> dict[str, int]:
    """Integer counts proportional to `weights` that sum exactly to `total`.

    Example:
        >>> largest_remainder(10, {"a": 0.5, "b": 0.3, "c": 0.2})
        {'a': 5, 'b': 3, 'c': 2}
    """
    norm = sum(weights.values())
    exact = {key: total * weight / norm for key, weight in weights.items()}
    counts = {key: math.floor(value) for key, value in exact.items()}
    order = sorted(weights, key=lambda key: (counts[key] - exact[key], list(weights).index(key)))
    for key in order[: total - sum(counts.values())]:
        counts[key] += 1
    return counts


def source_counts(documents: int) -> dict[str, int]:
    """Documents per source; a small share of web pages become single HTML files."""
    if documents < 0:
        raise ValueError("the number of documents cannot be negative")
    counts = largest_remainder(documents, SHARES)
    html = min(HTML_FILES_MAX, math.floor(counts["web"] * HTML_SHARE))
    counts["web"] -= html
    counts["web_html"] = html
    return counts


def file_sizes(source: str, count: int) -> list[int]:
    """Documents per file: at least four files when there are enough documents, so that
    duplicates cross file (and task) boundaries, and at most `PER_FILE_MAX` per file."""
    if count == 0:
        return []
    per_file = min(PER_FILE_MAX[source], max(PER_FILE_MIN, math.ceil(count / FILES_AT_LEAST)))
    files, rest = divmod(count, per_file)
    return [per_file] * files + ([rest] if rest else [])


def interleaving(counts: dict[str, int], rng: random.Random) -> list[str]:
    """The order in which sources produce documents: a seeded shuffle of all of them."""
    order = [source for source in sorted(counts) for _ in range(counts[source])]
    rng.shuffle(order)
    return order


def draw(rng: random.Random, weights: dict[str, float]) -> str:
    """One key drawn with probability proportional to its weight."""
    point = rng.random() * sum(weights.values())
    for key, weight in weights.items():
        point -= weight
        if point < 0:
            return key
    return key
