"""The shared text analysis: word splitting, scripts, sentences and repetition measures."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from mixplane.stages.text import analyze, count_sentences, split_units, split_words
from mixplane.stages.text.ngrams import (
    duplicate_items,
    duplicate_ngram_chars,
    top_ngram_chars,
)
from mixplane.stages.text.scripts import is_unspaced


def test_punctuation_is_split_off_words():
    assert split_words('He said: "stop!" (twice), then left.') == [
        "He", "said", ":", '"', "stop", "!", '"', "(", "twice", ")", ",", "then", "left", ".",
    ]  # fmt: skip


def test_contractions_and_abbreviations():
    assert split_words("I don't know, can't you see? Dr. Smith, e.g. at 5pm.") == [
        "I", "do", "n't", "know", ",", "ca", "n't", "you", "see", "?",
        "Dr.", "Smith", ",", "e.g.", "at", "5", "pm", ".",
    ]  # fmt: skip
    assert split_words("It’s Mary’s book") == ["It", "’s", "Mary", "’s", "book"]


def test_hyphens_slashes_and_numbers():
    assert split_words("A well-known and/or 3.5-4% rise, 1,000 km/h") == [
        "A", "well", "-", "known", "and/or", "3.5", "-", "4", "%", "rise", ",", "1,000",
        "km", "/", "h",
    ]  # fmt: skip


def test_urls_and_emails_stay_whole():
    words = split_words("See https://example.com/a-b?x=1, or mail me@example.org.")
    assert words == ["See", "https://example.com/a-b?x=1", ",", "or", "mail", "me@example.org", "."]


def test_emoji_and_emoticons():
    assert split_words("Great job!🎉 :) see you") == ["Great", "job", "!", "🎉", ":)", "see", "you"]


def test_code_is_split_at_punctuation():
    assert split_words("if (x > 0) { return x; }") == [
        "if", "(", "x", ">", "0", ")", "{", "return", "x", ";", "}",
    ]  # fmt: skip


def test_right_to_left_text_splits_at_spaces_and_punctuation():
    assert split_words("مرحبا بالعالم، كيف حالك؟") == ["مرحبا", "بالعالم", "،", "كيف", "حالك", "؟"]
    assert split_words("שלום עולם, מה שלומך?") == ["שלום", "עולם", ",", "מה", "שלומך", "?"]
    assert not is_unspaced("مرحبا بالعالم، كيف حالك؟", None)


def test_chinese_and_japanese_are_split_into_characters():
    chinese = "我们今天学习自然语言处理。"
    assert is_unspaced(chinese, None)
    assert split_units(chinese) == list("我们今天学习自然语言处理。")
    japanese = "東京はとても大きい都市です。Python も人気です。"
    units = analyze(japanese).words
    assert "Python" in units and "東" in units and max(map(len, units)) == len("Python")
    # Without the script rule the whole sentence would be one very long word.
    assert len(split_words(chinese)) == 2


def test_marks_and_word_separators_of_unspaced_scripts():
    """A vowel sign or tone mark stays with its letter (alone it is no letter, and Thai text
    would seem to have no words); zero-width spaces and Tibetan tshegs separate, as spaces."""
    assert split_units("ที่นี่") == ["ที่", "นี่"]
    assert split_units("གི་དོན་ལུ་") == ["གི", "དོ", "ན", "ལུ"]
    khmer = split_units("មិន\u200bអាច\u200bបង្កើត")
    assert len(khmer) == 8 and all(any(c.isalpha() for c in unit) for unit in khmer)
    stats = analyze("ในฤดูร้อนมีนักท่องเที่ยวมากมาย", "th").word_stats
    assert stats.alphabetic_tokens == stats.tokens


def test_language_metadata_decides_over_script():
    text = "我们今天学习。"
    assert analyze(text, "zh").unspaced
    assert not analyze(text, "en").unspaced
    assert analyze("Tokyo is big", "ja").unspaced


def test_empty_and_whitespace_only_texts():
    for text in ("", "   \n\t  "):
        analysis = analyze(text)
        assert analysis.words == []
        assert analysis.word_stats.tokens == 0
        assert count_sentences(text) == 0


def test_very_long_line_is_split_quickly():
    line = "word " * 200_000 + "x" * 50_000
    words = split_words(line)
    assert len(words) == 200_001 and len(words[-1]) == 50_000


def test_sentences_follow_terminal_punctuation():
    assert count_sentences("One sentence here.") == 1
    assert count_sentences("First one. Second one! Third?") == 3
    assert count_sentences("Dr. Smith met Mr. Jones, e.g. at the U.S. embassy.") == 1
    assert count_sentences("It ended (finally). Then more.") == 2
    # An ellipsis is one token, not a sentence mark: "Wait... what?!" is one sentence.
    assert count_sentences("Wait... what?! Really.") == 2
    assert count_sentences("他来了。她走了。", unspaced=True) == 2


def test_analysis_is_shared_between_calls():
    text = "A shared analysis of the same text. " * 3
    assert analyze(text) is analyze(text)
    assert analyze(text, "en") is not analyze(text, "zh")


def test_word_stats_count_punctuation_apart():
    stats = analyze("Hello, world... 42 #tag").word_stats
    # tokens: Hello , world ... 42 # tag
    assert (stats.tokens, stats.words, stats.alphabetic_tokens) == (7, 4, 3)
    assert stats.word_chars == len("Hello") + len("world") + len("42") + len("tag")


def _brute_duplicate_ngram_chars(words: list[str], n: int) -> int:
    seen, chars, index = set(), 0, 0
    while index < len(words) - n + 1:
        gram = tuple(words[index : index + n])
        if gram in seen:
            chars += sum(map(len, gram))
            index += n
        else:
            seen.add(gram)
            index += 1
    return chars


_words = st.lists(st.sampled_from(["a", "bb", "ccc", "the", "x"]), max_size=60)


@given(_words, st.integers(min_value=1, max_value=6))
def test_duplicate_ngram_chars_matches_left_to_right_reading(words, n):
    chars = duplicate_ngram_chars(words, n)
    assert chars == _brute_duplicate_ngram_chars(words, n)
    assert 0 <= chars <= sum(map(len, words))


@given(_words)
def test_analysis_derives_longer_repeats_from_shorter_ones(words):
    analysis = analyze(" ".join(words) + " end")
    for n in range(2, 11):
        expected = _brute_duplicate_ngram_chars(analysis.words, n)
        assert analysis.duplicate_ngram_chars(n) == expected


@given(_words, st.integers(min_value=1, max_value=4))
def test_top_ngram_chars_is_first_most_frequent(words, n):
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        assert top_ngram_chars(words, n) == 0
        return
    counts = Counter(grams)
    best = max(counts.values())
    first = next(gram for gram in grams if counts[gram] == best)
    assert top_ngram_chars(words, n) == (len(" ".join(first))) * best


@given(st.lists(st.sampled_from(["x", "yy", "", "zzz"]), max_size=30))
def test_duplicate_items_counts_later_copies(items):
    repeats, chars = duplicate_items(items)
    seen, expected_repeats, expected_chars = set(), 0, 0
    for item in items:
        if item in seen:
            expected_repeats += 1
            expected_chars += len(item)
        seen.add(item)
    assert (repeats, chars) == (expected_repeats, expected_chars)
