"""Queries agree with a brute-force evaluation over the same metadata, for random predicates.

Hypothesis builds predicates from a small grammar; each comes with a Python evaluator that
applies SQL's three-valued logic row by row to the metadata read back with pyarrow. The
catalog's selection must hold exactly the rows where the predicate is true, with the same
token counts.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixplane.catalog import Catalog
from mixplane.catalog.synthetic import write_metadata_shards

Row = dict[str, Any]
Predicate = tuple[str, Callable[[Row], bool | None]]

WORDS = ["alpha", "Beta", "gamma", "DELTA", "alps", "bet", "Gamut", "a_b", "50%"]
# Non-ASCII text: several bytes per character in UTF-8, which the parser counts in.
WORDS += ["日本語", "日本", "ＦＵＬＬ", "Ärger", "émigré", "o'clock"]
LANGUAGES = ["en", "de", "fr", "zh"]
TAGS = ["x", "y", "z"]


def shard_table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)

    def maybe(values: list, null_share: float = 0.15) -> list:
        return [None if rng.random() < null_share else v for v in values]

    return pa.table(
        {
            "id": [f"s{seed}-{i}" for i in range(rows)],
            "n_tokens": pa.array(rng.integers(1, 50, rows), pa.int64()),
            "language": pa.array(maybe([str(rng.choice(LANGUAGES)) for _ in range(rows)])),
            "score": pa.array(maybe([float(round(x, 3)) for x in rng.random(rows)]), pa.float64()),
            "count": pa.array(maybe([int(x) for x in rng.integers(-5, 6, rows)]), pa.int32()),
            "flag": pa.array(maybe([bool(x) for x in rng.random(rows) < 0.5]), pa.bool_()),
            "label": pa.array(maybe([str(rng.choice(WORDS)) for _ in range(rows)])),
            "tags": pa.array(
                maybe(
                    [
                        sorted(set(rng.choice(TAGS, rng.integers(0, 3)).tolist()))
                        for _ in range(rows)
                    ]
                ),
                pa.list_(pa.string()),
            ),
        }
    )


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> tuple[Catalog, list[list[Row]]]:
    root: Path = tmp_path_factory.mktemp("property")
    tables = [shard_table(rows, seed) for seed, rows in enumerate((150, 1, 90, 0, 120))]
    write_metadata_shards(str(root / "data"), tables, row_group_size=32)
    catalog = Catalog(root / "catalog.duckdb")
    catalog.register(str(root / "data"), "prop")
    # The brute force reads the metadata back from the files the catalog queries.
    shards = sorted((root / "data").glob("*.meta.parquet"))
    return catalog, [pq.read_table(path).to_pylist() for path in shards]


# --- SQL three-valued logic -------------------------------------------------------------


def both(f: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool | None]:
    return lambda a, b: None if a is None or b is None else f(a, b)


def and3(values: list[bool | None]) -> bool | None:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def or3(values: list[bool | None]) -> bool | None:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def not3(value: bool | None) -> bool | None:
    return None if value is None else not value


def like(pattern: str, ignore_case: bool = False) -> Callable[[str], bool]:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return lambda text: re.fullmatch(regex, text, flags) is not None


OPS = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


# --- the grammar: every strategy yields (SQL text, evaluator) -----------------------------


def numeric_terms() -> st.SearchStrategy[tuple[str, Callable[[Row], Any]]]:
    return st.sampled_from(
        [
            ("score", lambda r: r["score"]),
            ("n_tokens", lambda r: r["n_tokens"]),
            ("count", lambda r: r["count"]),
            (
                "n_tokens * 2 + count",
                lambda r: None if r["count"] is None else r["n_tokens"] * 2 + r["count"],
            ),
            ("abs(count)", lambda r: None if r["count"] is None else abs(r["count"])),
            ("coalesce(score, 0.5)", lambda r: 0.5 if r["score"] is None else r["score"]),
            ("length(label)", lambda r: None if r["label"] is None else len(r["label"])),
        ]
    )


@st.composite
def comparisons(draw) -> Predicate:
    term, value_of = draw(numeric_terms())
    op = draw(st.sampled_from(list(OPS)))
    literal = draw(st.sampled_from([-3, 0, 1, 2, 5, 25, 60]) | st.decimals(0, 1, places=2))
    text = f"{term} {op} {literal}"
    compare = both(OPS[op])
    number = float(literal)
    return text, lambda r: compare(value_of(r), number)


@st.composite
def string_tests(draw) -> Predicate:
    kind = draw(
        st.sampled_from(
            ["eq", "in", "not_in", "like", "ilike", "not_like", "lower", "starts", "label"]
        )
    )
    if kind == "label":
        characters = st.characters(blacklist_categories=("Cs", "Cc"))
        value = draw(st.sampled_from(WORDS) | st.text(characters, max_size=6))
        quoted = value.replace("'", "''")
        return f"label = '{quoted}'", lambda r: both(operator.eq)(r["label"], value)
    if kind == "eq":
        op = draw(st.sampled_from(["=", "<>", "<", ">="]))
        value = draw(st.sampled_from(LANGUAGES + ["da"]))
        compare = both(OPS[op])
        return f"language {op} '{value}'", lambda r: compare(r["language"], value)
    if kind in ("in", "not_in"):
        values = draw(st.lists(st.sampled_from(LANGUAGES), min_size=1, max_size=3, unique=True))
        listing = ", ".join(f"'{v}'" for v in values)
        negate = kind == "not_in"
        sql = f"language {'NOT IN' if negate else 'IN'} ({listing})"

        def member(r: Row) -> bool | None:
            if r["language"] is None:
                return None
            return (r["language"] in values) != negate

        return sql, member
    if kind in ("like", "ilike", "not_like"):
        pattern = draw(
            st.sampled_from(
                ["a%", "%a", "%l%", "_e%", "a_b", "50%", "%T%", "b__", "日%", "_本%", "%ｌ%", "É%"]
            )
        )
        matches = like(pattern, ignore_case=kind == "ilike")
        keyword = {"like": "LIKE", "ilike": "ILIKE", "not_like": "NOT LIKE"}[kind]
        negate = kind == "not_like"
        return (
            f"label {keyword} '{pattern}'",
            lambda r: None if r["label"] is None else matches(r["label"]) != negate,
        )
    if kind == "lower":
        value = draw(st.sampled_from(["beta", "delta", "alpha", "gamut", "ärger", "ｆｕｌｌ"]))
        return (
            f"lower(label) = '{value}'",
            lambda r: None if r["label"] is None else r["label"].lower() == value,
        )
    prefix = draw(st.sampled_from(["a", "al", "G", "x", "日", "é"]))
    return (
        f"starts_with(label, '{prefix}')",
        lambda r: None if r["label"] is None else r["label"].startswith(prefix),
    )


@st.composite
def other_tests(draw) -> Predicate:
    kind = draw(st.sampled_from(["between", "null", "not_null", "flag", "list", "flag_eq"]))
    if kind == "between":
        low, high = sorted(draw(st.lists(st.decimals(0, 1, places=2), min_size=2, max_size=2)))
        lo, hi = float(low), float(high)
        return (
            f"score BETWEEN {low} AND {high}",
            lambda r: None if r["score"] is None else lo <= r["score"] <= hi,
        )
    if kind in ("null", "not_null"):
        column = draw(st.sampled_from(["language", "score", "count", "flag", "label", "tags"]))
        if kind == "null":
            return f"{column} IS NULL", lambda r: r[column] is None
        return f"{column} IS NOT NULL", lambda r: r[column] is not None
    if kind == "flag":
        return "flag", lambda r: r["flag"]
    if kind == "flag_eq":
        value = draw(st.booleans())
        return f"flag = {str(value).lower()}", lambda r: both(operator.eq)(r["flag"], value)
    tag = draw(st.sampled_from(TAGS + ["w"]))
    return (
        f"list_contains(tags, '{tag}')",
        lambda r: None if r["tags"] is None else tag in r["tags"],
    )


atoms = comparisons() | string_tests() | other_tests()


def combine(children: st.SearchStrategy[Predicate]) -> st.SearchStrategy[Predicate]:
    def conjunction(items: list[Predicate], word: str, logic) -> Predicate:
        sql = f" {word} ".join(f"({text})" for text, _ in items)
        return sql, lambda r: logic([evaluate(r) for _, evaluate in items])

    def negation(item: Predicate) -> Predicate:
        text, evaluate = item
        return f"NOT ({text})", lambda r: not3(evaluate(r))

    many = st.lists(children, min_size=2, max_size=3)
    return (
        many.map(lambda items: conjunction(items, "AND", and3))
        | many.map(lambda items: conjunction(items, "OR", or3))
        | children.map(negation)
    )


predicates = st.recursive(atoms, combine, max_leaves=6)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(predicate=predicates)
def test_selection_equals_brute_force(catalog, predicate: Predicate):
    engine, shards = catalog
    text, evaluate = predicate
    expected = {
        (shard, index)
        for shard, rows in enumerate(shards)
        for index, row in enumerate(rows)
        if evaluate(row) is True
    }
    part = engine.select(text)["prop"]
    shard, index = part.document_indices()
    found = set(zip(shard.tolist(), index.tolist(), strict=True))
    assert found == expected, text
    assert part.documents == len(expected)
    assert part.tokens == sum(shards[s][i]["n_tokens"] for s, i in expected)
    assert part.document_tokens().tolist() == [
        shards[s][i]["n_tokens"] for s, i in zip(shard, index, strict=True)
    ]
    # Ranges are maximal: two ranges of one shard never touch.
    same_shard = part.shard[1:] == part.shard[:-1]
    assert not np.any(same_shard & (part.start[1:] <= part.end[:-1]))


def test_grammar_reaches_every_kind_of_result(catalog):
    """The fixture data is rich enough that predicates can select none, some and all rows."""
    engine, shards = catalog
    total = sum(len(rows) for rows in shards)
    assert engine.select("score > 2").documents == 0
    assert engine.select("score IS NULL OR score IS NOT NULL").documents == total
    some = engine.select("list_contains(tags, 'x') AND flag").documents
    assert 0 < some < total
