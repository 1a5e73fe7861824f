"""The quality ablation's pieces (bench/classify/ablation*.py) on a tiny corpus: the random
selection holds exactly the top selection's tokens, in the rule and in the real catalog."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.classify.ablation_corpus import Labelled, chunk_text  # noqa: E402
from bench.classify.ablation_pipeline import prepare  # noqa: E402
from bench.classify.ablation_select import equal_token_fill  # noqa: E402
from mixplane.synth.languages import LANGUAGES  # noqa: E402
from mixplane.synth.prose import encyclopedia_article  # noqa: E402


def selected_by_predicate(fill, count: int) -> list[int]:
    """The draw positions `fill.predicate` selects among 0..count-1, run by DuckDB."""
    rows = duckdb.sql(
        f"SELECT draw_0 FROM range({count}) t(draw_0) WHERE {fill.predicate('draw_0')} ORDER BY 1"
    ).fetchall()
    return [row[0] for row in rows]


@settings(max_examples=100, deadline=None)
@given(
    tokens=st.lists(st.integers(1, 60), min_size=1, max_size=80),
    share=st.floats(0, 1),
)
def test_fill_is_exact_or_refused(tokens, share):
    target = round(sum(tokens) * share)
    try:
        fill = equal_token_fill(tokens, target)
    except ValueError as error:
        assert "cannot be filled to exactly" in str(error)
        return
    positions = fill.positions()
    assert len(set(positions)) == len(positions)
    assert sum(tokens[p] for p in positions) == target
    assert selected_by_predicate(fill, len(tokens)) == sorted(positions)
    # The prefix is the longest one that fits: the draw order decides, not the lengths.
    assert sum(tokens[: fill.cut]) <= target
    assert fill.cut == len(tokens) or sum(tokens[: fill.cut + 1]) > target


def test_fill_swaps_one_document_to_close_a_gap():
    fill = equal_token_fill([4, 4, 9, 5], 9)
    assert fill.positions() == [0, 3]
    assert selected_by_predicate(fill, 4) == [0, 3]


@pytest.mark.parametrize(("tokens", "target"), [([3, 3], 7), ([2, 2], 3), ([5], -1)])
def test_fill_refuses_what_it_cannot_meet(tokens, target):
    with pytest.raises(ValueError, match="target|exactly"):
        equal_token_fill(tokens, target)


def test_chunks_cut_at_line_ends_and_drop_short_tails():
    # Lines of about 158 characters: four of them reach 500.
    text = "\n".join(f"line {i:02d} " + "word " * 30 for i in range(41))
    pieces = chunk_text(text, target=500, limit=4000, minimum=300)
    assert [piece.count("\n") for piece in pieces] == [3] * 10  # the 41st line is too short
    assert all(piece in text for piece in pieces)
    assert pieces[1].startswith("line 04 ")
    assert chunk_text("x" * 250, minimum=300) == []
    long_line = ("abc " * 3000).strip()
    assert all(len(piece) <= 4000 for piece in chunk_text(long_line, target=1))


def tiny_corpus() -> list[Labelled]:
    english = LANGUAGES["en"]
    docs = []
    for i in range(160):
        rng = random.Random(i)
        text = encyclopedia_article(english, rng, sentences=rng.randint(3, 12))[1]
        docs.append(Labelled(f"g{i}", text, ["prose_a", "prose_b"][i % 2], "good", f"g{i}"))
    for i in range(120):
        rng = random.Random(10_000 + i)
        words = " ".join(rng.choice(("cheap", "buy", "best", "now")) for _ in range(40))
        docs.append(Labelled(f"b{i}", words, "spam", "bad", f"b{i}"))
    return docs


def test_prepared_selections_hold_equal_tokens(tmp_path):
    settings = {
        "seeds": 2,
        "split_seed": 0,
        "classifier_seed": 0,
        "keep_top": [0.5, 0.2],
        "vocab": 300,
        "classifier_options": {"dim": 16, "bucket": 20_000},
    }
    prepared = prepare(tmp_path / "run", tiny_corpus(), settings)
    assert list(prepared.selections) == ["top50", "top20"]
    for name, selections in prepared.selections.items():
        top = selections["top"]
        merge = prepared.classifier["keep_top_merges"][name]
        assert top["composition"]["documents"] == merge["kept"]
        assert prepared.scores["kept"][name].sum() == merge["kept"]
        for seed in range(2):
            chosen = selections["random"][seed]
            assert chosen["dataset"] == "pool" and f"draw_{seed}" in chosen["where"]
            assert chosen["tokens"] == top["tokens"] == chosen["composition"]["tokens"]
            by = chosen["composition"]["by"]
            assert by["label=good"]["tokens"] + by["label=bad"]["tokens"] == top["tokens"]
        assert selections["random"][0]["where"] != selections["random"][1]["where"]
    assert (
        prepared.selections["top20"]["top"]["tokens"]
        < prepared.selections["top50"]["top"]["tokens"]
    )
    assert prepared.heldout_origins == ["prose_a", "prose_b"]
    assert (
        len(prepared.scores["score"])
        == prepared.classifier["keep_top_merges"]["top50"]["documents"]
    )
