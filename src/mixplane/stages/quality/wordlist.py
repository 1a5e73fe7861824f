"""`wordlist`: drop (or flag) documents containing terms of block lists, per language.

The lists are files the user gives (`paths`) in the block-list format (`blocklists.py`: one
term a line, `#` comments, `#! language:` and `#! match:` lines), and the lists that ship
with mixplane (`builtin`: `ldnoobw`, the List of Dirty, Naughty, Obscene, and Otherwise Bad
Words in 27 languages, CC BY 4.0). Each document is checked against the terms for its
`language` (set by `langid`) and the terms for every language; a document without a
language (or `und`) against every list (`unknown_language: all`) or only the terms for every
language (`untagged`).

The defaults are C4's rule: a document containing any listed term is dropped. Softer:
`max_matches: N` drops documents with more than N occurrences, `max_ratio: R` documents
whose listed words are more than a share R of their words; `null` turns either off. Kept
documents get `LABEL_matches` (occurrences), `LABEL_ratio` (words of the occurrences over the
document's words) and `LABEL_checked` (false when no list has terms for the document's
language); a dropped one's detail names the terms found.

Example (YAML):
    - langid: {}
    - wordlist: {builtin: [ldnoobw]}                              # C4: drop on any term
    - wordlist: {paths: [lists/blocked.txt], max_ratio: 0.01, label: blocked}
    - wordlist: {paths: [{path: lists/de.txt, language: de}], mode: annotate}
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from mixplane.document import Document
from mixplane.errors import ConfigError
from mixplane.stages.quality.base import Check, QualityFilter, at_most
from mixplane.stages.quality.blocklists import (
    EVERY_LANGUAGE,
    Term,
    builtin_files,
    parse_languages,
    parse_terms,
)
from mixplane.stages.quality.term_match import TermMatcher
from mixplane.stages.text import TextAnalysis, split_units, split_words
from mixplane.stages.text.chars import PUNCTUATION
from mixplane.stages.text.scripts import language_code
from mixplane.stages.urlfilter.lists import check_list_exists, read_list

#: How many of the distinct terms found a drop's detail names.
DETAIL_TERMS = 10
UNDETERMINED = "und"


class ListFile(BaseModel):
    """A block list file, and the language of its terms before any `#! language:` line."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="the file (a local path or an fsspec URL)")
    language: str = Field(EVERY_LANGUAGE, description="language code, or * for every language")

    @field_validator("language")
    @classmethod
    def _code(cls, language: str) -> str:
        try:
            return ",".join(parse_languages(language, "language"))
        except ConfigError as error:
            raise ValueError(str(error)) from None


class WordList(QualityFilter):
    """Drops documents containing listed terms (see the module doc)."""

    name = "wordlist"

    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for reading the lists"
    )
    paths: list[str | ListFile] = Field(
        default_factory=list,
        description="block list files: a path, or {path, language} for a file whose terms "
        "are for one language",
    )
    builtin: list[str] = Field(
        default_factory=list,
        description="lists shipped with mixplane: ldnoobw (every language) or ldnoobw/CODE",
    )
    max_matches: int | None = Field(
        None, ge=0, description="drop documents with more occurrences of listed terms"
    )
    max_ratio: float | None = Field(
        0.0,
        ge=0,
        description="drop documents where listed words make up a larger share of the words "
        "(0, the default, drops any document containing one, as C4 did; null: no limit)",
    )
    case_sensitive: bool = Field(False, description="match letter case exactly")
    unknown_language: Literal["all", "untagged"] = Field(
        "all",
        description="documents without a language: check every list (all) or only the "
        "terms for every language (untagged)",
    )
    label: str = Field(
        "wordlist",
        description="start of the metadata names: LABEL_matches, LABEL_ratio, LABEL_checked",
    )
    _terms: list[Term] | None = PrivateAttr(None)
    _digest: str = PrivateAttr("")
    _matchers: dict[str | None, TermMatcher] = PrivateAttr(default_factory=dict)
    _words_of: dict[tuple[str, bool], int] = PrivateAttr(default_factory=dict)

    adds = ("wordlist_checked", "wordlist_matches", "wordlist_ratio")  # with the default label

    @field_validator("paths")
    @classmethod
    def _lists_exist(cls, paths: list[str | ListFile], info: ValidationInfo) -> list:
        for entry in paths:
            path = entry if isinstance(entry, str) else entry.path
            try:
                check_list_exists(path, info.data.get("storage_options"))
            except ValueError:
                raise ValueError(f"block list {path!r} not found") from None
        return paths

    @field_validator("builtin")
    @classmethod
    def _builtin_exist(cls, names: list[str]) -> list[str]:
        for name in names:
            builtin_files(name)
        return names

    def model_post_init(self, context: Any) -> None:
        if not self.paths and not self.builtin:
            raise ConfigError(
                "stage 'wordlist': give block lists: paths (files) or builtin (e.g. [ldnoobw])"
            )
        # A list with a bad line fails when the pipeline is built, before any work.
        self.terms()

    def provenance(self) -> dict[str, Any]:
        """The lists' content hash: editing a list file redoes the work."""
        self.terms()
        return {"lists_sha256": self._digest}

    def node_paths(self) -> list[tuple[str, str, bool]]:
        files = [entry if isinstance(entry, str) else entry.path for entry in self.paths]
        return [(path, "block list", False) for path in files]

    def prefix(self) -> str:
        return f"{self.label}_"

    def setup(self) -> None:
        self.terms()

    def terms(self) -> list[Term]:
        """Every listed term, read once."""
        if self._terms is None:
            files = [ListFile(path=e) if isinstance(e, str) else e for e in self.paths]
            files += [ListFile(path=str(f)) for name in self.builtin for f in builtin_files(name)]
            digest = hashlib.sha256()
            terms: list[Term] = []
            for item in files:
                raw = read_list(item.path, self.storage_options)
                digest.update(hashlib.sha256(raw).digest())
                terms.extend(parse_terms(raw.decode("utf-8"), item.path, item.language))
            self._terms, self._digest = terms, digest.hexdigest()
        return self._terms

    def matcher(self, language: str | None) -> TermMatcher:
        """The compiled terms for documents in `language` (None: unknown), built once."""
        matcher = self._matchers.get(language)
        if matcher is None:
            unknown = self.unknown_language
            chosen = [term for term in self.terms() if _applies(term, language, unknown)]
            matcher = TermMatcher.build(
                [term.text for term in chosen if term.match == "word"],
                [term.text for term in chosen if term.match == "substring"],
                self.case_sensitive,
            )
            self._matchers[language] = matcher
        return matcher

    def checks(self, doc: Document, analysis: TextAnalysis) -> Iterator[Check]:
        language = language_code(doc.metadata.get("language"))
        matcher = self.matcher(None if language == UNDETERMINED else language)
        found = matcher.find(doc.text)
        detail = {"terms": sorted(set(found))[:DETAIL_TERMS]} if found else None
        yield Check("checked", matcher.pattern is not None, None, False, "")
        matches = at_most("matches", len(found), self.max_matches, "too_many_listed_matches")
        yield replace(matches, detail=detail)
        share = self._share(found, analysis) if found else 0.0
        ratio = at_most("ratio", share, self.max_ratio, "too_many_listed_words")
        yield replace(ratio, detail=detail)

    def _share(self, found: list[str], analysis: TextAnalysis) -> float:
        """Words of the occurrences over the document's words (each occurrence counts one
        word at least, so a document with one is never at 0)."""
        listed = sum(self._words(term, analysis.unspaced) for term in found)
        return listed / max(listed, analysis.word_stats.words)

    def _words(self, term: str, unspaced: bool) -> int:
        key = (term, unspaced)
        count = self._words_of.get(key)
        if count is None:
            tokens = split_units(term) if unspaced else split_words(term)
            count = max(1, sum(1 for t in tokens if not all(c in PUNCTUATION for c in t)))
            self._words_of[key] = count
        return count


def _applies(term: Term, language: str | None, unknown_language: str) -> bool:
    if EVERY_LANGUAGE in term.languages:
        return True
    if language is None:
        return unknown_language == "all"
    return language in term.languages
