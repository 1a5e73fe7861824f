"""Every threshold of the four quality filters, tested on both sides with real text."""

from __future__ import annotations

import pytest

from mixplane.document import Document, Drop
from mixplane.stages.build import build_stage

GOOD = "\n".join(
    [
        "The history of the city goes back to a small market town on the river.",
        "Farmers brought their grain to the market and traded it with merchants from the coast.",
        "Over the centuries the town grew, and new bridges were built across the water.",
        "In the nineteenth century the railway arrived and changed the life of every family.",
        "Factories opened near the station, and workers moved in from the nearby villages.",
        "Today the old market square is a quiet place with cafes, shops and a weekly fair.",
        "Visitors come to see the cathedral, the museum of local history and the gardens.",
        "The council has promised to protect the historic centre while building new homes.",
    ]
)
# A text that every rule measures as something other than zero.
BUSY = GOOD.replace("grew,", "grew...").replace("Today", "- Today") + "\n#1 pick: the fair..."

# (stage, option, signal, kind, reason): kind "max" drops above the limit, "min" below it.
THRESHOLDS = [
    ("gopher_quality", "min_words", "gopher_words", "min", "too_few_words"),
    ("gopher_quality", "max_words", "gopher_words", "max", "too_many_words"),
    ("gopher_quality", "min_mean_word_length", "gopher_mean_word_length", "min",
     "short_mean_word"),
    ("gopher_quality", "max_mean_word_length", "gopher_mean_word_length", "max",
     "long_mean_word"),
    ("gopher_quality", "max_hash_ratio", "gopher_hash_ratio", "max", "too_many_hashes"),
    ("gopher_quality", "max_ellipsis_ratio", "gopher_ellipsis_ratio", "max",
     "too_many_ellipses"),
    ("gopher_quality", "max_bullet_lines_ratio", "gopher_bullet_lines_ratio", "max",
     "too_many_bullet_lines"),
    ("gopher_quality", "max_ellipsis_lines_ratio", "gopher_ellipsis_lines_ratio", "max",
     "too_many_ellipsis_lines"),
    ("gopher_quality", "min_alpha_words_ratio", "gopher_alpha_words_ratio", "min",
     "too_few_alphabetic_words"),
    ("gopher_quality", "min_stop_words", "gopher_stop_words", "min", "too_few_stop_words"),
    ("gopher_repetition", "max_duplicate_paragraph_ratio", "gopher_dup_para_ratio", "max",
     "duplicate_paragraphs"),
    ("gopher_repetition", "max_duplicate_paragraph_char_ratio", "gopher_dup_para_char_ratio",
     "max", "duplicate_paragraph_chars"),
    ("gopher_repetition", "max_duplicate_line_ratio", "gopher_dup_line_ratio", "max",
     "duplicate_lines"),
    ("gopher_repetition", "max_duplicate_line_char_ratio", "gopher_dup_line_char_ratio", "max",
     "duplicate_line_chars"),
    ("c4", "min_sentences", "c4_sentences", "min", "too_few_sentences"),
    ("fineweb", "min_punctuated_lines_ratio", "fineweb_line_punct_ratio", "min",
     "too_few_punctuated_lines"),
    ("fineweb", "max_short_lines_ratio", "fineweb_short_line_ratio", "max",
     "too_many_short_lines"),
    ("fineweb", "max_duplicate_line_char_ratio", "fineweb_dup_line_char_ratio", "max",
     "duplicate_line_chars"),
    ("fineweb", "max_newline_ratio", "fineweb_newline_ratio", "max", "too_many_newlines"),
]  # fmt: skip
NGRAM_THRESHOLDS = [
    ("max_top_ngram_char_ratio", n, f"gopher_top_{n}gram_char_ratio", f"top_{n}gram")
    for n in (2, 3, 4)
] + [
    ("max_duplicate_ngram_char_ratio", n, f"gopher_dup_{n}gram_char_ratio", f"duplicate_{n}grams")
    for n in range(5, 11)
]
# Limits that switch off every other rule, so one rule is tested at a time.
LOOSE = {
    "gopher_quality": {
        "min_words": None, "max_words": None, "min_mean_word_length": None,
        "max_mean_word_length": None, "max_hash_ratio": None, "max_ellipsis_ratio": None,
        "max_bullet_lines_ratio": None, "max_ellipsis_lines_ratio": None,
        "min_alpha_words_ratio": None, "min_stop_words": None,
    },
    "gopher_repetition": {
        "max_duplicate_paragraph_ratio": None, "max_duplicate_paragraph_char_ratio": None,
        "max_duplicate_line_ratio": None, "max_duplicate_line_char_ratio": None,
        "max_top_ngram_char_ratio": {}, "max_duplicate_ngram_char_ratio": {},
    },
    "c4": {"min_sentences": None},
    "fineweb": {
        "min_punctuated_lines_ratio": None, "max_short_lines_ratio": None,
        "max_duplicate_line_char_ratio": None, "max_newline_ratio": None,
    },
}  # fmt: skip


def _run(stage_name: str, text: str, **options):
    return build_stage(stage_name, options).apply(Document("doc", text, "web"))


def _signals(stage_name: str, text: str) -> dict:
    return _run(stage_name, text, mode="annotate").metadata


def _text_for(signal: str) -> str:
    # Repetition signals need repeated text to be above zero.
    if "dup" in signal or "top" in signal:
        return BUSY + "\n\n" + BUSY + "\n\n" + GOOD
    return BUSY


@pytest.mark.parametrize(("stage", "option", "signal", "kind", "reason"), THRESHOLDS)
def test_threshold_keeps_at_the_limit_and_drops_past_it(stage, option, signal, kind, reason):
    text = _text_for(signal)
    value = _signals(stage, text)[signal]
    assert value > 0, f"{signal} should be measurable on the test text"
    loose = LOOSE[stage]
    kept = _run(stage, text, **(loose | {option: value}))
    assert isinstance(kept, Document), f"{option}={value} should keep ({signal}={value})"
    step = 1 if isinstance(value, int) else value * 0.01
    past = value + step if kind == "min" else value - step
    dropped = _run(stage, text, **(loose | {option: past}))
    assert isinstance(dropped, Drop) and dropped.reason == reason
    assert dropped.detail["signal"] == signal and dropped.detail["value"] == value


@pytest.mark.parametrize(("option", "n", "signal", "reason"), NGRAM_THRESHOLDS)
def test_ngram_thresholds_on_both_sides(option, n, signal, reason):
    text = _text_for(signal)
    value = _signals("gopher_repetition", text)[signal]
    assert value > 0
    loose = LOOSE["gopher_repetition"]
    assert isinstance(_run("gopher_repetition", text, **(loose | {option: {n: value}})), Document)
    dropped = _run("gopher_repetition", text, **(loose | {option: {n: value * 0.99}}))
    assert isinstance(dropped, Drop) and dropped.reason == reason


def test_default_filters_keep_clean_prose():
    for stage in ("gopher_quality", "gopher_repetition", "c4", "fineweb"):
        result = _run(stage, GOOD)
        assert isinstance(result, Document), (stage, result)


def test_c4_line_rules_on_both_sides():
    def kept_text(line: str, **options) -> str:
        result = _run("c4", GOOD + "\n" + line, **options)
        assert isinstance(result, Document)
        return result.text

    long_word = "A line with a very long word " + "x" * 1001 + " in it."
    assert long_word not in kept_text(long_word)
    assert long_word in kept_text(long_word, max_word_length=1001)
    assert "Two words." not in kept_text("Two words.")
    assert "Two words." in kept_text("Two words.", min_words_per_line=2)
    assert "No end punctuation here" not in kept_text("No end punctuation here")
    assert "No end punctuation here" in kept_text(
        "No end punctuation here", drop_lines_without_end_punctuation=False
    )
    assert "Trailing off..." not in kept_text("It was trailing off...")
    js = "Please enable JavaScript in your browser."
    assert js not in kept_text(js) and js in kept_text(js, drop_javascript_lines=False)
    policy = "By using this site you accept the privacy policy."
    assert policy not in kept_text(policy) and policy in kept_text(policy, drop_policy_lines=False)
    cited = "The bridge opened in 1850 [3] and still stands [citation needed]."
    assert "The bridge opened in 1850  and still stands ." in kept_text(cited)
    assert cited in kept_text(cited, remove_citations=False)
    assert _run("c4", GOOD + "\n" + cited, rewrite_text=False).text == GOOD + "\n" + cited


def test_c4_document_rules_on_both_sides():
    lorem = GOOD + "\nLorem ipsum dolor sit amet, consectetur adipiscing elit."
    assert _run("c4", lorem).reason == "lorem_ipsum"
    assert isinstance(_run("c4", lorem, drop_lorem_ipsum=False), Document)
    code = GOOD + "\nThe function returns {x: 1} for every input."
    assert _run("c4", code).reason == "curly_bracket"
    assert isinstance(_run("c4", code, drop_curly_bracket=False), Document)
    # A brace in a line removed anyway (no end punctuation) does not drop the document.
    assert isinstance(_run("c4", GOOD + "\nif (x) { return y; }"), Document)


def test_fineweb_exemption_for_documents_without_punctuation():
    menu = "\n".join(f"Menu entry number {i} with a longer label" for i in range(10))
    assert _run("fineweb", menu).reason == "too_few_punctuated_lines"
    assert isinstance(_run("fineweb", menu, keep_without_punctuated_lines=True), Document)
    # Lines all end in "l": with "l" as line-end character every line counts as punctuated.
    assert isinstance(_run("fineweb", menu, line_end_characters=["l"]), Document)
    assert _signals("fineweb", menu + "\n")["fineweb_line_punct_ratio"] == 0.0
