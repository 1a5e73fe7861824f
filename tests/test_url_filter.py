"""The `url_filter` stage: each rule, the allow list, normalization, list files, YAML."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from readme_blocks import readme_block
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.process.pipeline import Pipeline
from mixplane.stages.build import build_stage
from mixplane.stages.urlfilter import UrlFilter, judge_url
from mixplane.stages.urlfilter.normal import normal_host, normal_url

LISTS = {
    "block_domains": ["bad.example", "ads.tracker.test"],
    "block_urls": ["https://good.example/private/page?id=7"],
    "banned_words": ["casino"],
    "soft_banned_words": ["bet", "poker", "win"],
    "banned_subwords": ["porn"],
}


def verdict(url: str, **options) -> Drop | None:
    stage = UrlFilter(**{**LISTS, **options})
    return judge_url(url, stage.rules(), stage.soft_banned_min)


@pytest.mark.parametrize(
    ("url", "reason", "detail"),
    [
        ("http://bad.example/", "url_blocked_domain", {"domain": "bad.example"}),
        ("https://deep.sub.bad.example/x", "url_blocked_domain", {"domain": "bad.example"}),
        ("https://ads.tracker.test/p", "url_blocked_domain", {"domain": "ads.tracker.test"}),
        ("http://good.example/private/page?id=7", "url_blocked_url",
         {"url": "good.example/private/page?id=7"}),
        ("https://good.example/Casino/rules", "url_banned_word", {"word": "casino"}),
        ("https://good.example/bet-on-poker", "url_soft_banned_words",
         {"words": ["bet", "poker"], "min": 2}),
        ("https://good.example/free_porno-clips", "url_banned_subword", {"subword": "porn"}),
        ("https://good.example/por-nography", "url_banned_subword", {"subword": "porn"}),
    ],
)  # fmt: skip
def test_each_rule_drops_with_its_reason(url, reason, detail):
    assert verdict(url) == Drop(reason, detail)


@pytest.mark.parametrize(
    "url",
    [
        "https://good.example/private/page?id=8",  # another page of a blocked URL's site
        "https://tracker.test/",  # the parent of a blocked subdomain
        "https://notbad.example/",  # shares a suffix of characters, not of labels
        "https://good.example/casinos-history",  # banned word only as part of a word
        "https://good.example/poker-night",  # one soft-banned word
    ],
)
def test_near_misses_pass(url):
    assert verdict(url) is None


def test_soft_banned_threshold_is_configurable():
    assert verdict("https://good.example/poker-night", soft_banned_min=1).reason == (
        "url_soft_banned_words"
    )
    assert verdict("https://good.example/bet-poker", soft_banned_min=3) is None
    assert verdict("https://win.example/bet-poker", soft_banned_min=3).detail["words"] == [
        "bet", "poker", "win"
    ]  # fmt: skip


@pytest.mark.parametrize(
    "url",
    [
        "http://bad.example/",
        "http://good.example/private/page?id=7",
        "https://good.example/casino",
        "https://good.example/bet-poker",
        "https://good.example/porn",
    ],
)
def test_allow_list_wins_over_every_block(url):
    assert verdict(url) is not None
    assert verdict(url, allow_domains=["example"]) is None
    assert verdict(url, allow_urls=[url]) is None
    assert verdict(url, allow_urls=[url.replace("://", "://WWW.")]) is None


def test_listed_ip_addresses_match_whole():
    assert verdict("http://10.1.2.3:8080/x", block_domains=["10.1.2.3"]).reason == (
        "url_blocked_domain"
    )
    assert verdict("http://10.1.2.3/x", block_domains=["1.2.3", "3"]) is None
    assert verdict("http://[::1]/x", block_domains=["[::1]"]).reason == "url_blocked_domain"


def test_allowed_subdomain_does_not_allow_its_parent():
    assert verdict("https://cdn.bad.example/", allow_domains=["cdn.bad.example"]) is None
    assert verdict("https://bad.example/", allow_domains=["cdn.bad.example"]).reason == (
        "url_blocked_domain"
    )


@pytest.mark.parametrize(
    ("written", "host"),
    [
        ("WWW.Bad.Example", "bad.example"),
        ("bad.example.", "bad.example"),
        ("bad.example:8443", "bad.example"),
        ("user:secret@bad.example:80", "bad.example"),
        ("Bücher.DE", "xn--bcher-kva.de"),
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("www.com", "www.com"),  # a site named www, not a www. prefix
        ("[::1]:8080", "[::1]"),
    ],
)
def test_hosts_are_normalized(written, host):
    assert normal_host(written) == host


def test_idn_domains_match_in_either_spelling():
    assert verdict("https://shop.bücher.de/", block_domains=["xn--bcher-kva.de"]).reason == (
        "url_blocked_domain"
    )
    assert verdict("https://xn--bcher-kva.de./", block_domains=["BÜCHER.de"]).reason == (
        "url_blocked_domain"
    )
    assert verdict("https://xn--bcher-kva.de/", allow_urls=["bücher.de"], block_domains=["de"]) is (
        None
    )


def test_whole_urls_ignore_scheme_port_fragment_but_keep_path_case():
    assert normal_url("HTTPS://WWW.Good.Example:443/A?b=C#frag") == "good.example/A?b=C"
    assert normal_url("good.example") == "good.example/"
    assert verdict("http://good.example/Private/page?id=7") is None


host_label = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)


@settings(max_examples=40)
@given(
    labels=st.lists(host_label, min_size=2, max_size=4),
    www=st.booleans(),
    port=st.none() | st.integers(1, 65535),
    upper=st.booleans(),
    dot=st.booleans(),
    scheme=st.sampled_from(["http://", "https://", ""]),
)
def test_a_listed_domain_blocks_every_spelling_of_its_subdomains(
    labels, www, port, upper, dot, scheme
):
    domain = ".".join(labels[-2:])
    host = ("www." if www else "") + ".".join(labels) + ("." if dot else "")
    if upper:
        host = host.upper()
    url = f"{scheme}{host}{'' if port is None else f':{port}'}/page"
    stage = UrlFilter(block_domains=[domain])
    assert judge_url(url, stage.rules(), 2) == Drop("url_blocked_domain", {"domain": domain})
    assert judge_url(url, UrlFilter(block_domains=[domain], allow_domains=[host]).rules(), 2) is (
        None
    )


spelled_host = st.builds(
    lambda labels, www, upper, dot, port: (
        ("WWW." if upper else "www.") * www + ".".join(labels).upper() * upper
        + ".".join(labels) * (not upper) + "." * dot + port
    ),
    st.lists(st.from_regex(r"[a-z0-9_][a-z0-9_-]{0,5}|bücher|ñ", fullmatch=True),
             min_size=1, max_size=3),
    st.booleans(), st.booleans(), st.booleans(), st.sampled_from(["", ":8080"]),
)  # fmt: skip


@settings(max_examples=60)
@given(st.lists(spelled_host, max_size=12))
def test_large_domain_lists_are_normalized_like_single_hosts(entries):
    # Lists are normalized in bulk (only unusual entries parsed one by one); the result
    # must be what normalizing each entry gives.
    expected = {normal_host(entry) for entry in entries} - {""}
    assert same_domains(UrlFilter(block_domains=entries).rules().block_domains, expected)


def same_domains(listed, expected: set[str]) -> bool:
    """A domain set holds exactly `expected` (its size, and each of them)."""
    return len(listed) == len(expected) and all(domain in listed for domain in expected)


@settings(max_examples=60)
@given(st.lists(spelled_host, max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_domain_list_files_are_normalized_like_single_hosts(tmp_path_factory, entries, newline):
    # The same from a file's bytes, scanned whole: entries in normal form are hashed as they
    # are, the others found and normalized one by one, wherever they sit in the file.
    path = tmp_path_factory.mktemp("lists") / "domains.txt"
    path.write_bytes((newline.join(entries) + newline).encode("utf-8"))
    expected = {normal_host(entry) for entry in entries} - {""}
    rules = UrlFilter(block_domains_files=[str(path)]).rules()
    assert same_domains(rules.block_domains, expected)
    assert "unlisted.example" not in rules.block_domains or "unlisted.example" in expected


def test_documents_without_url_are_kept_and_marked_or_dropped():
    doc = Document("a", "text", "web", {"title": "t"})
    kept = UrlFilter(**LISTS).apply(doc)
    assert isinstance(kept, Document) and kept.metadata["url_missing"] is True
    empty = Document("b", "text", "web", {"url": ""})
    assert UrlFilter(missing_url="drop").apply(empty) == Drop("no_url")
    listed = Document("c", "text", "web", {"link": "https://bad.example/"})
    assert UrlFilter(url_key="link", **LISTS).apply(listed).reason == "url_blocked_domain"


def test_list_files_with_comments_blank_lines_and_gzip(tmp_path: Path):
    domains = tmp_path / "domains.txt.gz"
    domains.write_bytes(
        gzip.compress(b"# blocked domains\n\nbad.example\n  Ads.Tracker.TEST  # since May\n")
    )
    # gzip-compressed without the .gz suffix is read all the same
    words = tmp_path / "words.lst"
    words.write_bytes(gzip.compress(b"casino\n#poker\n"))
    urls = tmp_path / "urls.txt"
    urls.write_text("https://good.example/page#part\n\n")
    soft = tmp_path / "soft.list"  # zstd, whatever the name
    soft.write_bytes(zstandard.ZstdCompressor().compress(b"bet\npoker # cards\n"))
    stage = build_stage(
        "url_filter",
        {
            "block_domains_files": [str(domains)],
            "banned_words_files": [str(words)],
            "block_urls_files": [str(urls)],
            "soft_banned_words_files": [str(soft)],
            "block_domains": ["inline.example"],
        },
    )
    rules = stage.rules()
    assert same_domains(rules.block_domains, {"bad.example", "ads.tracker.test", "inline.example"})
    assert rules.banned_words == {"casino"}
    assert rules.block_urls == {"good.example/page"}
    assert rules.soft_banned_words == {"bet", "poker"}


def test_missing_or_broken_list_file_is_a_config_error_naming_it(tmp_path: Path):
    missing = tmp_path / "nowhere" / "domains.txt"
    with pytest.raises(ConfigError, match=r"block_domains_files.*list file .*nowhere/domains"):
        build_stage("url_filter", {"block_domains_files": [str(missing)]})
    broken = tmp_path / "words.txt.gz"
    broken.write_bytes(gzip.compress(b"casino\n")[:12])
    stage = build_stage("url_filter", {"banned_words_files": [str(broken)]})
    with pytest.raises(ConfigError, match=r"list file .*words\.txt\.gz: cannot read"):
        stage.setup()


def write_warc(path: Path, pages: list[str]) -> None:
    paragraph = "This page explains one thing at length, in plain words for readers. " * 6
    html = f"<html><body><article><p>{paragraph}</p></article></body></html>".encode()
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url in pages:
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(html), http_headers=headers
            )
            writer.write_record(record)


def test_readme_pipeline_as_a_user_writes_it(tmp_path: Path, monkeypatch):
    (tmp_path / "crawl").mkdir()
    write_warc(
        tmp_path / "crawl" / "a.warc.gz",
        [
            "https://docs.good.example/intro",
            "https://www.BAD.example:8080/home",
            "https://example.org/spam/page#top",
            "https://good.example/Casino-Night",
            "https://good.example/free-porn-clips",
            "https://good.example/bet-and-win",
            "https://good.example/win-prizes",
            "https://partner.casino.example/rules",
        ],
    )
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "domains.txt.gz").write_bytes(
        gzip.compress(b"# blocked\nbad.example\ncasino.example\n")
    )
    (tmp_path / "pipeline.yaml").write_text(readme_block("yaml", "url_filter:"))
    monkeypatch.chdir(tmp_path)
    Pipeline.from_yaml(tmp_path / "pipeline.yaml").run()
    kept = pq.read_table(tmp_path / "clean").to_pylist()
    assert sorted(row["url"] for row in kept) == [
        "https://docs.good.example/intro",
        "https://good.example/win-prizes",
        "https://partner.casino.example/rules",
    ]
    excluded = pq.read_table(tmp_path / "clean" / "_excluded").to_pylist()
    reasons = {json.loads(row["metadata"])["url"]: row["reason"] for row in excluded}
    assert reasons == {
        "https://www.BAD.example:8080/home": "url_blocked_domain",
        "https://example.org/spam/page#top": "url_blocked_url",
        "https://good.example/Casino-Night": "url_banned_word",
        "https://good.example/free-porn-clips": "url_banned_subword",
        "https://good.example/bet-and-win": "url_soft_banned_words",
    }
    stats = json.loads((tmp_path / "clean" / "_stats.json").read_text())
    assert sum(stats["excluded_by"]["url_filter"].values()) == 5
    assert stats["kept"] == 3


def test_cli_refuses_a_missing_list_file_before_any_work(tmp_path: Path, monkeypatch, cli):
    (tmp_path / "crawl").mkdir()
    write_warc(tmp_path / "crawl" / "a.warc.gz", ["https://docs.good.example/intro"])
    (tmp_path / "pipeline.yaml").write_text(readme_block("yaml", "url_filter:"))
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("process", "pipeline.yaml")
    assert code == 2
    assert "list file 'lists/domains.txt.gz' not found" in err
    assert not (tmp_path / "clean").exists()


def test_a_domain_list_is_built_once_per_machine_and_mapped_after(tmp_path, monkeypatch):
    """The first worker builds a list file's domain set into the machine's cache, named by
    the file's bytes; the next maps it; a changed file gets its own, and a damaged copy in
    the cache is built again."""
    monkeypatch.setenv("MIXPLANE_CACHE", str(tmp_path / "cache"))
    listed = tmp_path / "domains.txt"
    listed.write_text("bad.example\nWWW.Ads.Test\n")
    first = UrlFilter(block_domains_files=[str(listed)]).rules().block_domains
    built = list((tmp_path / "cache" / "lists").glob("domains-*.npy"))
    assert len(built) == 1 and same_domains(first, {"bad.example", "ads.test"})
    again = UrlFilter(block_domains_files=[str(listed)]).rules().block_domains
    assert isinstance(again.hashes, np.memmap) and same_domains(again, {"bad.example", "ads.test"})
    listed.write_text("bad.example\nother.test\n")
    changed = UrlFilter(block_domains_files=[str(listed)]).rules().block_domains
    assert same_domains(changed, {"bad.example", "other.test"})
    assert len(list((tmp_path / "cache" / "lists").glob("domains-*.npy"))) == 2
    newest = max(
        (tmp_path / "cache" / "lists").glob("domains-*.npy"), key=lambda p: p.stat().st_mtime_ns
    )
    newest.write_bytes(b"not an array")
    rebuilt = UrlFilter(block_domains_files=[str(listed)]).rules().block_domains
    assert same_domains(rebuilt, {"bad.example", "other.test"})


def test_a_cache_that_cannot_be_written_only_costs_a_build(tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("MIXPLANE_CACHE", str(blocked))
    listed = tmp_path / "domains.txt"
    listed.write_text("bad.example\n")
    rules = UrlFilter(block_domains_files=[str(listed)], block_domains=["inline.example"]).rules()
    assert same_domains(rules.block_domains, {"bad.example", "inline.example"})
