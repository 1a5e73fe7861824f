"""`opt_out`: documents whose publisher opted out of AI training or text and data mining.

Signals, checked in this order; the first found is the document's reason:

1. `domain_list`: the host, or a domain it belongs to, is on the opt-out domain list
   (`domains`, `domains_files`: `example.com` covers `news.example.com`);
2. `url_list`: the URL starts with a listed prefix (`url_prefixes`, `url_prefixes_files`;
   compared normalized as `url_filter` does: case of the host, `www.`, scheme and port make
   no difference);
3. `tdmrep_file`: the site's `/.well-known/tdmrep.json`, given as data (`tdmrep_files`: host
   to file), reserves the URL's path (see `tdmrep`);
4. `x_robots_tag`: the `X-Robots-Tag` response header (the `http_x_robots_tag` field the
   WARC reader keeps) holds one of `robots_values` (default `noai`, `noimageai`), for any
   user agent (`otherbot: noai` counts too);
5. `tdm_header`: the `tdm-reservation: 1` response header (`http_tdm_reservation`);
6. `meta_robots`: a `<meta>` named in `robots_names` (`robots` and AI crawlers' names) holds
   one of `robots_values`;
7. `tdm_meta`: `<meta name="tdm-reservation" content="1">`.

`noindex` and `none` say "keep out of search results", not "do not train": they count only
when added to `robots_values`. A `tdm-policy` (header, meta or file) goes in the detail.

`mode: drop` excludes each opted-out document with reason `opt_out` and the signal in the
detail (`{"signal": "meta_robots", "value": "noai"}`); `mode: annotate` (the default) keeps
it, with `opt_out` (bool) and `opt_out_signal` (`meta_robots: noai`, None when not opted
out). The `<meta>` signals read the HTML, so place the stage before `extract`; after it the
lists, the tdmrep files and the headers still work.

Example:
    >>> from mixplane.document import Document
    >>> page = '<html><head><meta name="robots" content="noindex, noai"></head></html>'
    >>> doc = Document("a", page, "web", {"content_type": "text/html"})
    >>> OptOut(mode="drop").apply(doc)
    Drop(reason='opt_out', detail={'signal': 'meta_robots', 'value': 'noai'})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import orjson
from pydantic import Field, PrivateAttr, ValidationInfo, field_validator

from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.stages.base import Result, Stage
from mixplane.stages.governance.license import page_html
from mixplane.stages.governance.page import read_page
from mixplane.stages.governance.tdmrep import TdmRule, parse_rules, reservation
from mixplane.stages.urlfilter.domains import DomainSet
from mixplane.stages.urlfilter.lists import check_list_exists, read_entries, read_list
from mixplane.stages.urlfilter.normal import host_suffixes, normal_host, normal_url, split_url

ROBOTS_HEADER = "http_x_robots_tag"
TDM_HEADER = "http_tdm_reservation"
TDM_POLICY_HEADER = "http_tdm_policy"
# Directives of X-Robots-Tag that take a value after a colon (not a user agent before one).
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


@dataclass(frozen=True)
class OptOutRules:
    """The lists and files of one stage, read once per worker."""

    domains: DomainSet
    prefixes: tuple[str, ...]
    tdmrep: dict[str, list[TdmRule]]


class OptOut(Stage):
    """Finds AI and TDM opt-outs; annotates or drops. See the module doc."""

    name: ClassVar[str] = "opt_out"
    adds: ClassVar[tuple[str, ...]] = ("opt_out", "opt_out_signal")

    mode: Literal["annotate", "drop"] = Field(
        "annotate", description="annotate: mark opt_out; drop: exclude with reason opt_out"
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for reading the files"
    )
    robots_values: list[str] = Field(
        default_factory=lambda: ["noai", "noimageai"],
        description="robots directives that opt out (add noindex or none to honour them too)",
    )
    robots_names: list[str] = Field(
        default_factory=lambda: ["robots", "ccbot", "gptbot", "google-extended"],
        description="<meta> names read as robots directives",
    )
    domains: list[str] = Field(default_factory=list, description="opted-out domains")
    domains_files: list[str] = Field(
        default_factory=list, description="files of opted-out domains, one a line"
    )
    url_prefixes: list[str] = Field(default_factory=list, description="opted-out URL prefixes")
    url_prefixes_files: list[str] = Field(
        default_factory=list, description="files of opted-out URL prefixes, one a line"
    )
    tdmrep_files: dict[str, str] = Field(
        default_factory=dict, description="host -> its /.well-known/tdmrep.json, as a file"
    )
    url_key: str = Field("url", description="the metadata key holding a document's URL")

    _rules: OptOutRules | None = PrivateAttr(None)
    _words: tuple[str, ...] | None = PrivateAttr(None)

    @field_validator("domains_files", "url_prefixes_files")
    @classmethod
    def _files_exist(cls, paths: list[str], info: ValidationInfo) -> list[str]:
        for path in paths:
            check_list_exists(path, info.data.get("storage_options"))
        return paths

    @field_validator("tdmrep_files")
    @classmethod
    def _tdmrep_exist(cls, files: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        for path in files.values():
            check_list_exists(path, info.data.get("storage_options"))
        return files

    @field_validator("robots_values", "robots_names")
    @classmethod
    def _lowercase(cls, values: list[str]) -> list[str]:
        return [value.strip().lower() for value in values if value.strip()]

    def setup(self) -> None:
        self.rules()

    def node_paths(self) -> list[tuple[str, str, bool]]:
        paths = [(path, "opt-out domain list", False) for path in self.domains_files]
        paths += [(path, "opt-out URL prefix list", False) for path in self.url_prefixes_files]
        return paths + [(path, "tdmrep.json file", False) for path in self.tdmrep_files.values()]

    def rules(self) -> OptOutRules:
        """The lists and tdmrep files, read and normalized once per worker."""
        if self._rules is None:
            prefixes = list(self.url_prefixes)
            for path in self.url_prefixes_files:
                prefixes.extend(read_entries(path, self.storage_options))
            self._rules = OptOutRules(
                DomainSet.from_files(self.domains_files, self.domains, self.storage_options),
                tuple(sorted({normal_url(prefix) for prefix in prefixes})),
                {normal_host(host): self._tdmrep(path) for host, path in self.tdmrep_files.items()},
            )
        return self._rules

    def _tdmrep(self, path: str) -> list[TdmRule]:
        try:
            data = orjson.loads(read_list(path, self.storage_options))
        except orjson.JSONDecodeError as error:
            raise ConfigError(f"{path}: not JSON ({error})") from None
        return parse_rules(data, path)

    def apply(self, doc: Document) -> Result:
        found = self.signal(doc)
        if self.mode == "drop":
            return doc if found is None else Drop("opt_out", found)
        doc.metadata["opt_out"] = found is not None
        doc.metadata["opt_out_signal"] = (
            None if found is None else f"{found['signal']}: {found['value']}"
        )
        return doc

    def signal(self, doc: Document) -> dict[str, Any] | None:
        """The first opt-out signal of a document, as `{"signal", "value"[, "policy"]}`."""
        rules = self.rules()
        url = doc.metadata.get(self.url_key)
        if isinstance(url, str) and url:
            found = _from_url(url, rules)
            if found is not None:
                return found
        metadata = doc.metadata
        directive = self._robots(metadata.get(ROBOTS_HEADER))
        if directive is not None:
            return {"signal": "x_robots_tag", "value": directive}
        if _reserved(metadata.get(TDM_HEADER)):
            return _tdm("tdm_header", metadata.get(TDM_POLICY_HEADER))
        html = page_html(doc)
        if html is None:
            return None
        page = read_page(html, self._page_words())
        for name in self.robots_names:
            for content in page.meta.get(name, ()):
                directive = self._robots(content)
                if directive is not None:
                    return {"signal": "meta_robots", "value": directive}
        if any(_reserved(value) for value in page.meta.get("tdm-reservation", ())):
            return _tdm("tdm_meta", next(iter(page.meta.get("tdm-policy", ())), None))
        return None

    def _robots(self, value: Any) -> str | None:
        """The first opting-out directive of a robots value, for any user agent."""
        if not isinstance(value, str):
            return None
        wanted = self.robots_values
        for part in value.lower().split(","):
            directive = part.strip()
            agent, colon, rest = directive.partition(":")
            if colon and agent.strip() not in _VALUED:
                directive = rest.strip()
            for word in directive.split():  # "googlebot: noai noimageai" lists several
                if word in wanted:
                    return word
        return None

    def _page_words(self) -> tuple[str, ...]:
        """The words a page must hold for a <meta> signal: pages without them are not parsed."""
        if self._words is None:
            self._words = (*self.robots_values, "tdm-reservation")
        return self._words


def _from_url(url: str, rules: OptOutRules) -> dict[str, Any] | None:
    host, path = split_url(url)
    if len(rules.domains):
        for domain in host_suffixes(host) if host else ():
            if domain in rules.domains:
                return {"signal": "domain_list", "value": domain}
    whole = host + path
    for prefix in rules.prefixes:
        if whole.startswith(prefix):
            return {"signal": "url_list", "value": prefix}
    site = rules.tdmrep.get(host)
    if site:
        rule = reservation(site, path)
        if rule is not None and rule.reserved:
            return _tdm("tdmrep_file", rule.policy, rule.location)
    return None


def _reserved(value: Any) -> bool:
    return str(value).strip() == "1" if value is not None else False


def _tdm(signal: str, policy: Any, value: str = "tdm-reservation: 1") -> dict[str, Any]:
    found: dict[str, Any] = {"signal": signal, "value": value}
    if isinstance(policy, str) and policy.strip():
        found["policy"] = policy.strip()
    return found
