"""The `normalize` stage: each step, its option, and text that must come through unharmed."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.stages.build import build_stage
from mixplane.stages.normalize import Normalize


def norm(text: str, **options) -> str:
    return Normalize(**options).normalize(text)


CLEAN = {
    "german": "Grüße aus Köln – das Wetter ist schön, oder? „Ja“, sagte sie.",
    "french": "L’été dernier, nous sommes allés à Montréal ; c’était génial !",
    "japanese": "東京は日本の首都です。今日はいい天気ですね。",
    "chinese": "我们明天去北京参观故宫，你要一起来吗？",
    "korean": "서울은 한국의 수도입니다. 오늘 날씨가 좋네요.",
    "arabic": "مرحبا بكم في موقعنا. نحن سعداء بزيارتكم اليوم.",
    "hebrew": "שלום וברוכים הבאים לאתר שלנו. אנחנו שמחים שבאתם.",
    "russian": "Москва — столица России. «Добро пожаловать», сказал он.",
    "ukrainian": "Київ — столиця України. Ми раді вас бачити, друзі!",
    "emoji": "Family 👩‍👩‍👧 and flags 🇩🇪🇯🇵, thumbs 👍🏽 and ❤️ hearts",
    "code": "def area(r):\n    return 3.14159 * r ** 2\n\n\nclass Shape:\n\tpass",
    "rtl marks": "price \u200f100 \u200e€ and ZWNJ in Persian: می\u200cخواهم",
}


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_text_passes_unchanged(name: str):
    assert norm(CLEAN[name]) == CLEAN[name]


MOJIBAKE = [
    ("The Mona Lisa doesnâ€™t have eyebrows.", "The Mona Lisa doesn’t have eyebrows."),
    ("Grüße".encode().decode("cp1252"), "Grüße"),
    ("café au lait".encode().decode("latin-1"), "café au lait"),
    ("東京は日本の首都です".encode().decode("latin-1"), "東京は日本の首都です"),
    ("Привет, мир".encode().decode("cp1251"), "Привет, мир"),
    ("Ð\x9fÑ\x80Ð¸Ð²ÐµÑ\x82", "Привет"),
    ("für".encode().decode("mac_roman"), "für"),
]


@pytest.mark.parametrize(("broken", "fixed"), MOJIBAKE)
def test_mojibake_is_repaired(broken: str, fixed: str):
    assert norm(broken) == fixed


def test_mojibake_repair_can_be_turned_off():
    broken = "doesnâ€™t"
    assert norm(broken, fix_mojibake=False) == broken


def test_only_broken_lines_are_touched():
    text = "clean line with “quotes”\ncafÃ© line\nanother clean line …"
    assert norm(text) == "clean line with “quotes”\ncafé line\nanother clean line …"


def test_unicode_normal_forms():
    decomposed = "Cafe\u0301 ﬁle ＡＢＣ ①"
    assert norm(decomposed) == "Café ﬁle ＡＢＣ ①"
    assert unicodedata.is_normalized("NFC", norm(decomposed))
    assert norm(decomposed, unicode_form="NFKC") == "Café file ABC 1"
    assert norm(decomposed, unicode_form="NFD") == unicodedata.normalize("NFD", decomposed)
    assert norm(decomposed, unicode_form="none") == decomposed


def test_control_characters_go_tab_and_newline_stay():
    text = "a\x00b\x07c\td\ne\x1b[31mred\x1b[0m\x7f\ufeff f"
    assert norm(text) == "abc\td\nered f"
    assert norm(text, remove_control_chars=False, fix_mojibake=False) == text


def test_lone_surrogates_never_reach_the_output():
    # They cannot be written as UTF-8: ftfy marks them as unreadable, or they are removed.
    assert norm("bad \ud800 byte") == "bad \ufffd byte"
    assert norm("bad \ud800 byte", fix_mojibake=False) == "bad  byte"


def test_line_endings():
    text = "one\r\ntwo\rthree\u2028four\u2029five\x0csix\x0bseven"
    assert norm(text) == "one\ntwo\nthree\nfour\nfive\nsix\nseven"
    kept = norm("one\r\ntwo", line_endings=False)
    assert kept == "one\r\ntwo"


def test_trailing_spaces_and_blank_lines():
    text = "title  \n\n\n\n\n\nbody\t \n  \n \nend   "
    assert norm(text) == "title\n\n\nbody\n\n\nend"
    assert norm(text, max_blank_lines=0) == "title\nbody\nend"
    assert norm(text, max_blank_lines=1) == "title\n\nbody\n\nend"
    assert norm(text, max_blank_lines=None) == "title\n\n\n\n\n\nbody\n\n\nend"
    untouched = norm(text, strip_trailing_spaces=False, max_blank_lines=None, trim=False)
    assert untouched == text


def test_exotic_spaces_become_plain_but_ideographic_space_stays():
    text = "10\u00a0km, thin\u2009space, narrow\u202fno-break, 日本\u3000語"
    assert norm(text) == "10 km, thin space, narrow no-break, 日本\u3000語"
    assert norm(text, unicode_spaces=False) == text


def test_collapse_spaces_keeps_indentation():
    text = "    indented   code  = 1\nword    word"
    assert norm(text) == text
    assert norm(text, collapse_spaces=True) == "    indented code = 1\nword word"


def test_trim_removes_leading_blank_lines_and_trailing_whitespace_only():
    assert norm("\n \n\n  first line\nlast  \n\n") == "  first line\nlast"
    assert norm("\n\nx\n\n", trim=False) == "\n\nx\n\n"


def test_html_entities_only_on_request():
    text = "Tom &amp; Jerry &lt;3 &eacute;t&eacute;"
    assert norm(text) == text
    assert norm(text, unescape_html=True) == "Tom & Jerry <3 été"


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n", "\x00\x01\x02", "\ufeff"])
def test_documents_left_empty_are_dropped(text: str):
    stage = build_stage("normalize", {})
    assert stage.apply(Document("e", text, "web")) == Drop("empty")


def test_empty_documents_kept_when_asked():
    doc = build_stage("normalize", {"drop_empty": False}).apply(Document("e", " \n ", "web"))
    assert isinstance(doc, Document) and doc.text == ""


def test_very_long_lines():
    words = "lorem ipsum dolor sit amet, " * 40_000
    out = norm((words + "  \r\n") * 2)
    assert out == words.rstrip() + "\n" + words.rstrip()


def test_batch_equals_one_by_one_and_metadata_is_kept():
    texts = list(CLEAN.values()) + [broken for broken, _ in MOJIBAKE] + ["", "x\r\n"]
    stage = Normalize()
    docs = [Document(str(i), t, "web", {"k": i}) for i, t in enumerate(texts)]
    batch = stage.apply_batch([Document(d.id, d.text, d.source, dict(d.metadata)) for d in docs])
    single = [stage.apply(d) for d in docs]
    assert batch == single
    assert all(r.metadata == {"k": int(r.id)} for r in batch if isinstance(r, Document))


text_samples = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",))
    | st.sampled_from("\r\n\t \u00a0Ã©â€™"),
    max_size=200,
)


@given(text_samples)
@settings(max_examples=400, deadline=None)
def test_normalizing_twice_changes_nothing(text: str):
    once = norm(text)
    assert norm(once) == once


@given(text_samples)
@settings(max_examples=200, deadline=None)
def test_output_has_no_controls_and_no_carriage_returns(text: str):
    out = norm(text)
    assert "\r" not in out
    assert all(ch in "\t\n" or unicodedata.category(ch) != "Cc" for ch in out)
    assert "\n\n\n\n" not in out
    assert out == out.rstrip()


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown option 'nfc'.*Valid options: fix_mojibake"):
        build_stage("normalize", {"nfc": True})
    with pytest.raises(ConfigError, match="unicode_form"):
        build_stage("normalize", {"unicode_form": "NFX"})
    with pytest.raises(ConfigError, match="max_blank_lines"):
        build_stage("normalize", {"max_blank_lines": -1})
