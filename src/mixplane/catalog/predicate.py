"""Predicate validation: a query is one boolean SQL expression over document properties.

DuckDB's own parser turns the predicate into an abstract syntax tree (`json_serialize_sql`), and
a walk over that tree lets through only column references, literals, comparisons, boolean
logic, IN, LIKE/ILIKE, BETWEEN, IS [NOT] NULL, arithmetic, CAST and a short list of pure
functions. Everything else (subqueries, table functions such as `read_csv`, several
statements, pragmas, window functions, parameters) is refused with a one-line message.

Example:
    >>> check_predicate("language = 'de' AND score > 0.2", ["language", "score"])
    ValidPredicate(text="language = 'de' AND score > 0.2", columns=('language', 'score'))
"""

from __future__ import annotations

import difflib
import functools
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson

from mixplane.errors import MixplaneError

MAX_LENGTH = 20_000
MAX_DEPTH = 200
# The predicate always sits in this frame, for validation and for execution alike, so the
# parser sees it in the same context both times.
FRAME_OPEN = "WHERE (\n"
FRAME_CLOSE = "\n)"
_PROBE = "SELECT * FROM documents "

# fmt: off
PURE_FUNCTIONS = frozenset([
    "lower", "upper", "lcase", "ucase", "length", "len", "strlen", "char_length",
    "character_length", "abs", "coalesce", "ifnull", "nullif", "list_contains", "list_has",
    "array_contains", "array_has", "list_has_any", "list_has_all", "array_has_any",
    "array_has_all", "list_value", "list_pack", "array_length", "starts_with", "ends_with",
    "prefix", "suffix", "contains", "regexp_matches", "regexp_full_match", "round", "floor",
    "ceil", "ceiling", "sign", "least", "greatest", "isnan", "isinf", "isfinite", "trim",
    "ltrim", "rtrim",
])
SHOWN_FUNCTIONS = (
    "lower, upper, length, trim, abs, round, floor, ceil, coalesce, nullif, least, greatest, "
    "list_contains, list_has_any, list_has_all, starts_with, ends_with, contains, "
    "regexp_matches, isnan"
)
# Arithmetic, concatenation and pattern matching: LIKE (~~), ILIKE (~~*), GLOB (~~~).
OPERATORS = frozenset(["+", "-", "*", "/", "//", "%", "||", "~~", "!~~", "~~*", "!~~*", "~~~"])
COMPARISONS = frozenset([
    "COMPARE_EQUAL", "COMPARE_NOTEQUAL", "COMPARE_LESSTHAN", "COMPARE_GREATERTHAN",
    "COMPARE_LESSTHANOREQUALTO", "COMPARE_GREATERTHANOREQUALTO", "COMPARE_DISTINCT_FROM",
    "COMPARE_NOT_DISTINCT_FROM",
])
# Operator nodes whose children are ordinary expressions (COALESCE parses as an operator).
PLAIN_OPERATORS = frozenset([
    "OPERATOR_NOT", "COMPARE_IN", "COMPARE_NOT_IN", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL",
    "OPERATOR_COALESCE", "ARRAY_EXTRACT",
])
CAST_TYPES = frozenset([
    "BOOLEAN", "BOOL", "TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "HUGEINT", "UTINYINT",
    "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "REAL", "DOUBLE", "DECIMAL", "NUMERIC",
    "VARCHAR", "TEXT", "STRING", "DATE", "TIMESTAMP", "TIMESTAMPTZ",
])
# fmt: on
_KIND_NAMES = {
    "SUBQUERY": "subqueries",
    "WINDOW": "window functions",
    "PARAMETER": "parameters",
    "STAR": "'*'",
    "LAMBDA": "lambda functions",
    "CASE": "CASE expressions",
    "COLLATE": "COLLATE",
    "POSITIONAL_REFERENCE": "positional references",
}


@dataclass(frozen=True)
class ValidPredicate:
    """A predicate that passed validation, with the property columns it reads."""

    text: str
    columns: tuple[str, ...]

    def framed(self) -> str:
        """The predicate as a WHERE clause, exactly as it was validated."""
        return f"{FRAME_OPEN}{self.text}{FRAME_CLOSE}"


class PredicateError(MixplaneError):
    """A predicate that cannot be run: unparseable, not allowed, or naming unknown columns."""


def check_predicate(
    text: str, columns: Iterable[str], connection: duckdb.DuckDBPyConnection | None = None
) -> ValidPredicate:
    """Validate `text` against the available `columns`; raise `PredicateError` if refused.

    Column names match case-insensitively, as in DuckDB. `connection` is any DuckDB
    connection to parse with (default: a private one). Example:
        >>> check_predicate("read_csv('/etc/passwd') IS NULL", ["id"])
        Traceback (most recent call last):
        ...
        mixplane.catalog.predicate.PredicateError: predicate refused: function 'read_csv' ...
    """
    if not text or not text.strip():
        raise PredicateError(
            "empty predicate; give a boolean expression such as \"language = 'en'\""
        )
    if len(text) > MAX_LENGTH:
        raise PredicateError(f"predicate is {len(text):,} characters; the limit is {MAX_LENGTH:,}")
    _refuse_several_statements(text)
    tree = _parse(text, connection)
    available = {name.lower(): name for name in columns}
    used: dict[str, str] = {}
    _walk(tree, available, used, depth=0)
    return ValidPredicate(text, tuple(used.values()))


def _refuse_several_statements(text: str) -> None:
    for position, kind in duckdb.tokenize(text):
        if kind == duckdb.token_type.operator and text[position] == ";":
            raise PredicateError(
                f"predicate refused: ';' at position {position} starts another statement; "
                "a predicate is one boolean expression"
            )


@functools.lru_cache(maxsize=1)
def _parser(pid: int) -> duckdb.DuckDBPyConnection:
    # Parsing only: this connection never sees data, and opening one costs tens of ms.
    # Keyed by process id so a forked child never uses its parent's connection.
    return duckdb.connect(":memory:")


_parser_lock = threading.Lock()


def _parse(text: str, connection: duckdb.DuckDBPyConnection | None) -> dict[str, Any]:
    sql = f"{_PROBE}{FRAME_OPEN}{text}{FRAME_CLOSE}"
    if connection is not None:
        serialized = connection.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()[0][0]
    else:
        with _parser_lock:
            parser = _parser(os.getpid())
            serialized = parser.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()[0][0]
    result = orjson.loads(serialized)
    if result.get("error"):
        message = " ".join(str(result.get("error_message", "syntax error")).split())
        position = result.get("position")
        if position is not None and str(position).isdigit():
            offset = int(position) - len(_PROBE) - len(FRAME_OPEN)
            if 0 <= offset <= len(text):
                message += f" (position {offset})"
        raise PredicateError(f"cannot parse predicate: {message}")
    statements = result.get("statements", [])
    node = statements[0].get("node", {}) if len(statements) == 1 else {}
    if not _is_plain_filter(node):
        raise PredicateError("predicate refused: it must be one boolean expression, not a query")
    return node["where_clause"]


def _is_plain_filter(node: dict[str, Any]) -> bool:
    """True when the probe statement kept its shape: SELECT * FROM documents WHERE (...)."""
    source = node.get("from_table") or {}
    return (
        node.get("type") == "SELECT_NODE"
        and not node.get("modifiers")
        and not (node.get("cte_map") or {}).get("map")
        and len(node.get("select_list") or []) == 1
        and node["select_list"][0].get("class") == "STAR"
        and source.get("type") == "BASE_TABLE"
        and source.get("table_name") == "documents"
        and not source.get("schema_name")
        and not node.get("group_expressions")
        and not node.get("having")
        and not node.get("qualify")
        and not node.get("sample")
        and node.get("where_clause") is not None
    )


def _walk(node: Any, available: dict[str, str], used: dict[str, str], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise PredicateError(f"predicate refused: nested deeper than {MAX_DEPTH} levels")
    kind = node.get("class")
    children: list[Any]
    if kind == "CONSTANT":
        return
    if kind == "COLUMN_REF":
        _use_column(node["column_names"], available, used)
        return
    if kind == "CONJUNCTION":
        children = node["children"]
    elif kind == "COMPARISON" and node.get("type") in COMPARISONS:
        children = [node["left"], node["right"]]
    elif kind == "OPERATOR" and node.get("type") in PLAIN_OPERATORS:
        children = node["children"]
    elif kind == "BETWEEN":
        children = [node["input"], node["lower"], node["upper"]]
    elif kind == "CAST":
        _check_type(node["type_expr"])
        children = [node["child"]]
    elif kind == "FUNCTION":
        children = _function_arguments(node)
    else:
        described = _KIND_NAMES.get(kind, f"{str(kind).lower()} expressions")
        raise PredicateError(f"predicate refused: {described} are not allowed{_at(node)}")
    for child in children:
        _walk(child, available, used, depth + 1)


def _use_column(names: list[str], available: dict[str, str], used: dict[str, str]) -> None:
    head = names[0]
    column = available.get(head.lower())
    if column is None:
        listing = ", ".join(sorted(available.values(), key=str.lower))
        close = difflib.get_close_matches(head.lower(), list(available), n=1)
        hint = f" (did you mean {available[close[0]]!r}?)" if close else ""
        raise PredicateError(f"unknown column {head!r}{hint}; available columns: {listing}")
    used.setdefault(column.lower(), column)


def _function_arguments(node: dict[str, Any]) -> list[Any]:
    name = node.get("function_name", "")
    allowed = OPERATORS if node.get("is_operator") else PURE_FUNCTIONS
    if (
        name.lower() not in allowed
        or node.get("schema")
        or node.get("catalog")
        or node.get("filter")
        or node.get("distinct")
        or node.get("export_state")
        or (node.get("order_bys") or {}).get("orders")
    ):
        raise PredicateError(
            f"predicate refused: function {name!r} is not allowed{_at(node)}; "
            f"allowed: {SHOWN_FUNCTIONS} (and their aliases)"
        )
    arguments = node.get("arguments") or node.get("children") or []
    return [arg.get("expression", arg) for arg in arguments]


def _check_type(type_expr: dict[str, Any]) -> None:
    name = str(type_expr.get("type_name", "")).upper()
    if type_expr.get("schema") or type_expr.get("catalog") or name not in CAST_TYPES:
        raise PredicateError(f"predicate refused: CAST to {name or 'this type'} is not allowed")
    for child in type_expr.get("children") or []:
        if child.get("class") != "CONSTANT":
            raise PredicateError(f"predicate refused: CAST to {name} takes constant sizes only")


def _at(node: dict[str, Any]) -> str:
    location = node.get("query_location")
    if not isinstance(location, int) or location < 0:
        return ""
    offset = location - len(_PROBE) - len(FRAME_OPEN)
    return f" (position {offset})" if 0 <= offset < MAX_LENGTH else ""
