"""Measuring deduplication against ground truth computed exactly.

`make_families` writes documents in families of near-duplicates whose pairwise word 5-gram
Jaccard similarity is computed exactly (unrelated documents share no 5-gram); `score` turns
a clustering into pair precision and recall. `make_dense` writes dense clusters and chains,
where similarity to one member says little about similarity to another, and
`similar_pairs` finds what a brute-force all-pairs comparison at a threshold would join.
Similarity uses the same words as `dedup_minhash` (`text.shingle_text`).

Example:
    >>> docs, truth = make_families(3, seed=1)
    >>> clusters = {d["id"]: d["family"] for d in docs}
    >>> score(truth, clusters, {})["recall_at_0.8"]
    1.0
"""

from __future__ import annotations

import glob
import itertools
import json
import random
from collections import defaultdict
from collections.abc import Callable, Iterator

import pyarrow.parquet as pq

from mixplane.stages.dedup.text import shingle_text

Pair = tuple[str, str]
GRAY_ZONE = (0.6, 0.85)
BANDS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9)  # lower bounds of the similarity bands of recall


def shingle_set(text: str, ngram: int = 5) -> set[tuple[bytes, ...]]:
    """The n-grams `dedup_minhash` shingles (a short text is one n-gram of all its words)."""
    words = shingle_text(text)[0].split()
    if len(words) < ngram:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + ngram]) for i in range(len(words) - ngram + 1)}


def jaccard(left: str, right: str, ngram: int = 5) -> float:
    """Exact Jaccard similarity of two texts' n-gram sets.

    Example:
        >>> jaccard("a b c d e f", "a b c d e g")
        0.3333333333333333
    """
    a, b = shingle_set(left, ngram), shingle_set(right, ngram)
    return len(a & b) / len(a | b) if a or b else 1.0


def make_families(
    families: int, seed: int, words: tuple[int, int] = (200, 500)
) -> tuple[list[dict], dict[Pair, float]]:
    """Documents in families (an original and 0-3 edited copies aiming at similarities
    spread over 0.3-1.0), shuffled, and the exact Jaccard similarity of every pair within a
    family."""
    docs: list[dict] = []
    truth: dict[Pair, float] = {}
    for members, pairs in iter_families(families, seed, words):
        docs += members
        truth.update(pairs)
    random.Random(seed).shuffle(docs)
    return docs, truth


def iter_families(
    families: int, seed: int, words: tuple[int, int] = (200, 500), vocabulary: int = 20000
) -> Iterator[tuple[list[dict], dict[Pair, float]]]:
    """One family at a time (documents and pair similarities), for corpora too large to
    hold in memory."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    lexicon = ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(vocabulary)]
    for family in range(families):
        original = rng.choices(lexicon, k=rng.randint(*words))
        texts = [" ".join(original)]
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            target = rng.uniform(0.3, 1.0)
            # Replacing k scattered words destroys about 5k of S shingles: J = (S-5k)/(S+5k).
            edits = round(len(original) * (1 - target) / (5 * (1 + target)))
            copy = list(original)
            for position in rng.sample(range(len(copy)), min(edits, len(copy))):
                copy[position] = rng.choice(lexicon)
            texts.append(" ".join(copy))
        ids = [f"fam{family:07d}-{member}" for member in range(len(texts))]
        sets = [shingle_set(text) for text in texts]
        pairs = {
            _pair(ids[i], ids[j]): len(sets[i] & sets[j]) / len(sets[i] | sets[j])
            for i, j in itertools.combinations(range(len(texts)), 2)
        }
        yield [{"id": ids[i], "text": t, "family": ids[0]} for i, t in enumerate(texts)], pairs


def make_dense(
    clusters: int,
    size: int,
    chains: int = 0,
    chain_length: int = 8,
    filler: int = 0,
    seed: int = 1,
    similarity: tuple[float, float] = (0.55, 0.95),
) -> list[list[tuple[str, str]]]:
    """Groups of `(id, text)`: dense clusters (an original and `size - 1` copies, each with
    its own scattered word replacements aiming at a similarity to the original drawn from
    `similarity`, so copies are less similar to one another than to the original), chains
    (each text an edit of the previous one, about 0.72-0.85 similar: texts two apart mostly
    are not), then `filler` unrelated texts, one per group. Texts of different groups share
    no word 5-gram.

    Example:
        >>> groups = make_dense(1, 3, chains=1, chain_length=2, filler=1)
        >>> [len(group) for group in groups]
        [3, 2, 1]
    """
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    lexicon = ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(50000)]
    groups: list[list[tuple[str, str]]] = []
    for number in range(clusters):
        original = rng.choices(lexicon, k=rng.randint(300, 500))
        texts = [original]
        for _ in range(size - 1):
            texts.append(_edited(original, rng.uniform(*similarity), rng, lexicon))
        groups.append([(f"dense{number:05d}-{i:04d}", " ".join(t)) for i, t in enumerate(texts)])
    for number in range(chains):
        texts = [rng.choices(lexicon, k=rng.randint(300, 500))]
        for _ in range(chain_length - 1):
            texts.append(_edited(texts[-1], rng.uniform(0.72, 0.85), rng, lexicon))
        groups.append([(f"chain{number:05d}-{i:04d}", " ".join(t)) for i, t in enumerate(texts)])
    for number in range(filler):
        groups.append([(f"filler{number:07d}", " ".join(rng.choices(lexicon, k=300)))])
    return groups


def _edited(words: list[str], target: float, rng: random.Random, lexicon: list[str]) -> list:
    # Replacing k scattered words destroys about 5k of S shingles: J = (S-5k)/(S+5k).
    edits = round(len(words) * (1 - target) / (5 * (1 + target)))
    copy = list(words)
    for position in rng.sample(range(len(copy)), min(edits, len(copy))):
        copy[position] = rng.choice(lexicon)
    return copy


def similar_pairs(groups: list[list[tuple[str, str]]], threshold: float) -> list[Pair]:
    """Every pair within a group whose exact Jaccard similarity reaches `threshold`: what
    a brute-force comparison of all pairs joins.

    Example:
        >>> similar_pairs([[("a", "x y z w v u"), ("b", "x y z w v t"), ("c", "q")]], 0.3)
        [('a', 'b')]
    """
    found = []
    for group in groups:
        sets = [shingle_set(text) for _, text in group]
        for i, j in itertools.combinations(range(len(group)), 2):
            union = len(sets[i] | sets[j])
            if union and len(sets[i] & sets[j]) / union >= threshold:
                found.append(_pair(group[i][0], group[j][0]))
    return found


def _pair(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


def score(
    truth: dict[Pair, float],
    clusters: dict[str, str],
    removed: dict[str, str],
    text_of: Callable[[str], str] | None = None,
) -> dict[str, float | int]:
    """Pair quality of a clustering.

    `truth`: exact similarity of every pair that may be similar (other pairs count as 0
    unless `text_of(id)` gives texts to measure them); `clusters`: cluster id of each
    document; `removed`: survivor id of each removed document.

    Returns precision and recall of pairs at similarity 0.8; F1 with positives above 0.85
    and negatives below 0.6 (the gray zone between is not scored); the share of removed
    documents less than 0.6 similar to their survivor; and recall per similarity band.
    """
    members = defaultdict(list)
    for doc, cluster in clusters.items():
        members[cluster].append(doc)
    predicted: dict[Pair, float] = {}
    for group in members.values():
        for a, b in itertools.combinations(sorted(group), 2):
            predicted[(a, b)] = _similarity(a, b, truth, text_of)
    result: dict[str, float | int] = {"predicted_pairs": len(predicted)}
    # Every pair measured similar is a true pair, whether the truth listed it or not.
    measured = truth | predicted
    positives = sum(1 for s in measured.values() if s >= 0.8)
    hits = sum(1 for s in predicted.values() if s >= 0.8)
    result["precision_at_0.8"] = hits / len(predicted) if predicted else 1.0
    result["recall_at_0.8"] = hits / positives if positives else 1.0
    low, high = GRAY_ZONE
    tp = sum(1 for s in predicted.values() if s >= high)
    fp = sum(1 for s in predicted.values() if s < low)
    truly = sum(1 for s in measured.values() if s >= high)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / truly if truly else 1.0
    result["f1_above_0.85"] = 2 * precision * recall / (precision + recall) if tp else 0.0
    false = sum(1 for d, s in removed.items() if _similarity(d, s, truth, text_of) < low)
    result["false_removals_below_0.6"] = false / len(removed) if removed else 0.0
    result["removed"] = len(removed)
    for start, stop in zip(BANDS, [*BANDS[1:], 1.01], strict=True):
        band = [p for p, s in truth.items() if start <= s < stop]
        if band:
            result[f"recall_{start:.1f}"] = sum(1 for p in band if p in predicted) / len(band)
    return result


def _similarity(a: str, b: str, truth: dict[Pair, float], text_of) -> float:
    pair = _pair(a, b)
    if pair in truth:
        return truth[pair]
    return jaccard(text_of(a), text_of(b)) if text_of else 0.0


def read_clusters(
    output: str, with_texts: bool = True
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """From a local pipeline output: each document's cluster (its survivor's id), each
    removed document's survivor (following chains across dedup stages), and every text
    (unless `with_texts` is False)."""
    survivor_of: dict[str, str] = {}
    texts: dict[str, str] = {}
    for path in sorted(glob.glob(f"{output}/_excluded/*.parquet")):
        columns = ["id", "reason", "detail", "text"] if with_texts else ["id", "reason", "detail"]
        for row in pq.read_table(path, columns=columns).to_pylist():
            if with_texts:
                texts[row["id"]] = row["text"]
            if row["reason"] in ("duplicate", "duplicate_in_index"):
                survivor_of[row["id"]] = json.loads(row["detail"])["duplicate_of"]
    for path in sorted(glob.glob(f"{output}/part-*.parquet")) if with_texts else []:
        for row in pq.read_table(path, columns=["id", "text"]).to_pylist():
            texts[row["id"]] = row["text"]
    removed: dict[str, str] = {}
    for doc in survivor_of:
        target = survivor_of[doc]
        while target in survivor_of:
            target = survivor_of[target]
        removed[doc] = target
    clusters = dict(removed)
    clusters.update({survivor: survivor for survivor in set(removed.values())})
    return clusters, removed, texts
