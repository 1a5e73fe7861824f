"""Shared text analysis for the quality filters: language-aware word splitting, sentence
counting, lines and paragraphs, and n-gram repetition, computed once per document.

Example:
    >>> from mixplane.stages.text import analyze
    >>> analyze("Hello world.").word_stats.words
    2
"""

from mixplane.stages.text.analysis import TextAnalysis, WordStats, analyze, clear_caches
from mixplane.stages.text.sentences import count_sentences
from mixplane.stages.text.units import split_units
from mixplane.stages.text.words import split_words

__all__ = [
    "TextAnalysis",
    "WordStats",
    "analyze",
    "clear_caches",
    "count_sentences",
    "split_units",
    "split_words",
]
