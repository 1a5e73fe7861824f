"""The synthetic corpus: reproducible bytes, exact counts, languages, and ground truth that the
real pipeline confirms (ids, similarities, quarantined records)."""

from __future__ import annotations

import gzip
import ipaddress
import json
import random
import sys
from collections import Counter
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner
from warcio.archiveiterator import ArchiveIterator

from mixplane import run_pipeline
from mixplane.cli import app
from mixplane.errors import InputError
from mixplane.synth import generate_corpus
from mixplane.synth.languages import LANGUAGES
from mixplane.synth.pii import credit_card, luhn_valid, order_number
from mixplane.synth.plan import NEAR_TARGETS, file_sizes, largest_remainder, source_counts
from mixplane.synth.similarity import TOLERANCE, jaccard, near_duplicate

DOCS = 2400
SEED = 11
GOPHER_STOP_WORDS = {"the", "be", "to", "of", "and", "that", "have", "with"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("synth") / "corpus"
    return out, generate_corpus(str(out), DOCS, SEED, faults=True)


@pytest.fixture(scope="module")
def processed(corpus, tmp_path_factory) -> dict[str, str]:
    """Every clean file through the real pipeline (no stages): id -> text as it reads them."""
    out, _ = corpus
    raw = out / "raw"
    inputs = [
        f"{raw}/web/web-0*.warc.gz",
        f"{raw}/web_html/*.html",
        f"{raw}/wiki/wiki-0*.jsonl.zst",
        f"{raw}/code/*.jsonl.gz",
        f"{raw}/forum/*.parquet",
    ]
    target = tmp_path_factory.mktemp("processed")
    result = run_pipeline({"input": inputs, "output": str(target)})
    assert result.stats["quarantined"] == 0
    documents: dict[str, str] = {}
    for part in sorted(target.glob("part-*.parquet")):
        table = pq.read_table(part, columns=["id", "text"])
        for doc_id, text in zip(table["id"].to_pylist(), table["text"].to_pylist(), strict=True):
            assert doc_id not in documents, f"duplicate id {doc_id}"
            documents[doc_id] = text
    return documents


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_same_seed_gives_byte_identical_files(tmp_path: Path):
    first, second, other = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate_corpus(str(first), 400, 3, faults=True)
    generate_corpus(str(second), 400, 3, faults=True)
    generate_corpus(str(other), 200, 4)
    tree = _tree(first)
    assert tree == _tree(second)
    assert any(name.endswith(".warc.gz") for name in tree)
    assert not any(Path(name).name.startswith(".") for name in tree), "temporary files left"
    assert _tree(other)["raw/wiki/wiki-0000.jsonl.zst"] != tree["raw/wiki/wiki-0000.jsonl.zst"]


def test_faults_leave_the_clean_files_unchanged(tmp_path: Path):
    generate_corpus(str(tmp_path / "clean"), 300, 9)
    generate_corpus(str(tmp_path / "faulty"), 300, 9, faults=True)
    clean, faulty = _tree(tmp_path / "clean" / "raw"), _tree(tmp_path / "faulty" / "raw")
    assert {name: faulty[name] for name in clean} == clean
    assert set(faulty) - set(clean) == {
        "wiki/wiki-faulty.jsonl",
        "wiki/empty.jsonl",
        "wiki/wiki-truncated.jsonl.zst",
        "web/web-truncated.warc.gz",
    }


def _count_records(path: Path) -> int:
    if path.name.endswith(".warc.gz"):
        with path.open("rb") as handle:
            return sum(1 for r in ArchiveIterator(handle) if r.rec_type == "response")
    if path.name.endswith(".parquet"):
        return pq.ParquetFile(path).metadata.num_rows
    if path.name.endswith(".zst"):
        data = zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read()
    elif path.name.endswith(".gz"):
        data = gzip.decompress(path.read_bytes())
    else:
        return 1
    return data.count(b"\n")


def test_counts_match_the_request_and_the_files(corpus):
    out, summary = corpus
    assert summary.documents == DOCS
    assert sum(info["documents"] for info in summary.sources.values()) == DOCS
    assert {s: info["documents"] for s, info in summary.sources.items()} == source_counts(DOCS)
    for source, info in summary.sources.items():
        counted = sum(_count_records(out / name) for name in info["files"])
        assert counted == info["documents"], source
        if source != "web_html":
            assert len(info["files"]) >= 4, "duplicates must be able to cross files"
    saved = json.loads((out / "truth" / "summary.json").read_text())
    assert saved == json.loads(json.dumps(summary.to_dict()))
    assert sum(summary.kinds.values()) == DOCS
    assert set(summary.kinds) == {"clean", "spam", "low_quality", "pii"}


def test_languages_are_present_in_realistic_proportions(corpus):
    out, summary = corpus
    languages = summary.languages
    assert {"en", "de", "fr", "es", "zh", "ja"} <= set(languages)
    natural = sum(n for code, n in languages.items() if code in LANGUAGES)
    assert languages["en"] / natural > 0.45
    assert languages["ja"] < languages["zh"] < languages["en"]
    assert set(summary.programming_languages) == {"python", "javascript", "c", "go", "rust"}
    stream = zstandard.ZstdDecompressor().stream_reader(
        (out / "raw/wiki/wiki-0000.jsonl.zst").open("rb")
    )
    records = [orjson.loads(line) for line in stream.read().splitlines()]
    assert {"id", "title", "text", "url", "lang", "license"} <= set(records[0])
    for record in records:
        text = record["text"]
        if record["lang"] == "en":
            words = set(text.lower().replace(".", " ").replace(",", " ").split())
            assert len(words & GOPHER_STOP_WORDS) >= 2
        elif record["lang"] == "zh":
            first_paragraph = text.split("\n")[0]
            assert "。" in first_paragraph and " " not in first_paragraph


def test_ground_truth_ids_are_the_pipeline_ids(corpus, processed):
    out, summary = corpus
    labels = pq.read_table(out / "truth" / "documents.parquet").to_pylist()
    assert len(labels) == DOCS
    assert {label["id"] for label in labels} == set(processed)
    pairs = [
        orjson.loads(line) for line in (out / "truth/duplicates.jsonl").read_bytes().splitlines()
    ]
    assert len(pairs) == summary.duplicates["pairs"] > 0
    for pair in pairs:
        assert pair["a"] in processed and pair["b"] in processed
    forum = [label["id"] for label in labels if label["source"] == "forum"]
    assert all(doc_id.startswith("forum/forum-") and "#" in doc_id for doc_id in forum)


def test_duplicate_similarities_hold_on_the_pipeline_texts(corpus, processed):
    out, _ = corpus
    pairs = [
        orjson.loads(line) for line in (out / "truth/duplicates.jsonl").read_bytes().splitlines()
    ]
    files = {r["id"]: r["file"] for r in pq.read_table(out / "truth/documents.parquet").to_pylist()}
    kinds = Counter(pair["kind"] for pair in pairs)
    assert kinds["exact"] > 20 and kinds["near"] > 20
    assert {p["target_similarity"] for p in pairs if p["kind"] == "near"} == set(NEAR_TARGETS)
    for pair in pairs:
        a, b = processed[pair["a"]], processed[pair["b"]]
        if pair["kind"] == "exact":
            assert a == b and pair["jaccard"] == 1.0
        else:
            measured = jaccard(a, b)
            assert measured == pytest.approx(pair["jaccard"], abs=1e-6)
            assert abs(measured - pair["target_similarity"]) <= TOLERANCE
    crossing = sum(1 for pair in pairs if files[pair["a"]] != files[pair["b"]])
    assert crossing / len(pairs) > 0.5
    web_exact = [p for p in pairs if p["kind"] == "exact" and p["b"].startswith("urn:uuid:")]
    assert web_exact, "web pages must have exact duplicates too"


def test_every_exact_duplicate_is_a_listed_pair(corpus, processed):
    out, _ = corpus
    pairs = [
        orjson.loads(line) for line in (out / "truth/duplicates.jsonl").read_bytes().splitlines()
    ]
    listed = {frozenset((p["a"], p["b"])) for p in pairs if p["kind"] == "exact"}
    by_text: dict[str, list[str]] = {}
    for doc_id, text in processed.items():
        by_text.setdefault(text, []).append(doc_id)
    found = {frozenset(ids) for ids in by_text.values() if len(ids) > 1}
    assert found == listed


def test_planted_pii_is_in_the_texts(corpus, processed):
    out, summary = corpus
    rows = [orjson.loads(line) for line in (out / "truth/pii.jsonl").read_bytes().splitlines()]
    found = Counter()
    for row in rows:
        text = processed[row["id"]]
        for item in row["pii"] + row["lookalikes"]:
            assert item["value"] in text
            found[item["type"]] += 1
            if item["type"] == "credit_card":
                assert luhn_valid(item["value"])
            if item["type"] == "order":
                assert not luhn_valid(item["value"])
            if item["type"] in ("ipv4", "ipv6"):
                address = ipaddress.ip_address(item["value"])
                assert (item["scope"] == "public") == address.is_global
    assert {"email", "phone", "ipv4", "ipv6", "credit_card", "version", "isbn"} <= set(found)
    assert summary.pii["documents_with_pii"] == sum(1 for row in rows if row["pii"])


def test_web_pages_carry_boilerplate_spam_and_junk(corpus):
    out, summary = corpus
    with (out / "raw/web/web-0000.warc.gz").open("rb") as handle:
        pages = [
            (r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read().decode())
            for r in ArchiveIterator(handle, check_digests="raise")
            if r.rec_type == "response"
        ]
    assert all(url.startswith("https://") for url, _ in pages)
    html = [page for _, page in pages]
    assert all("<nav" in page and "<footer>" in page and "<script" in page for page in html)
    assert sum("cookie-banner" in page for page in html) > len(html) / 3
    assert any("<article>" in page and page.count("<p>") > 3 for page in html)
    assert any(page.count("buy ") > 20 for page in html), "a link farm"
    assert summary.kinds_by_source["web"]["low_quality"] > 0
    assert (
        len(list((out / "raw/web_html").glob("*.html"))) == summary.sources["web_html"]["documents"]
    )


def _fault_cases() -> list:
    cases = []
    for name in (
        "raw/wiki/wiki-faulty.jsonl",
        "raw/wiki/empty.jsonl",
        "raw/wiki/wiki-truncated.jsonl.zst",
        "raw/web/web-truncated.warc.gz",
    ):
        cases.append(pytest.param(name, id=Path(name).name))
    return cases


@pytest.mark.parametrize("name", _fault_cases())
def test_fault_files_quarantine_exactly_the_recorded_records(corpus, tmp_path: Path, name: str):
    out, summary = corpus
    expected = summary.faults["files"][name]
    result = run_pipeline({"input": str(out / name), "output": str(tmp_path / "o")})
    stats = result.stats
    assert stats["documents_in"] == expected["bad_records"] + expected["good_records"]
    assert stats["quarantined"] == expected["bad_records"]
    assert stats["kept"] == expected["good_records"]


def test_cli_writes_the_corpus_and_reports_json(tmp_path: Path):
    runner = CliRunner()
    target = tmp_path / "cli"
    done = runner.invoke(app, ["synth", str(target), "--docs", "300", "--seed", "2", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["documents"] == 300 and report["seed"] == 2
    assert (target / "truth" / "duplicates.jsonl").exists()
    again = runner.invoke(app, ["synth", str(target), "--docs", "300"])
    assert isinstance(again.exception, InputError)
    assert "--overwrite" in str(again.exception)


def test_console_entry_point_summarises_and_fails_in_one_line(tmp_path: Path, monkeypatch, capsys):
    from mixplane.cli import main

    command = ["mixplane", "synth", str(tmp_path / "c"), "--docs", "120"]
    monkeypatch.setattr(sys, "argv", command)
    with pytest.raises(SystemExit) as done:
        main()
    assert done.value.code == 0
    printed = capsys.readouterr()
    assert "120 documents" in printed.out and "duplicate pairs" in printed.out
    assert "duplicate pairs" not in printed.err
    with pytest.raises(SystemExit) as again:
        main()
    assert again.value.code == 2
    assert "already exists" in capsys.readouterr().err


@given(st.integers(0, 2**32))
def test_generated_card_numbers_pass_luhn_and_order_numbers_fail(seed: int):
    rng = random.Random(seed)
    assert luhn_valid(credit_card(rng))
    assert not luhn_valid(order_number(rng))


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 2**32), st.sampled_from(NEAR_TARGETS), st.sampled_from(["en", "de", "fr", "es"])
)
def test_near_duplicates_land_within_tolerance(seed: int, target: float, code: str):
    from mixplane.synth.prose import encyclopedia_article

    rng = random.Random(seed)
    language = LANGUAGES[code]
    _, text = encyclopedia_article(language, rng, sentences=60)
    copy, value = near_duplicate(text, target, rng, language.replacement_words)
    assert value == pytest.approx(jaccard(text, copy), abs=1e-12)
    assert abs(value - target) <= TOLERANCE


@given(st.integers(0, 3_000_000))
def test_sources_and_files_partition_the_documents(documents: int):
    counts = source_counts(documents)
    assert sum(counts.values()) == documents
    for source, count in counts.items():
        if source != "web_html":
            sizes = file_sizes(source, count)
            assert sum(sizes) == count
            assert all(0 < size <= 25_000 for size in sizes)


@settings(max_examples=50)
@given(
    st.integers(0, 10_000), st.dictionaries(st.text(min_size=1), st.floats(0.01, 10), min_size=1)
)
def test_largest_remainder_is_exact(total: int, weights: dict[str, float]):
    counts = largest_remainder(total, weights)
    assert sum(counts.values()) == total
    norm = sum(weights.values())
    assert all(abs(counts[k] - total * w / norm) < 1 for k, w in weights.items())
