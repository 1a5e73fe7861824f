"""`url_filter`: drop documents by their URL, as FineWeb does before extracting a page.

Rules, checked in this order; the first that matches drops the document with its reason:

1. the host, or a domain it belongs to, is on the domain block list (`url_blocked_domain`:
   `example.com` blocks `ads.example.com`);
2. the whole URL is on the URL block list (`url_blocked_url`);
3. a word of the URL is a banned word (`url_banned_word`);
4. at least `soft_banned_min` different soft-banned words are in the URL
   (`url_soft_banned_words`);
5. a banned sub-word occurs anywhere in the URL's joined form, its words run together
   (`url_banned_subword`: `casino` is found in `online-casinos.example`).

The allow lists (domains, covering their subdomains, and whole URLs) win over every block.
Hosts, URLs and words are compared normalized (see `normal`): case, `www.`, ports, trailing
dots and punycode make no difference. Each list is given inline, in files (one entry a line,
`#` comments, gzip accepted), or both. Domain lists, which run to millions of entries, are
held as sorted 64-bit hashes (`domains.DomainSet`: 8 bytes a domain). A document without a
URL is kept and marked
`url_missing: true`, or dropped with reason `no_url` when `missing_url: drop`.

Differences from datatrove's URLFilter, which FineWeb used: a listed domain blocks all its
subdomains (datatrove blocks the registered domain or the exact host) and a listed IP address
blocks that address (datatrove's listed IPs never match); words are lowercased
before they are compared (datatrove compares a URL's words as written, so `CASINO` passes);
whole URLs are compared normalized rather than byte for byte; there is an allow list; and no
lists are built in: give your own.

Example (YAML):
    - url_filter:
        block_domains_files: [lists/domains.txt.gz]
        banned_words: [casino, xxx]
        soft_banned_words: [bet, poker, win]
        soft_banned_min: 2
        allow_domains: [wikipedia.org]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator

from mixplane.document import Document, Drop
from mixplane.stages.base import Result, Stage
from mixplane.stages.urlfilter.domains import DomainSet
from mixplane.stages.urlfilter.lists import check_list_exists, read_entries
from mixplane.stages.urlfilter.normal import (
    host_suffixes,
    normal_url,
    normal_word,
    split_url,
    url_words,
)

LIST_NAMES = (
    "block_domains",
    "block_urls",
    "banned_words",
    "banned_subwords",
    "soft_banned_words",
    "allow_domains",
    "allow_urls",
)


def _entries(description: str) -> Any:
    return Field(default_factory=list, description=description)


def _files(what: str) -> Any:
    return Field(default_factory=list, description=f"list files of {what}, one a line")


@dataclass(frozen=True)
class UrlRules:
    """The normalized lists of one stage, ready to match (never changed once built)."""

    block_domains: DomainSet
    block_urls: frozenset[str]
    banned_words: frozenset[str]
    soft_banned_words: frozenset[str]
    banned_subwords: re.Pattern | None
    allow_domains: DomainSet
    allow_urls: frozenset[str]


class UrlFilter(Stage):
    """Drops documents whose URL is blocked or holds banned words; see the module doc."""

    name: ClassVar[str] = "url_filter"
    adds: ClassVar[tuple[str, ...]] = ("url_missing",)

    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for reading the list files"
    )
    url_key: str = Field("url", description="the metadata key holding a document's URL")
    block_domains: list[str] = _entries("domains blocked with all their subdomains")
    block_domains_files: list[str] = _files("blocked domains")
    block_urls: list[str] = _entries("whole URLs blocked")
    block_urls_files: list[str] = _files("blocked URLs")
    banned_words: list[str] = _entries("words of a URL that block it")
    banned_words_files: list[str] = _files("banned words")
    banned_subwords: list[str] = _entries("strings that block a URL wherever they occur in it")
    banned_subwords_files: list[str] = _files("banned sub-words")
    soft_banned_words: list[str] = _entries("words that block a URL when enough occur in it")
    soft_banned_words_files: list[str] = _files("soft-banned words")
    soft_banned_min: int = Field(
        2, ge=1, description="how many different soft-banned words block a URL"
    )
    allow_domains: list[str] = _entries("domains (with their subdomains) never blocked")
    allow_domains_files: list[str] = _files("allowed domains")
    allow_urls: list[str] = _entries("whole URLs never blocked")
    allow_urls_files: list[str] = _files("allowed URLs")
    missing_url: Literal["keep", "drop"] = Field(
        "keep",
        description="documents without a URL: keep (marked url_missing) or drop (reason no_url)",
    )

    _rules: UrlRules | None = PrivateAttr(None)

    @field_validator(*(f"{name}_files" for name in LIST_NAMES))
    @classmethod
    def _files_exist(cls, paths: list[str], info: ValidationInfo) -> list[str]:
        for path in paths:
            check_list_exists(path, info.data.get("storage_options"))
        return paths

    def setup(self) -> None:
        self.rules()

    def node_paths(self) -> list[tuple[str, str, bool]]:
        return [
            (path, f"{name.replace('_', ' ')} list", False)
            for name in LIST_NAMES
            for path in getattr(self, f"{name}_files")
        ]

    def rules(self) -> UrlRules:
        """The lists, read and normalized once per worker."""
        if self._rules is None:
            listed = {name: self._listed(name) for name in LIST_NAMES if "domains" not in name}
            self._rules = UrlRules(
                block_domains=self._domains("block_domains"),
                block_urls=frozenset(normal_url(url) for url in listed["block_urls"]),
                banned_words=_words(listed["banned_words"]),
                soft_banned_words=_words(listed["soft_banned_words"]),
                banned_subwords=_any_of(_words(listed["banned_subwords"])),
                allow_domains=self._domains("allow_domains"),
                allow_urls=frozenset(normal_url(url) for url in listed["allow_urls"]),
            )
        return self._rules

    def _domains(self, name: str) -> DomainSet:
        """A domain list, from files and inline, as hashes (it may hold millions)."""
        files = getattr(self, f"{name}_files")
        return DomainSet.from_files(files, getattr(self, name), self.storage_options)

    def _listed(self, name: str) -> list[str]:
        entries = list(getattr(self, name))
        for path in getattr(self, f"{name}_files"):
            entries.extend(read_entries(path, self.storage_options))
        return entries

    def apply(self, doc: Document) -> Result:
        url = doc.metadata.get(self.url_key)
        if not url or not isinstance(url, str):
            if self.missing_url == "drop":
                return Drop("no_url")
            doc.metadata["url_missing"] = True
            return doc
        drop = judge_url(url, self.rules(), self.soft_banned_min)
        return doc if drop is None else drop


def judge_url(url: str, rules: UrlRules, soft_banned_min: int) -> Drop | None:
    """The drop a URL earns under `rules`, or None when it passes.

    Example:
        >>> rules = UrlFilter(banned_words=["casino"]).rules()
        >>> judge_url("https://casino.example/x", rules, 2)
        Drop(reason='url_banned_word', detail={'word': 'casino'})
    """
    host, path = split_url(url)
    domains = host_suffixes(host) if host else []
    if rules.allow_domains and any(d in rules.allow_domains for d in domains):
        return None
    whole = host + path
    if whole in rules.allow_urls:
        return None
    if rules.block_domains:
        for domain in domains:
            if domain in rules.block_domains:
                return Drop("url_blocked_domain", {"domain": domain})
    if whole in rules.block_urls:
        return Drop("url_blocked_url", {"url": whole})
    words = url_words(url)
    if rules.banned_words:
        for word in words:
            if word in rules.banned_words:
                return Drop("url_banned_word", {"word": word})
    if rules.soft_banned_words:
        soft = sorted(rules.soft_banned_words.intersection(words))
        if len(soft) >= soft_banned_min:
            return Drop("url_soft_banned_words", {"words": soft, "min": soft_banned_min})
    if rules.banned_subwords is not None:
        found = rules.banned_subwords.search("".join(words))
        if found:
            return Drop("url_banned_subword", {"subword": found.group()})
    return None


def _words(entries: list[str]) -> frozenset[str]:
    return frozenset(word for word in map(normal_word, entries) if word)


def _any_of(subwords: frozenset[str]) -> re.Pattern | None:
    """One pattern finding any sub-word (longest listed first, so the detail names it)."""
    if not subwords:
        return None
    ordered = sorted(subwords, key=lambda word: (-len(word), word))
    return re.compile("|".join(re.escape(word) for word in ordered))
