"""The math of deduplication, checked against plain-Python references and exact Jaccard."""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.stages.dedup.candidates import group_pairs, parts_for, unique_pairs
from mixplane.stages.dedup.clusters import Members, choose_survivors, components
from mixplane.stages.dedup.hashing import ngram_hashes, word_hashes
from mixplane.stages.dedup.minhash import (
    agreement,
    band_keys,
    choose_bands_rows,
    collision_probability,
    curve_midpoint,
    signatures,
)
from mixplane.stages.dedup.runs import sort_keys
from mixplane.stages.dedup.text import is_spaceless, normalize_exact, shingle_text

MERSENNE = (1 << 61) - 1
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé0", min_size=1, max_size=20)


def batch_of(texts: list[list[str]]) -> bytes:
    return b"".join(" ".join(words).encode() + b"\n" for words in texts)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(WORD, max_size=12), min_size=1, max_size=6))
def test_word_hashes_are_equal_exactly_when_words_are(texts):
    hashes, starts = word_hashes(batch_of(texts), len(texts))
    words = [word for text in texts for word in text]
    assert starts.tolist() == np.cumsum([0] + [len(t) for t in texts]).tolist()
    by_hash = defaultdict(set)
    for word, value in zip(words, hashes.tolist(), strict=True):
        by_hash[value].add(word)
    assert all(len(group) == 1 for group in by_hash.values())
    assert len(by_hash) == len(set(words))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdef"), max_size=14), min_size=1, max_size=5),
       st.integers(1, 6))  # fmt: skip
def test_ngram_hashes_match_the_ngram_tuples(texts, size):
    words, starts = word_hashes(batch_of(texts), len(texts))
    hashes, offsets = ngram_hashes(words, starts, size)
    expected = []
    for text in texts:
        grams = [tuple(text[i : i + size]) for i in range(len(text) - size + 1)]
        expected.append(grams or ([tuple(text)] if text else []))
    assert np.diff(offsets).tolist() == [len(grams) for grams in expected]
    flat = [gram for grams in expected for gram in grams]
    for i in range(len(flat)):
        for j in range(len(flat)):
            assert (hashes[i] == hashes[j]) == (flat[i] == flat[j])


def test_normalisation_for_exact_and_for_shingles():
    assert normalize_exact(" A  b\tC ") == "a b c"
    assert normalize_exact("A  b", ignore_case=False, ignore_whitespace=False) == "A  b"
    assert normalize_exact("Wait... what?!", ignore_punctuation=True) == "wait what"
    assert shingle_text("Ünïcödé, 42 ÉTÉ!")[0].split() == [b"unicode", b"00", b"ete"]
    assert shingle_text("snake_case x")[0].split() == [b"snake", b"case", b"x"]
    words, spaceless = shingle_text("東京は日本の首都です。")
    assert spaceless and len(words.split()) == 10
    assert is_spaceless("ภาษาไทยไม่มีช่องว่าง") and not is_spaceless("Ελληνικά με κενά")


def mersenne_signature(shingles: np.ndarray, count: int, seed: int) -> list[list[int]]:
    """The classic estimator: `count` hash functions (a*h + b) mod (2^61 - 1), exact ints."""
    rng = random.Random(seed)
    params = [(rng.randrange(1, MERSENNE), rng.randrange(MERSENNE)) for _ in range(count)]
    values = [int(x) & MERSENNE for x in shingles.tolist()]
    return [min((a * x + b) % MERSENNE for x in values) for a, b in params]


def pair_with_jaccard(rng: np.random.Generator, size: int, target: float):
    shared = round(2 * size * target / (1 + target))
    universe = rng.integers(0, np.iinfo(np.uint64).max, size=2 * size - shared, dtype=np.uint64)
    left, right = universe[:size], np.concatenate((universe[:shared], universe[size:]))
    return left, right, shared / (2 * size - shared)


@pytest.mark.parametrize("size", [5, 20, 60])
def test_signature_estimates_jaccard_as_well_as_independent_permutations(size):
    rng = np.random.default_rng(size)
    count, trials = 112, 30
    ours, classic = [], []
    for trial in range(trials):
        for target in (0.5, 0.8, 0.9):
            left, right, truth = pair_with_jaccard(rng, size, target)
            hashes = np.concatenate((left, right))
            sig = signatures(hashes, np.array([0, size, 2 * size]), count, seed=trial)
            ours.append(agreement(sig[:1], sig[1:])[0] - truth)
            a = mersenne_signature(left, count, trial)
            b = mersenne_signature(right, count, trial)
            classic.append(np.mean(np.array(a) == np.array(b)) - truth)
    ours_mse, classic_mse = np.mean(np.square(ours)), np.mean(np.square(classic))
    theory = np.mean([j * (1 - j) / count for j in (0.5, 0.8, 0.9)])
    assert abs(np.mean(ours)) < 0.01
    assert ours_mse < 1.6 * theory and classic_mse < 1.6 * theory
    assert ours_mse < 1.2 * classic_mse


def test_signatures_of_long_texts_are_as_precise_as_theory_says():
    rng = np.random.default_rng(5)
    errors, theory = [], []
    for trial in range(60):
        for target in (0.5, 0.8, 0.9):
            left, right, truth = pair_with_jaccard(rng, 1500, target)
            sig = signatures(np.concatenate((left, right)), np.array([0, 1500, 3000]), 112, trial)
            errors.append(agreement(sig[:1], sig[1:])[0] - truth)
            theory.append(truth * (1 - truth) / 112)
    assert abs(np.mean(errors)) < 0.01
    assert np.mean(np.square(errors)) < 1.3 * np.mean(theory)


def test_band_collisions_follow_the_lsh_curve():
    rng = np.random.default_rng(7)
    bands, rows, pairs = 14, 8, 400
    for target in (0.5, 0.7, 0.8, 0.9):
        hashes, offsets = [], [0]
        truths = []
        for _ in range(pairs):
            left, right, truth = pair_with_jaccard(rng, 200, target)
            hashes += [left, right]
            offsets += [offsets[-1] + 200, offsets[-1] + 400]
            truths.append(truth)
        sig = signatures(np.concatenate(hashes), np.array(offsets), bands * rows, seed=3)
        keys = band_keys(sig, bands, rows)
        caught = (keys[0::2] == keys[1::2]).any(axis=1).mean()
        expected = collision_probability(np.mean(truths), bands, rows)
        spread = 3 * np.sqrt(expected * (1 - expected) / pairs) + 0.03
        assert abs(caught - expected) < spread, (target, caught, expected)


def test_texts_without_shingles_get_no_keys_and_a_fixed_signature():
    sig = signatures(np.arange(3, dtype=np.uint64), np.array([0, 0, 3]), 16)
    assert (sig[0] == 0).all() and not (sig[1] == 0).all()


@settings(max_examples=25, deadline=None)
@given(st.floats(0.5, 0.95), st.sampled_from([32, 64, 112, 128]))
def test_chosen_bands_and_rows_fit_the_budget_and_aim_at_the_threshold(threshold, hashes):
    bands, rows = choose_bands_rows(threshold, hashes)
    assert bands * rows <= hashes
    # Most pairs at the threshold become candidates; far less similar pairs rarely do.
    assert collision_probability(threshold, bands, rows) >= 0.5
    assert collision_probability(threshold / 2, bands, rows) < 0.5
    assert curve_midpoint(bands, rows) <= threshold + 0.05


def reference_components(pairs: list[tuple[int, int]]) -> dict[int, int]:
    neighbours = defaultdict(set)
    for a, b in pairs:
        neighbours[a].add(b)
        neighbours[b].add(a)
    root: dict[int, int] = {}
    for start in sorted(neighbours):
        if start in root:
            continue
        seen, todo = {start}, [start]
        while todo:
            for nxt in neighbours[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        for node in seen:
            root[node] = min(seen)
    return root


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=60))
def test_union_find_matches_a_graph_search(pairs):
    nodes, roots = components(np.array(pairs).T)
    expected = reference_components(pairs)
    assert dict(zip(nodes.tolist(), roots.tolist(), strict=True)) == expected


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 30)), min_size=1, max_size=40,
                unique_by=lambda item: item[1]),
       st.integers(0, 31))  # fmt: skip
def test_grouping_links_every_node_to_the_smallest_sharing_its_key(items, fresh):
    keys = np.array([[key for key, _ in items]], dtype=np.uint64)
    nodes = np.array([node for _, node in items])
    pairs = group_pairs(keys, nodes, fresh)
    groups = defaultdict(list)
    for key, node in items:
        groups[key].append(node)
    expected = {(min(g), n) for g in groups.values() for n in g if n != min(g) and min(g) < fresh}
    assert set(map(tuple, pairs.T.tolist())) == expected
    assert unique_pairs([pairs, pairs]).shape[1] == len(expected)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=0, max_size=50), st.integers(1, 8))
def test_sorted_runs_split_into_key_slices_that_cover_every_key_once(values, parts):
    keys = np.array(values, dtype=np.uint64).reshape(-1, 1, 1)
    sorted_keys, rows = sort_keys(keys, np.ones(len(values), dtype=bool))
    first = sorted_keys[0, 0]
    assert (np.diff(first.astype(object)) >= 0).all() if len(values) > 1 else True
    span = (1 << 64) // parts
    covered = []
    for part in range(parts):
        low = part * span
        high = (1 << 64) if part == parts - 1 else (part + 1) * span
        covered += [int(v) for v in first if low <= int(v) < high]
    assert sorted(covered) == sorted(values)
    assert sorted(rows[0].tolist()) == list(range(len(values)))
    assert parts_for(len(values), 8) * 8 >= len(values)


def test_survivors_prefer_index_documents_then_rank_then_id():
    members = Members(
        nodes=np.array([1, 2, 3, 10, 11, 12]),
        roots=np.array([1, 1, 1, 10, 10, 10]),
        ids=pa.array(["z", "a", "m", "q", "b", "c"]),
        ranks=np.array([1, 1, 0, 1, 1, 1]),
        in_index=np.array([False, False, False, False, False, True]),
    )
    clusters = choose_survivors(members)
    assert clusters.survivor.tolist() == [2, 2, 2, 5, 5, 5]
    assert clusters.size.tolist() == [3] * 6
