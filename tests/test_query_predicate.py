"""Predicate validation: what is allowed, what is refused, and the messages users see."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from mixplane.catalog import Catalog, PredicateError, check_predicate
from mixplane.catalog.engine import sandbox
from mixplane.catalog.synthetic import random_properties, write_metadata_shards

COLUMNS = ["id", "n_tokens", "source", "language", "quality", "is_code", "tags", "license"]

ALLOWED = {
    "language = 'de' AND quality > 0.2": {"language", "quality"},
    "language IN ('de', 'fr') OR NOT is_code": {"language", "is_code"},
    "id LIKE 'web-%' AND source ILIKE '%WIKI%' AND id NOT LIKE '%x'": {"id", "source"},
    "quality BETWEEN 0.1 AND 0.9 AND quality NOT BETWEEN 0.4 AND 0.5": {"quality"},
    "license IS NULL OR license IS NOT NULL": {"license"},
    "n_tokens * 2 + 1 > 100 AND n_tokens % 7 = 0 AND -n_tokens < 0": {"n_tokens"},
    "CAST(quality AS INTEGER) = 0 AND quality::DOUBLE < 1 AND TRY_CAST(id AS BIGINT) IS NULL": {
        "quality",
        "id",
    },
    "lower(language) = 'de' AND upper(source) = 'WEB' AND length(id) > 3": {
        "language",
        "source",
        "id",
    },
    "list_contains(tags, 'news') AND len(tags) > 0 AND tags[1] = 'news'": {"tags"},
    "coalesce(license, 'none') <> 'none' AND starts_with(id, 'a')": {"license", "id"},
    "regexp_matches(id, '^doc-[0-9]+$') AND abs(quality - 0.5) < 0.1": {"id", "quality"},
    "language IS DISTINCT FROM 'en' AND is_code IS TRUE": {"language", "is_code"},
    "LANGUAGE = 'de'": {"language"},
    "id = 'has;semicolon' AND id = 'read_csv(''/etc/passwd'')'": {"id"},
    "id = '-- not a comment' AND id <> '/* nor this */' AND id = ')(' AND \"id\" = '('": {"id"},
    "source = '日本語' AND language = 'ｄｅ' AND id LIKE '_本%'": {"source", "language", "id"},
    "(((language = 'de')))": {"language"},
    "is_code": {"is_code"},
}

MALICIOUS = {
    "1=1; DROP TABLE versions": "';'",
    "language = 'en'; SELECT * FROM read_csv('/etc/passwd')": "';'",
    "read_csv('/etc/passwd') IS NOT NULL": "function 'read_csv'",
    "read_text('/etc/passwd') IS NOT NULL": "function 'read_text'",
    "read_parquet('/tmp/other.parquet') IS NULL": "function 'read_parquet'",
    "id IN (SELECT id FROM documents)": "subqueries",
    "EXISTS (SELECT 1)": "subqueries",
    "(SELECT count(*) FROM duckdb_settings()) > 0": "subqueries",
    "1=1) UNION ALL (SELECT * FROM read_csv('/etc/passwd')": "')' at position 3 closes",
    "1=1) OR (1=1) ORDER BY (1": "')' at position 3 closes",
    "PRAGMA database_list": "cannot parse",
    "getvariable('secret') IS NULL": "function 'getvariable'",
    "current_setting('allowed_directories') IS NULL": "function 'current_setting'",
    "sum(quality) > 1": "function 'sum'",
    "regexp_matches(id, id || source)": "pattern and options must be literals (position 0)",
    "regexp_full_match(id, '^a', license) OR is_code": "pattern and options must be literals",
    "row_number() OVER () = 1": "window functions",
    "quality = ?": "parameters",
    "quality = $1": "parameters",
    "list_filter(tags, x -> x = 'a') = []": "function 'list_filter'",
    "list_contains(tags, x -> x)": "lambda",
    "CASE WHEN is_code THEN 1 ELSE 0 END = 1": "CASE",
    "id COLLATE nocase = 'x'": "COLLATE",
    "main.lower(id) = 'a'": "function 'lower'",
    "CAST(quality AS MAP(INTEGER, INTEGER)) IS NULL": "CAST to MAP",
    "language = 'en' /* unterminated": "comment at position 16",
    "language = 'de') OR (true": "')' at position 15 closes a parenthesis",
    "language = 'de' -- AND 1=0": "comment at position 16",
    "language = 'de' /* c */ AND is_code": "comment at position 16",
    "(language = 'de'": "'(' at position 0 is never closed",
    "language = 'de' OR (is_code": "'(' at position 19 is never closed",
    "source = '日本語') OR (true": "')' at position 14 closes a parenthesis",
    "is_code) OR (NOT is_code": "')' at position 7",
    "": "empty predicate",
    "   ": "empty predicate",
}


@pytest.mark.parametrize("predicate", list(ALLOWED))
def test_allowed_predicates_pass_and_report_their_columns(predicate: str):
    valid = check_predicate(predicate, COLUMNS)
    assert set(valid.columns) == ALLOWED[predicate]
    assert valid.framed().startswith("WHERE (") and predicate in valid.framed()


@pytest.mark.parametrize("predicate", list(MALICIOUS))
def test_malicious_predicates_are_refused_with_one_line(predicate: str):
    with pytest.raises(PredicateError) as refused:
        check_predicate(predicate, COLUMNS)
    message = str(refused.value)
    assert MALICIOUS[predicate] in message
    assert "\n" not in message


def test_unknown_column_lists_the_available_ones_and_suggests():
    with pytest.raises(PredicateError) as refused:
        check_predicate("langauge = 'de'", COLUMNS)
    message = str(refused.value)
    assert "unknown column 'langauge'" in message
    assert "did you mean 'language'" in message
    for column in COLUMNS:
        assert column in message


@pytest.mark.parametrize("predicate", ["language = ‘de’", "language = “de” AND score > 0.2"])
def test_typographic_quotes_get_a_hint(predicate: str):
    """Quotes a word processor or chat app typed are named, with what to write instead."""
    with pytest.raises(PredicateError) as refused:
        check_predicate(predicate, COLUMNS)
    message = str(refused.value)
    assert message.startswith("unknown column") and "\n" not in message
    quotes = " ".join(char for char in predicate if char in "‘’“”")
    assert f"typographic quotes ({quotes})" in message
    assert "write strings in straight single quotes, e.g. language = 'de'" in message


def test_a_typographic_quote_inside_a_string_is_text():
    assert check_predicate("source = 'it’s'", COLUMNS).columns == ("source",)
    with pytest.raises(PredicateError) as refused:
        check_predicate("source = 'it’s' AND", COLUMNS)
    assert "typographic" not in str(refused.value)


def test_positions_point_into_the_predicate():
    with pytest.raises(PredicateError, match=r"position 19"):
        check_predicate("language = 'de' OR read_csv('x') IS NULL", COLUMNS)


def test_positions_count_characters_not_bytes():
    with pytest.raises(PredicateError, match=r"position 18\b"):
        check_predicate("source = '日本語' OR read_csv('x') IS NULL", COLUMNS)
    with pytest.raises(PredicateError, match=r"position 14"):
        check_predicate("source = '日本語'; SELECT 1", COLUMNS)
    with pytest.raises(PredicateError, match=r"cannot parse predicate"):
        check_predicate("source = 'ｆｕｌｌ' AND", COLUMNS)


def test_an_escape_is_refused_by_the_parser_alone(monkeypatch: pytest.MonkeyPatch):
    """Without the token check, parsing the predicate under NOT still finds an expression
    that closes the parentheses around it."""
    monkeypatch.setattr("mixplane.catalog.predicate._check_tokens", lambda text: None)
    for escape in ("language = 'de') OR (true", "is_code) AND (NOT is_code"):
        with pytest.raises(PredicateError, match="not one whole boolean expression"):
            check_predicate(escape, COLUMNS)
    for query in ("1=1) UNION ALL (SELECT * FROM read_csv('x')", "1=1) OR (1=1) ORDER BY (1"):
        with pytest.raises(PredicateError, match="not a query"):
            check_predicate(query, COLUMNS)
    assert check_predicate("(language = 'de') OR (true)", COLUMNS).columns == ("language",)


def test_deeply_nested_predicates_are_refused():
    nested = "NOT (" * 300 + "is_code" + ")" * 300
    with pytest.raises(PredicateError, match="nested deeper"):
        check_predicate(nested, COLUMNS)


@pytest.mark.parametrize("links", [150, 200, 210, 600])
def test_long_chains_are_checked_or_refused_never_crash(links: int):
    """A chain of `||` nests one level per link: up to the depth limit it is checked as any
    predicate (the comparison of its two parses once overflowed Python's stack), past it
    refused, even where the parse is too deep for the JSON reader."""
    chain = f"regexp_matches({' || '.join(['id'] * links)}, 'a')"
    if links <= 200:
        assert check_predicate(chain, COLUMNS).columns == ("id",)
        return
    with pytest.raises(PredicateError, match="nested deeper than 200"):
        check_predicate(chain, COLUMNS)


@pytest.fixture
def small_catalog(tmp_path: Path) -> Catalog:
    write_metadata_shards(str(tmp_path / "data"), [random_properties(50, seed=1)])
    catalog = Catalog(tmp_path / "catalog.duckdb")
    catalog.register(str(tmp_path / "data"), "web")
    return catalog


def test_catalog_refuses_before_running_and_registry_stays_intact(small_catalog: Catalog):
    before = [v.summary() for v in small_catalog.versions()]
    for predicate in ("1=1; DROP TABLE versions", "id IN (SELECT name FROM versions)"):
        with pytest.raises(PredicateError):
            small_catalog.select(predicate)
    assert [v.summary() for v in small_catalog.versions()] == before
    assert small_catalog.select("id LIKE 'doc-%'").documents == 50


def test_sandbox_blocks_file_access_even_without_validation(tmp_path: Path):
    """Second wall: the query connection cannot read outside the dataset's folder."""
    write_metadata_shards(str(tmp_path / "data"), [random_properties(5, seed=2)])
    secret = tmp_path / "secret.csv"
    secret.write_text("password\nhunter2\n")
    urls = [str(tmp_path / "data" / "shard-00000-000.meta.parquet")]
    connection = sandbox(urls)
    try:
        assert connection.execute(f"SELECT count(*) FROM read_parquet('{urls[0]}')").fetchall() == [
            (5,)
        ]
        with pytest.raises(duckdb.Error, match="disabled|Permission"):
            connection.execute(f"SELECT * FROM read_csv('{secret}')").fetchall()
        with pytest.raises(duckdb.Error):
            connection.execute("SET enable_external_access = true")
    finally:
        connection.close()
