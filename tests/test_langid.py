"""The `langid` stage: languages and scores, Chinese versus Japanese, filtering options."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from py3langid.langid import MODEL_FILE, LanguageIdentifier

from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.stages.build import build_stage
from mixplane.stages.langid import LanguageId
from mixplane.stages.langid.codes import MODEL_CODES, fold_to_codes
from mixplane.stages.langid.model import NgramLanguageModel

SAMPLES = {
    "en": "The library opens at nine in the morning, and most visitors come for the "
    "newspapers before they head to work.",
    "de": "Die Bibliothek öffnet um neun Uhr morgens, und die meisten Besucher kommen "
    "wegen der Zeitungen, bevor sie zur Arbeit gehen.",
    "fr": "La bibliothèque ouvre à neuf heures du matin et la plupart des visiteurs "
    "viennent lire les journaux avant d'aller travailler.",
    "es": "La biblioteca abre a las nueve de la mañana y la mayoría de los visitantes "
    "vienen por los periódicos antes de ir al trabajo.",
    "it": "La biblioteca apre alle nove del mattino e la maggior parte dei visitatori "
    "viene a leggere i giornali prima di andare al lavoro.",
    "nl": "De bibliotheek gaat om negen uur 's ochtends open en de meeste bezoekers "
    "komen voor de kranten voordat ze naar hun werk gaan.",
    "ru": "Библиотека открывается в девять утра, и большинство посетителей приходят "
    "почитать газеты перед работой.",
    "uk": "Бібліотека відкривається о дев'ятій ранку, і більшість відвідувачів "
    "приходять почитати газети перед роботою.",
    "el": "Η βιβλιοθήκη ανοίγει στις εννέα το πρωί και οι περισσότεροι επισκέπτες "
    "έρχονται για τις εφημερίδες πριν πάνε στη δουλειά.",
    "ar": "تفتح المكتبة أبوابها في التاسعة صباحا، ويأتي معظم الزوار لقراءة الصحف "
    "قبل الذهاب إلى العمل.",
    "he": "הספרייה נפתחת בתשע בבוקר, ורוב המבקרים באים לקרוא עיתונים לפני שהם הולכים לעבודה.",
    "hi": "पुस्तकालय सुबह नौ बजे खुलता है और ज़्यादातर लोग काम पर जाने से पहले अख़बार पढ़ने आते हैं।",
    "ko": "도서관은 아침 아홉 시에 문을 열고, 대부분의 방문객은 출근하기 전에 신문을 "
    "읽으러 옵니다.",
    "th": "ห้องสมุดเปิดตอนเก้าโมงเช้า และผู้มาเยือนส่วนใหญ่มาอ่านหนังสือพิมพ์ก่อนไปทำงาน",
    "zh": "图书馆早上九点开门，大多数读者在上班之前来这里看报纸。",
    "ja": "図書館は朝九時に開館し、ほとんどの利用者は仕事に行く前に新聞を読みに来ます。",
}


STAGE = LanguageId()


@pytest.fixture(scope="module")
def stage() -> LanguageId:
    STAGE.setup()
    return STAGE


@pytest.fixture(scope="module")
def model() -> NgramLanguageModel:
    return NgramLanguageModel.load()


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_identifies_languages_with_iso_codes(stage: LanguageId, language: str):
    code, score = stage.detect(SAMPLES[language])
    assert code == language
    assert 0.5 < score <= 1.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我們明天去台北參觀故宮博物院，你要一起來嗎？", "zh"),  # traditional Chinese
        ("佢哋而家喺度食緊飯，我哋一陣再傾啦。", "zh"),  # Cantonese folds into zh
        ("東京都千代田区丸の内一丁目", "ja"),  # mostly kanji, some kana
        ("カタカナだけのテキストです", "ja"),
        ("日本語と中文が混ざった文章ですが、かなが多いので日本語です。", "ja"),
        ("北京大学中文系", "zh"),
    ],
)
def test_kana_separates_japanese_from_chinese(stage: LanguageId, text: str, expected: str):
    assert stage.detect(text)[0] == expected


def test_short_han_only_text_is_less_certain_than_a_long_one(stage: LanguageId):
    short = stage.detect("北京大学")
    long = stage.detect(SAMPLES["zh"])
    assert short[0] == long[0] == "zh"
    assert short[1] < 0.9 < long[1]


@pytest.mark.parametrize("text", ["", "   ", "12345 678.90", "🙂🚀🎉", "--- *** ===", "\n\n"])
def test_text_without_letters_is_undetermined(stage: LanguageId, text: str):
    assert stage.detect(text) == ("und", 0.0)


def test_code_and_mixed_text_get_a_low_score(stage: LanguageId):
    code, score = stage.detect("x = f(a, b)\nif x: return y[0]")
    assert score < 0.5
    assert stage.detect(SAMPLES["en"])[1] > 0.9


def test_scores_are_probabilities_of_the_whole_distribution(model: NgramLanguageModel):
    codes, fold = fold_to_codes(model.labels)
    rows = model.probabilities([model.encode(text) for text in SAMPLES.values()]) @ fold
    assert np.allclose(rows.sum(axis=1), 1.0)
    assert (rows >= 0).all()
    assert set(codes) == MODEL_CODES


def test_batched_walk_matches_the_library_exactly_enough(model: NgramLanguageModel):
    """The vectorized automaton gives py3langid's own probabilities (float rounding aside)."""
    library = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    texts = [*SAMPLES.values(), "short", "ÄÖÜ äöü ß", "x" * 3000, "مرحبا " * 50, "a"]
    rows = model.probabilities([model.encode(text) for text in texts])
    for text, row in zip(texts, rows, strict=True):
        expected = dict(library.rank(text))
        if row.sum() == 0:  # no feature at all: the library answers with a flat row
            assert len(set(expected.values())) <= 2
            continue
        ours = dict(zip(model.labels, row, strict=True))
        assert max(abs(ours[label] - expected[label]) for label in expected) < 1e-4
        assert max(ours, key=ours.get) == max(expected, key=expected.get)


def test_results_do_not_depend_on_the_batch(stage: LanguageId):
    texts = list(SAMPLES.values()) + ["", "mixed English und Deutsch", "x" * 5000]
    batch = stage.apply_batch([Document(str(i), t, "web") for i, t in enumerate(texts)])
    alone = [stage.apply(Document(str(i), t, "web")) for i, t in enumerate(texts)]
    assert [d.metadata for d in batch] == [d.metadata for d in alone]
    reversed_batch = stage.apply_batch(
        [Document(str(i), t, "web") for i, t in reversed(list(enumerate(texts)))]
    )
    assert [d.metadata for d in reversed_batch[::-1]] == [d.metadata for d in batch]


def test_only_annotates_without_keep_or_min_score(stage: LanguageId):
    docs = [Document(lang, text, "web") for lang, text in SAMPLES.items()]
    results = stage.apply_batch(docs)
    assert all(isinstance(r, Document) for r in results)
    assert {r.id: r.metadata["language"] for r in results} == {k: k for k in SAMPLES}


def test_keep_drops_other_languages_with_a_reason():
    keep = build_stage("langid", {"keep": ["en", "DE"]})
    results = keep.apply_batch([Document(k, v, "web") for k, v in SAMPLES.items()])
    kept = {r.id for r in results if isinstance(r, Document)}
    assert kept == {"en", "de"}
    dropped = [r for r in results if isinstance(r, Drop)]
    assert {r.reason for r in dropped} == {"language_not_kept"}
    assert {r.detail["language"] for r in dropped} == set(SAMPLES) - {"en", "de"}


def test_min_score_drops_uncertain_documents():
    stage = build_stage("langid", {"min_score": 0.9})
    sure = stage.apply(Document("a", SAMPLES["fr"], "web"))
    unsure = stage.apply(Document("b", "x = f(a, b)\nif x: return y[0]", "web"))
    empty = stage.apply(Document("c", "", "web"))
    assert isinstance(sure, Document) and sure.metadata["language"] == "fr"
    assert isinstance(unsure, Drop) and unsure.reason == "low_language_score"
    assert isinstance(empty, Drop) and empty.detail == {"language": "und", "score": 0.0}


def test_only_the_first_characters_are_read():
    stage = build_stage("langid", {"sample_chars": 300})
    text = SAMPLES["de"] * 2 + SAMPLES["en"] * 1000 + "z" * 1_000_000
    assert stage.apply(Document("a", text, "web")).metadata["language"] == "de"


def test_right_to_left_text_with_latin_words(stage: LanguageId):
    text = SAMPLES["ar"] + " (Python, JSON) " + SAMPLES["ar"]
    assert stage.detect(text)[0] == "ar"


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400))
@settings(max_examples=300, deadline=None)
def test_any_text_gets_a_known_code_and_a_probability(text: str):
    code, score = STAGE.detect(text)
    assert code in MODEL_CODES | {"und"}
    assert 0.0 <= score <= 1.0


def test_bad_language_codes_fail_with_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown language code\(s\) \['english'\].*de, dz"):
        build_stage("langid", {"keep": ["english"]})
    with pytest.raises(ConfigError, match="min_score"):
        build_stage("langid", {"min_score": 1.5})
