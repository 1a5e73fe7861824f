"""`wordlist`: drop (or flag) documents with too large a share of listed words.

The lists are files the user provides, one word or phrase per line (blank lines and lines
starting with "#" are skipped); any fsspec URL works. Matching is on whole words, ignoring
case unless `case_sensitive`; a phrase matches its words in sequence. In text written
without spaces a listed word matches its characters in sequence.

Example (YAML):
    - wordlist: {paths: [lists/blocked.txt], max_ratio: 0.01, label: blocked}
    # adds blocked_ratio and blocked_matches; drops with reason "too_many_listed_words"
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator

from mixplane.document import Document
from mixplane.errors import MixplaneError
from mixplane.io.urls import open_url, url_filesystem
from mixplane.stages.quality.base import Check, QualityFilter, at_most, ratio
from mixplane.stages.text import TextAnalysis, split_units
from mixplane.stages.text.chars import PUNCTUATION


class WordList(QualityFilter):
    """Drops documents whose share of listed words exceeds `max_ratio`."""

    name = "wordlist"

    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for reading the lists"
    )
    paths: list[str] = Field(
        description="files (local paths or URLs) with one listed word or phrase per line",
        min_length=1,
    )
    max_ratio: float = Field(
        0.0,
        ge=0,
        description="drop documents where listed words make up a larger share of the words "
        "(0 drops any document containing one)",
    )
    case_sensitive: bool = Field(False, description="match letter case exactly")
    label: str = Field(
        "wordlist", description="start of the metadata names: LABEL_ratio, LABEL_matches"
    )
    # Listed entries by number of words (1 for single words).
    _phrases: dict[int, set] | None = PrivateAttr(None)

    adds = ("wordlist_ratio", "wordlist_matches")  # with the default label

    @field_validator("paths")
    @classmethod
    def _lists_exist(cls, paths: list[str], info: ValidationInfo) -> list[str]:
        for path in paths:
            fs, local = url_filesystem(path, info.data.get("storage_options"))
            if not fs.exists(local):
                raise ValueError(f"word list {path!r} not found")
        return paths

    def prefix(self) -> str:
        return f"{self.label}_"

    def setup(self) -> None:
        self._load()

    def _load(self) -> dict[int, set]:
        if self._phrases is None:
            phrases: dict[int, set] = {}
            for path in self.paths:
                for entry in self._entries(path):
                    words = tuple(self._normal(word) for word in split_units(entry))
                    if words:
                        phrases.setdefault(len(words), set()).add(
                            words[0] if len(words) == 1 else words
                        )
            self._phrases = phrases
        return self._phrases

    def _entries(self, path: str) -> list[str]:
        try:
            with open_url(path, "rb", self.storage_options) as handle:
                raw = handle.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise MixplaneError(f"word list {path}: cannot read: {error}") from None
        lines = (line.strip() for line in raw.splitlines())
        return [line for line in lines if line and not line.startswith("#")]

    def _normal(self, word: str) -> str:
        return word if self.case_sensitive else word.lower()

    def checks(self, doc: Document, analysis: TextAnalysis) -> Iterator[Check]:
        phrases = self._load()
        words = [
            self._normal(token)
            for token in analysis.words
            if not all(char in PUNCTUATION for char in token)
        ]
        matched = 0
        for n, listed in phrases.items():
            if n == 1:
                matched += sum(1 for word in words if word in listed)
            else:
                grams = zip(*(words[i:] for i in range(n)), strict=False)
                matched += n * sum(1 for gram in grams if gram in listed)
        matched = min(matched, len(words))
        yield Check("matches", matched, None, False, "")
        yield at_most("ratio", ratio(matched, len(words)), self.max_ratio, "too_many_listed_words")
