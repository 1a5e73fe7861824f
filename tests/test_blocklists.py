"""Block lists (`wordlist`): the list format, per-language selection, word boundaries in
every script, C4's rule and the softer limits, the shipped LDNOOBW lists, and a real run."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane import run_pipeline
from mixplane.document import Document
from mixplane.errors import ConfigError
from mixplane.stages.build import build_stage
from mixplane.stages.quality.blocklists import builtin_lists, parse_terms
from mixplane.stages.quality.term_match import (
    TermMatcher,
    normal_term,
    normal_text,
    word_class,
)

LISTS = """\
# made-up terms for the tests
#! language: en
spam
junk mail   # a phrase
#! language: de, nl
quark
#! match: substring
schwein
#! language: hi
कम
#! language: ja
馬鹿
#! language: th
แมว
#! language: *
zzyzx
"""


@pytest.fixture
def lists(tmp_path):
    path = tmp_path / "blocked.txt"
    path.write_text(LISTS, encoding="utf-8")
    return str(path)


def _apply(text: str, language: str | None = None, **options):
    stage = build_stage("wordlist", options)
    metadata = {"language": language} if language else {}
    return stage.apply(Document("d", text, "web", metadata))


def test_the_format_reads_languages_match_rules_phrases_and_comments():
    terms = parse_terms(LISTS, "blocked.txt")
    got = {t.text: (t.languages, t.match) for t in terms}
    assert got == {
        "spam": (("en",), "word"),
        "junk mail": (("en",), "word"),
        "quark": (("de", "nl"), "word"),
        "schwein": (("de", "nl"), "substring"),
        "कम": (("hi",), "word"),
        "馬鹿": (("ja",), "substring"),  # written without spaces: substring by default
        "แมว": (("th",), "substring"),
        "zzyzx": (("*",), "word"),
    }
    # A file's language from the config holds until its first `#! language:` line.
    assert parse_terms("a\n#! language: fr-CA\nb\n", "x", "de")[1].languages == ("fr",)
    assert parse_terms("a\n", "x", "de")[0].languages == ("de",)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("ok\n#! langauge: de\n", "x.txt line 2: unknown directive 'langauge'"),
        ("#! match: fuzzy\n", "x.txt line 1: match is 'fuzzy'"),
        ("#! language: e1\n", "x.txt line 1: 'e1' is not a language code"),
        ("#! language:\n", "x.txt line 1: '#! language:' needs codes"),
    ],
)
def test_a_bad_list_line_is_one_error_naming_file_and_line(tmp_path, text, error):
    with pytest.raises(ConfigError, match=re.escape(error)):
        parse_terms(text, "x.txt")
    path = tmp_path / "x.txt"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(error[len("x.txt") :])):
        build_stage("wordlist", {"paths": [str(path)]})  # when the pipeline is built


def test_bad_options_fail_before_work(tmp_path):
    with pytest.raises(ConfigError, match="give block lists"):
        build_stage("wordlist", {})
    with pytest.raises(ConfigError, match="not found"):
        build_stage("wordlist", {"paths": [{"path": str(tmp_path / "no.txt"), "language": "de"}]})
    with pytest.raises(ConfigError, match="no built-in block list 'ldnoob'.*ldnoobw"):
        build_stage("wordlist", {"builtin": ["ldnoob"]})
    with pytest.raises(ConfigError, match="'e-1' is not a language code"):
        build_stage("wordlist", {"paths": [{"path": __file__, "language": "e-1"}]})


def test_each_document_is_checked_against_its_languages_terms(lists, tmp_path):
    text = "spam quark zzyzx"
    assert _apply(text, "en", paths=[lists], mode="annotate").metadata["wordlist_matches"] == 2
    assert _apply(text, "de", paths=[lists]).detail["terms"] == ["quark", "zzyzx"]
    assert _apply(text, "de-AT", paths=[lists]).detail["terms"] == ["quark", "zzyzx"]
    # Without a language (or `und`): every list, or only the terms for every language.
    for language in (None, "und"):
        assert _apply(text, language, paths=[lists]).detail["terms"] == ["quark", "spam", "zzyzx"]
        untagged = _apply(text, language, paths=[lists], unknown_language="untagged")
        assert untagged.detail["terms"] == ["zzyzx"]
    # A language no list has terms for is marked unchecked, not silently passed.
    english = tmp_path / "en.txt"
    english.write_text("spam\n")
    unchecked = _apply("spam", "sw", paths=[{"path": str(english), "language": "en"}])
    assert unchecked.metadata["wordlist_checked"] is False
    assert _apply("ok", "en", paths=[str(english)]).metadata["wordlist_checked"] is True


@pytest.mark.parametrize(
    ("text", "language", "found"),
    [
        ("SPAM, and more Spam.", "en", ["spam", "spam"]),  # case does not matter
        ("spammer antispam spam_folder spam2", "en", []),  # inside longer words: no
        ("junk\n  mail", "en", ["junk mail"]),  # a phrase across any whitespace
        ("junkmail junk-mail", "en", []),
        ("Schweinehund und Meerschweinchen", "de", ["schwein", "schwein"]),  # substring
        ("quarkkuchen", "de", []),
        # A Devanagari vowel sign is no `\w` to Python: C4's regex would find कम in कमी.
        ("कमी नहीं", "hi", []),
        ("बहुत कम है", "hi", ["कम"]),
        ("この馬鹿野郎", "ja", ["馬鹿"]),  # no spaces: found inside the run of text
        ("แมวดำตัวนั้น", "th", ["แมว"]),
        # Beside characters of those scripts a Latin term is a word of its own.
        ("我爱zzyzx编程", "zh", ["zzyzx"]),
        ("ที่zzyzxดี", "th", ["zzyzx"]),
        ("한국zzyzx", "ko", []),  # Korean is written with spaces: this is one word
    ],
)
def test_word_boundaries_and_substrings_in_every_script(lists, text, language, found):
    result = _apply(text, language, paths=[lists], mode="annotate")
    assert result.metadata["wordlist_matches"] == len(found)
    if found:
        assert _apply(text, language, paths=[lists]).detail["terms"] == sorted(set(found))


def test_case_sensitive_matching(tmp_path):
    path = tmp_path / "cased.txt"
    path.write_text("Spam\n")
    assert _apply("spam SPAM", paths=[str(path)], case_sensitive=True).__class__ is Document
    assert _apply("a Spam", paths=[str(path)], case_sensitive=True).detail["terms"] == ["Spam"]


def test_c4_rule_by_default_and_softer_limits(lists):
    text = "Spam is junk mail. " + "Plain words follow here. " * 10  # 3 listed words of 44
    drop = _apply(text, "en", paths=[lists])
    assert drop.reason == "too_many_listed_words"
    assert drop.detail == {
        "signal": "wordlist_ratio",
        "value": 3 / 44,
        "limit": 0.0,
        "terms": ["junk mail", "spam"],
    }
    kept = _apply(text, "en", paths=[lists], max_ratio=0.1, label="blocked")
    assert kept.metadata == {
        "language": "en",
        "blocked_checked": True,
        "blocked_matches": 2,
        "blocked_ratio": 3 / 44,
    }
    assert _apply(text, "en", paths=[lists], max_ratio=0.05).reason == "too_many_listed_words"
    counted = {"paths": [lists], "max_ratio": None}
    assert isinstance(_apply(text, "en", **counted, max_matches=2), Document)
    drop = _apply(text, "en", **counted, max_matches=1)
    assert (drop.reason, drop.detail["value"]) == ("too_many_listed_matches", 2)
    noted = _apply(text, "en", paths=[lists], mode="annotate")
    assert noted.text == text and noted.metadata["wordlist_reason"] == "too_many_listed_words"


def test_every_shipped_term_is_found_in_a_document_of_its_language():
    lists = builtin_lists()
    assert len(lists["ldnoobw"]) == 28
    stage = build_stage("wordlist", {"builtin": ["ldnoobw"], "mode": "annotate"})
    terms = stage.terms()
    assert len(terms) == 2663
    for term in terms:
        (language,) = term.languages
        matcher = stage.matcher(language)
        for written in (term.text, term.text.upper()):
            found = matcher.find(f"Before. {written} after.")
            assert normal_term(term.text, False) in found, (language, term.text, found)
    for path in lists["ldnoobw"]:
        head = path.read_text(encoding="utf-8")[:400]
        assert "Shutterstock" in head and "CC BY 4.0" in head
    assert (lists["ldnoobw"][0].parent / "LICENSE").read_text().startswith("Attribution 4.0")


def test_the_lists_content_is_in_the_provenance(lists, tmp_path):
    first = build_stage("wordlist", {"paths": [lists]}).provenance()["lists_sha256"]
    with open(lists, "a", encoding="utf-8") as handle:
        handle.write("more\n")
    assert build_stage("wordlist", {"paths": [lists]}).provenance()["lists_sha256"] != first


# The one compiled pattern against a search by hand, term by term: at each position from the
# left, the longest term of either kind that matches there (a word term only where no word
# character touches it), then on from its end. A small alphabet with a combining mark, a
# Han character and spaces makes terms overlap, nest and meet both kinds of boundary often.
_ALPHABET = "ab é\u0301-字"


def _by_hand(words: list[str], substrings: list[str], text: str) -> list[str]:
    part_of_word = re.compile(word_class())

    def literal(term: str) -> re.Pattern:
        return re.compile(re.escape(normal_term(term, False)).replace(r"\ ", r"\s+"))

    def alone(start: int, end: int) -> bool:  # no word character touches text[start:end]
        before = start > 0 and part_of_word.match(text, start - 1)
        return not before and not (end < len(text) and part_of_word.match(text, end))

    kinds = [(literal(t), True) for t in words if t.strip()]
    kinds += [(literal(t), False) for t in substrings if t.strip()]
    text = normal_text(text, False)
    found, position = [], 0
    while position < len(text):
        matches = [(pattern.match(text, position), word) for pattern, word in kinds]
        ends = [m.end() for m, word in matches if m and (not word or alone(position, m.end()))]
        if ends:
            found.append(" ".join(text[position : max(ends)].split()))
            position = max(ends)
        else:
            position += 1
    return found


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(_ALPHABET, min_size=1, max_size=4), min_size=1, max_size=8),
    st.lists(st.text(_ALPHABET, min_size=1, max_size=3), max_size=4),
    st.text(_ALPHABET, max_size=40),
)
def test_the_compiled_pattern_finds_the_longest_term_at_each_position(words, substrings, text):
    assert TermMatcher.build(words, substrings).find(text) == _by_hand(words, substrings, text)


def test_a_longer_substring_term_wins_over_a_word_term_it_starts_with():
    # LDNOOBW's Japanese list has both: "sm" (a word) and a longer term starting with it.
    matcher = TermMatcher.build(["sm"], ["sm女王"])
    assert matcher.find("sm女王 and sm, not smile") == ["sm女王", "sm"]


def test_a_pipeline_drops_by_language_and_gives_the_same_bytes_on_any_workers(tmp_path, lists):
    docs = [
        ("en-clean", "The weather was mild and the harvest was good this year."),
        ("en-listed", "The inbox was full of spam again this morning, sadly."),
        ("de-clean", "Das Wetter war mild und die Ernte war gut in diesem Jahr."),
        ("de-listed", "Zum Frühstück gab es Quark mit Honig und frischem Brot."),
        ("de-english-term", "Im Postfach lag wieder nur Spam, wie jeden Morgen."),
        ("ja-listed", "あの人は本当に馬鹿だと思います。今日は天気がいいですね。"),
    ]
    raw = tmp_path / "raw"
    raw.mkdir()
    for part in range(2):
        with open(raw / f"part-{part}.jsonl", "w", encoding="utf-8") as handle:
            for doc_id, text in docs[part::2]:
                handle.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    outputs = {}
    for workers in (1, 2):
        out = tmp_path / f"out-{workers}"
        config = {
            "input": str(raw / "*.jsonl"),
            "output": str(out),
            "workers": workers,
            "stages": [{"langid": {}}, {"wordlist": {"paths": [lists]}}],
        }
        result = run_pipeline(config)
        assert result.stats["excluded"] == 3
        outputs[workers] = sorted(
            (p.relative_to(out).as_posix(), p.read_bytes()) for p in out.rglob("*.parquet")
        )
    assert outputs[1] == outputs[2]
    kept = pq.read_table(tmp_path / "out-1").to_pylist()
    assert {row["id"] for row in kept} == {"en-clean", "de-clean", "de-english-term"}
    excluded = pq.read_table(tmp_path / "out-1" / "_excluded").to_pylist()
    reasons = {row["id"]: (row["reason"], json.loads(row["detail"])["terms"]) for row in excluded}
    assert reasons == {
        "en-listed": ("too_many_listed_words", ["spam"]),
        "de-listed": ("too_many_listed_words", ["quark"]),
        "ja-listed": ("too_many_listed_words", ["馬鹿"]),
    }
    manifest = json.loads((tmp_path / "out-1" / "_manifest.json").read_text())
    assert any("lists_sha256" in stage for stage in manifest["stages"])
