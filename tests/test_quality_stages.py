"""Quality stages on tricky inputs, in annotate mode, with word lists, and in a real pipeline."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from mixplane import run_pipeline
from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.stages.build import build_stage

FILTERS = ("gopher_quality", "gopher_repetition", "c4", "fineweb")
PROSE = "\n".join(
    [
        "The history of the city goes back to a small market town on the river.",
        "Farmers brought their grain to the market and traded it with merchants from the coast.",
        "Over the centuries the town grew, and new bridges were built across the water.",
        "In the nineteenth century the railway arrived and changed the life of every family.",
        "Factories opened near the station, and workers moved in from the nearby villages.",
        "Today the old market square is a quiet place with cafes, shops and a weekly fair.",
    ]
)
CHINESE = "\n".join(
    [
        "城市的历史可以追溯到河边的一个小集镇，农民把粮食带到市场上和商人交易。",
        "几个世纪以来，小镇不断发展，人们在河上修建了新的桥梁，生活也越来越好。",
        "十九世纪铁路通到这里，改变了每个家庭的生活，很多工人从附近的村子搬来。",
        "今天老市场广场是一个安静的地方，有咖啡馆、商店和每周一次的集市活动。",
    ]
)


def _apply(name: str, text: str, metadata: dict | None = None, **options):
    return build_stage(name, options).apply(Document("doc", text, "web", dict(metadata or {})))


@pytest.mark.parametrize("name", FILTERS)
def test_empty_documents_are_dropped_not_crashed(name):
    assert isinstance(_apply(name, ""), Drop)
    assert isinstance(_apply(name, "", mode="annotate"), Document)
    blank = _apply(name, "   \n\n  ")
    # Blank text has no repeated lines or n-grams: only the repetition rules let it pass.
    assert isinstance(blank, Document if name == "gopher_repetition" else Drop)


def test_chinese_is_not_one_long_word():
    # Split like English, each Chinese line is a handful of huge "words".
    assert _apply("gopher_quality", CHINESE, language_aware=False).reason == "too_few_words"
    assert _apply("fineweb", CHINESE, language_aware=False).reason == "too_many_newlines"
    assert isinstance(_apply("fineweb", CHINESE), Document)
    assert isinstance(_apply("gopher_repetition", CHINESE), Document)
    # Gopher's stop words are English; Chinese ones can be given per language.
    assert _apply("gopher_quality", CHINESE).reason == "too_few_stop_words"
    kept = _apply("gopher_quality", CHINESE, {"language": "zh"},
                  stop_words_by_language={"zh": ["的", "了", "是"]})  # fmt: skip
    assert isinstance(kept, Document) and kept.metadata["gopher_stop_words"] == 3


def test_chinese_lines_count_as_words_in_c4():
    text = CHINESE.replace("。", ".")
    assert isinstance(_apply("c4", text, min_sentences=4), Document)
    assert _apply("c4", text, language_aware=False).reason == "too_few_sentences"


def test_right_to_left_text_is_measured_in_words():
    arabic = "\n".join(
        ["ذهب الطالب إلى المدرسة في الصباح الباكر مع أصدقائه ثم عاد إلى البيت."] * 1
        + ["كانت المدينة جميلة جدا في فصل الربيع والناس يمشون في الشوارع الواسعة."]
    )
    metadata = _apply("gopher_quality", arabic, mode="annotate").metadata
    assert metadata["gopher_words"] == 25
    assert 3 <= metadata["gopher_mean_word_length"] <= 10


def test_code_and_emoji_documents():
    code = "\n".join(["def main(argv):", "    for item in items:", "        print(item)"] * 5)
    assert _apply("fineweb", code).reason == "too_few_punctuated_lines"
    assert isinstance(_apply("gopher_quality", code), Drop)
    emoji = PROSE.replace(".", ". 🎉🔥") + "\n" + "👍" * 400
    metadata = _apply("gopher_quality", emoji, mode="annotate").metadata
    assert metadata["gopher_words"] > 60
    # Each emoji is a token of its own, so a run of them is a highly repeated 2-gram.
    assert _apply("gopher_repetition", emoji).reason == "top_2gram"


def test_very_long_line_document():
    text = PROSE + "\n" + " ".join(["segment"] * 30_000) + "."
    assert _apply("gopher_repetition", text).reason == "top_2gram"
    assert _apply("c4", text).text.startswith("The history")


def test_annotate_mode_keeps_and_adds_every_signal():
    bad = "Buy now\nBuy now\nBuy now"
    stage = build_stage("fineweb", {"mode": "annotate"})
    result = stage.apply(Document("a", bad, "web"))
    assert isinstance(result, Document) and result.text == bad
    assert set(stage.adds) <= set(result.metadata)
    assert result.metadata["fineweb_reason"] == "too_few_punctuated_lines"
    good = build_stage("c4", {"mode": "annotate"}).apply(Document("b", PROSE + "\nMenu", "w"))
    assert good.metadata["c4_reason"] == "" and good.text.endswith("Menu")


def test_filter_mode_signals_on_kept_documents_only_when_asked():
    kept = _apply("gopher_quality", PROSE)
    assert kept.metadata["gopher_stop_words"] >= 2
    assert "gopher_words" not in _apply("gopher_quality", PROSE, keep_signals=False).metadata


def test_score_stage_annotates_with_several_filters():
    score = build_stage(
        "score", {"filters": ["c4", "fineweb"], "options": {"c4": {"min_sentences": 9}}}
    )
    result = score.apply(Document("a", PROSE, "web"))
    assert result.metadata["c4_reason"] == "too_few_sentences"
    assert result.metadata["fineweb_reason"] == ""
    assert "gopher_words" not in result.metadata
    with pytest.raises(ConfigError, match="gopher_quality"):
        build_stage("score", {"filters": ["c4"], "options": {"gopher_quality": {}}})


def test_wordlist_drops_and_flags(tmp_path):
    listed = tmp_path / "blocked.txt"
    listed.write_text("# words to avoid\nmarket\nweekly fair\n\n集市\n")
    result = _apply("wordlist", PROSE, paths=[str(listed)])
    assert result.reason == "too_many_listed_words"
    kept = _apply("wordlist", PROSE, paths=[str(listed)], max_ratio=0.1, label="blocked")
    assert kept.metadata["blocked_matches"] == 4  # market x3, "weekly fair"
    words = _apply("gopher_quality", PROSE, mode="annotate").metadata["gopher_words"]
    assert kept.metadata["blocked_ratio"] == 5 / words  # "weekly fair" is 2 words
    assert isinstance(_apply("wordlist", "Nothing listed here.", paths=[str(listed)]), Document)
    chinese = _apply("wordlist", CHINESE, paths=[str(listed)], mode="annotate")
    assert chinese.metadata["wordlist_matches"] == 1
    cased = _apply("wordlist", "MARKET day", paths=[str(listed)], case_sensitive=True)
    assert isinstance(cased, Document)


def test_bad_options_fail_before_work_with_valid_names(tmp_path):
    with pytest.raises(ConfigError, match="min_wordz.*min_words"):
        build_stage("gopher_quality", {"min_wordz": 3})
    with pytest.raises(ConfigError, match="not found"):
        build_stage("wordlist", {"paths": [str(tmp_path / "missing.txt")]})
    with pytest.raises(ConfigError, match="mode"):
        build_stage("fineweb", {"mode": "score"})


def test_pipeline_counts_reasons_and_writes_excluded(tmp_path):
    docs = [
        {"id": "good", "text": PROSE},
        {"id": "short", "text": "Too short to keep."},
        {"id": "lorem", "text": PROSE + "\nLorem ipsum dolor sit amet, consectetur elit."},
        {"id": "menu", "text": "\n".join(["Home", "About us", "Contact"] * 10)},
        {"id": "chinese", "text": CHINESE},
    ]
    source = tmp_path / "raw" / "docs.jsonl"
    source.parent.mkdir()
    source.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    output = tmp_path / "clean"
    config = {
        "input": str(source),
        "output": str(output),
        "stages": [
            {"gopher_repetition": {}},
            {"c4": {}},
            {"gopher_quality": {"min_words": 40}},
            {"fineweb": {"mode": "annotate"}},
        ],
    }
    result = run_pipeline(config)
    stats = result.stats
    assert stats["documents_in"] == 5 and stats["kept"] == 1
    excluded = stats["excluded_by"]
    # "Too short to keep.": its one 2-gram "Too short" covers half the text.
    assert excluded["gopher_repetition"] == {"duplicate_lines": 1, "top_2gram": 1}
    assert excluded["c4"] == {"lorem_ipsum": 1, "too_few_sentences": 1}
    saved = json.loads((output / "_stats.json").read_text())
    assert saved["excluded_by"] == excluded
    rows = pq.read_table(output / "_excluded").to_pylist()
    assert {(row["id"], row["stage"], row["reason"]) for row in rows} >= {
        ("short", "gopher_repetition", "top_2gram"),
        ("chinese", "c4", "too_few_sentences"),
        ("lorem", "c4", "lorem_ipsum"),
    }
    kept = pq.read_table(next(output.glob("part-*.parquet"))).to_pylist()
    assert [row["id"] for row in kept] == ["good"]
    assert kept[0]["gopher_stop_words"] >= 2 and kept[0]["fineweb_reason"] == ""
