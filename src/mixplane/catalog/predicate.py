"""Predicate validation: a query is one boolean SQL expression over document properties.

DuckDB's own parser turns the predicate into an abstract syntax tree (`json_serialize_sql`), and
a walk over that tree lets through only column references, literals, comparisons, boolean
logic, IN, LIKE/ILIKE, BETWEEN, IS [NOT] NULL, arithmetic, CAST and a short list of pure
functions (a regular expression's pattern must be a literal: one computed per row is compiled
per row, at a cost nothing bounds). Everything else (subqueries, table functions such as
`read_csv`, several statements, pragmas, window functions, parameters) is refused with a
one-line message.

A predicate is one whole expression: no comments, and parentheses that balance inside it, so
it can never close the frame it is run in; positions in messages count characters.

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
# Functions whose second argument is a pattern compiled before matching.
PATTERN_FUNCTIONS = frozenset(["regexp_matches", "regexp_full_match"])
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
# Quotes that editors and chat apps put in place of ' and ".
TYPOGRAPHIC_QUOTES = "‘’‚‛“”„‟′″«»＇＂"
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
    try:
        return _check(text, columns, connection)
    except PredicateError as error:
        quotes = _typographic_quotes(text)
        if quotes:
            raise PredicateError(
                f"{error}; the predicate has typographic quotes ({' '.join(quotes)}), which "
                "SQL does not read as quotes: write strings in straight single quotes, e.g. "
                "language = 'de'"
            ) from None
        raise


def _check(
    text: str, columns: Iterable[str], connection: duckdb.DuckDBPyConnection | None
) -> ValidPredicate:
    _check_tokens(text)
    tree, negated = _parse(text, connection)
    walk = _Walk(text, {name.lower(): name for name in columns})
    walk.visit(tree, depth=0)
    if not _is_negation_of(negated, tree):
        raise PredicateError("predicate refused: it is not one whole boolean expression")
    return ValidPredicate(text, tuple(walk.used.values()))


def _typographic_quotes(text: str) -> list[str]:
    """The typographic quotes (as word processors and chat apps type them) that stand
    outside string literals, where they were surely meant as quotes."""
    if not any(char in TYPOGRAPHIC_QUOTES for char in text):
        return []
    encoded = text.encode()
    spans = duckdb.tokenize(text)
    ends = [start for start, _ in spans[1:]] + [len(encoded)]
    outside = [
        encoded[start:end].decode(errors="ignore")
        for (start, kind), end in zip(spans, ends, strict=True)
        if kind != duckdb.token_type.string_const
    ]
    found = {char for piece in outside for char in piece if char in TYPOGRAPHIC_QUOTES}
    return sorted(found, key=TYPOGRAPHIC_QUOTES.index)


def _check_tokens(text: str) -> None:
    """One expression, whole: no statement separator, no comment, and parentheses that
    balance without ever closing one the predicate did not open (which would close the
    frame around it)."""
    encoded = text.encode()
    spans = duckdb.tokenize(text)
    ends = [start for start, _ in spans[1:]] + [len(encoded)]
    opened: list[int] = []
    for (start, kind), end in zip(spans, ends, strict=True):
        position = _char_offset(encoded, start)
        if kind == duckdb.token_type.comment:
            raise PredicateError(
                f"predicate refused: comment at position {position}; a predicate is one "
                "boolean expression without comments"
            )
        if kind != duckdb.token_type.operator:
            continue
        for index, char in enumerate(encoded[start:end].decode()):
            if char == ";":
                raise PredicateError(
                    f"predicate refused: ';' at position {position + index} starts another "
                    "statement; a predicate is one boolean expression"
                )
            if char == "(":
                opened.append(position + index)
            elif char == ")":
                if not opened:
                    raise PredicateError(
                        f"predicate refused: ')' at position {position + index} closes a "
                        "parenthesis the predicate did not open; a predicate is one boolean "
                        "expression"
                    )
                opened.pop()
    if opened:
        raise PredicateError(
            f"predicate refused: '(' at position {opened[-1]} is never closed; a predicate "
            "is one boolean expression"
        )


def _char_offset(encoded: bytes, byte_offset: int) -> int:
    """DuckDB reports positions in UTF-8 bytes; users count characters."""
    return len(encoded[:byte_offset].decode(errors="ignore"))


@functools.lru_cache(maxsize=1)
def _parser(pid: int) -> duckdb.DuckDBPyConnection:
    # Parsing only: this connection never sees data, and opening one costs tens of ms.
    # Keyed by process id so a forked child never uses its parent's connection.
    return duckdb.connect(":memory:")


_parser_lock = threading.Lock()


def _parse(
    text: str, connection: duckdb.DuckDBPyConnection | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The predicate's tree, and the parse of the same text under NOT: a predicate that is
    one whole expression becomes the operand of that NOT, whatever the tokenizer made of it."""
    sql = f"{_PROBE}{FRAME_OPEN}{text}{FRAME_CLOSE}"
    negated = f"{_PROBE}WHERE NOT (\n{text}{FRAME_CLOSE}"
    query = "SELECT json_serialize_sql(?), json_serialize_sql(?)"
    if connection is not None:
        serialized, serialized_negated = connection.execute(query, [sql, negated]).fetchone()
    else:
        with _parser_lock:
            parser = _parser(os.getpid())
            serialized, serialized_negated = parser.execute(query, [sql, negated]).fetchone()
    result = _loads(serialized)
    if result.get("error"):
        message = " ".join(str(result.get("error_message", "syntax error")).split())
        position = result.get("position")
        if position is not None and str(position).isdigit():
            offset = int(position) - len(_PROBE) - len(FRAME_OPEN)
            if 0 <= offset <= len(text.encode()):
                message += f" (position {_char_offset(text.encode(), offset)})"
        raise PredicateError(f"cannot parse predicate: {message}")
    statements = result.get("statements", [])
    node = statements[0].get("node", {}) if len(statements) == 1 else {}
    if not _is_plain_filter(node):
        raise PredicateError("predicate refused: it must be one boolean expression, not a query")
    return node["where_clause"], _loads(serialized_negated)


def _loads(serialized: str) -> dict[str, Any]:
    try:
        return orjson.loads(serialized)
    except orjson.JSONDecodeError:  # nested past what orjson reads, far past MAX_DEPTH
        raise PredicateError(f"predicate refused: nested deeper than {MAX_DEPTH} levels") from None


def _is_negation_of(result: dict[str, Any], tree: dict[str, Any]) -> bool:
    statements = result.get("statements") or [{}]
    where = statements[0].get("node", {}).get("where_clause") or {}
    children = where.get("children") or []
    return (
        len(statements) == 1
        and where.get("type") == "OPERATOR_NOT"
        and len(children) == 1
        and _without_locations(children[0]) == _without_locations(tree)
    )


def _without_locations(node: Any) -> Any:
    """`node` with its positions removed, in place: a loop, not recursion, because a tree
    MAX_DEPTH expressions deep nests several times deeper as JSON."""
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            item.pop("query_location", None)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return node


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


class _Walk:
    """A walk over the parsed predicate that allows only the listed kinds of node and
    records the columns it reads."""

    def __init__(self, text: str, available: dict[str, str]) -> None:
        self.encoded = text.encode()
        self.available = available
        self.used: dict[str, str] = {}

    def visit(self, node: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise PredicateError(f"predicate refused: nested deeper than {MAX_DEPTH} levels")
        kind = node.get("class")
        children: list[Any]
        if kind == "CONSTANT":
            return
        if kind == "COLUMN_REF":
            self.use_column(node["column_names"][0])
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
            children = self.function_arguments(node)
        else:
            described = _KIND_NAMES.get(kind, f"{str(kind).lower()} expressions")
            raise PredicateError(f"predicate refused: {described} are not allowed{self.at(node)}")
        for child in children:
            self.visit(child, depth + 1)

    def use_column(self, head: str) -> None:
        column = self.available.get(head.lower())
        if column is None:
            listing = ", ".join(sorted(self.available.values(), key=str.lower))
            close = difflib.get_close_matches(head.lower(), list(self.available), n=1)
            hint = f" (did you mean {self.available[close[0]]!r}?)" if close else ""
            raise PredicateError(f"unknown column {head!r}{hint}; available columns: {listing}")
        self.used.setdefault(column.lower(), column)

    def function_arguments(self, node: dict[str, Any]) -> list[Any]:
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
                f"predicate refused: function {name!r} is not allowed{self.at(node)}; "
                f"allowed: {SHOWN_FUNCTIONS} (and their aliases)"
            )
        arguments = node.get("arguments") or node.get("children") or []
        arguments = [arg.get("expression", arg) for arg in arguments]
        if name.lower() in PATTERN_FUNCTIONS and any(
            pattern.get("class") != "CONSTANT" for pattern in arguments[1:]
        ):
            raise PredicateError(
                f"predicate refused: {name}'s pattern and options must be literals"
                f"{self.at(node)}, e.g. {name}(url, '^https://')"
            )
        return arguments

    def at(self, node: dict[str, Any]) -> str:
        """Where the node starts in the predicate, in characters."""
        location = node.get("query_location")
        if not isinstance(location, int) or location < 0:
            return ""
        offset = location - len(_PROBE) - len(FRAME_OPEN)
        if not 0 <= offset < len(self.encoded):
            return ""
        return f" (position {_char_offset(self.encoded, offset)})"


def _check_type(type_expr: dict[str, Any]) -> None:
    name = str(type_expr.get("type_name", "")).upper()
    if type_expr.get("schema") or type_expr.get("catalog") or name not in CAST_TYPES:
        raise PredicateError(f"predicate refused: CAST to {name or 'this type'} is not allowed")
    for child in type_expr.get("children") or []:
        if child.get("class") != "CONSTANT":
            raise PredicateError(f"predicate refused: CAST to {name} takes constant sizes only")
