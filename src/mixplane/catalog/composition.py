"""What a selection is made of: documents and tokens grouped by a property, and histograms.

Both run on the catalog's sandboxed engine, after the predicate's validation, one dataset
version at a time (a column some versions lack reads as NULL there), and add the versions up.
A numeric property is cut into equal-width buckets over the selection's own range.

Example:
    >>> with Catalog("catalog.duckdb").session() as session:  # doctest: +SKIP
    ...     groups = composition(session, "language", where="source = 'web'")
    >>> groups["groups"][0]  # doctest: +SKIP
    {'value': 'en', 'documents': 254, 'tokens': 79313}
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import duckdb
import orjson

from mixplane.catalog.catalog import CatalogSession, columns_of
from mixplane.catalog.engine import documents_view, engine_error, quote_name
from mixplane.catalog.predicate import PredicateError, check_predicate
from mixplane.catalog.registry import DatasetVersion, is_null_type
from mixplane.catalog.sample import json_value

MAX_GROUPS = 100
MAX_BINS = 200
OTHER = "(other)"
NULL = "(null)"
NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL")
NUMERIC += tuple("U" + kind for kind in NUMERIC[:5])


def is_numeric(kind: str) -> bool:
    """Whether a DuckDB type is a number (bucketed rather than grouped by value).

    Example:
        >>> is_numeric("DOUBLE"), is_numeric("DECIMAL(9,2)"), is_numeric("VARCHAR")
        (True, True, False)
    """
    return kind.upper().split("(")[0] in NUMERIC


def composition(
    session: CatalogSession,
    by: str,
    where: str = "TRUE",
    datasets: Sequence[str] | None = None,
    bins: int = 10,
    max_groups: int = MAX_GROUPS,
) -> dict[str, Any]:
    """Documents and tokens of the selection grouped by the property `by`, largest first.

    A numeric property is cut into `bins` equal-width buckets (`value` "[low, high)", with
    `low` and `high`); NULL is its own group; past `max_groups`, the smallest groups are
    summed into "(other)".
    """
    versions = session.resolve(datasets)
    column, kind = _column(versions, by)
    if is_numeric(kind):
        histogram = _histogram(session, versions, column, where, bins)
        groups = [
            {"value": f"[{b['low']:g}, {b['high']:g})", **b}
            for b in histogram["bins"]
            if b["documents"]
        ]
        if histogram["nulls"]["documents"]:
            groups.append({"value": NULL, **histogram["nulls"]})
    else:
        totals: dict[Any, list[int]] = {}
        sql = f"SELECT {quote_name(column)}, count(*), coalesce(sum(n_tokens), 0) FROM documents"
        for value, documents, tokens in _Scan(session, versions, where, column).rows(
            sql, "GROUP BY 1"
        ):
            key = _group_key(value)
            entry = totals.setdefault(key, [0, 0])
            entry[0] += documents
            entry[1] += tokens
        groups = [{"value": k, "documents": d, "tokens": t} for k, (d, t) in totals.items()]
        groups.sort(key=lambda g: (-g["tokens"], -g["documents"], str(g["value"])))
        if len(groups) > max_groups:
            rest = groups[max_groups - 1 :]
            groups = groups[: max_groups - 1] + [
                {
                    "value": OTHER,
                    "documents": sum(g["documents"] for g in rest),
                    "tokens": sum(g["tokens"] for g in rest),
                    "groups": len(rest),
                }
            ]
    return {
        "by": column,
        "where": where,
        "documents": sum(g["documents"] for g in groups),
        "tokens": sum(g["tokens"] for g in groups),
        "groups": groups,
    }


def histogram(
    session: CatalogSession,
    column: str,
    where: str = "TRUE",
    datasets: Sequence[str] | None = None,
    bins: int = 20,
) -> dict[str, Any]:
    """Documents and tokens of the selection in `bins` equal-width buckets of a numeric
    property, from its smallest to its largest value (the last bucket includes its end)."""
    versions = session.resolve(datasets)
    name, kind = _column(versions, column)
    if not is_numeric(kind):
        raise PredicateError(f"{name} is {kind}, not a number; group by it instead")
    return _histogram(session, versions, name, where, bins)


def _histogram(
    session: CatalogSession, versions: list[DatasetVersion], column: str, where: str, bins: int
) -> dict[str, Any]:
    if not 1 <= bins <= MAX_BINS:
        raise PredicateError(f"bins must be between 1 and {MAX_BINS}, not {bins}")
    scan = _Scan(session, versions, where, column)
    value = f"CAST({quote_name(column)} AS DOUBLE)"
    low, high = math.inf, -math.inf
    sql = f"SELECT min({value}), max({value}) FROM documents"
    for smallest, largest in scan.rows(sql):
        if smallest is not None and math.isfinite(smallest) and math.isfinite(largest):
            low, high = min(low, smallest), max(high, largest)
    counts = [[0, 0] for _ in range(bins)]
    nulls = [0, 0]
    if low <= high:
        width = (high - low) / bins or 1.0
        bucket = (
            f"CASE WHEN {value} IS NULL OR isnan({value}) OR isinf({value}) THEN -1 "
            f"ELSE least(CAST(floor(({value} - {low!r}) / {width!r}) AS BIGINT), {bins - 1}) END"
        )
        sql = f"SELECT {bucket}, count(*), coalesce(sum(n_tokens), 0) FROM documents"
        for index, documents, tokens in scan.rows(sql, "GROUP BY 1"):
            target = nulls if index < 0 else counts[index]
            target[0] += documents
            target[1] += tokens
        edges = [low + i * width for i in range(bins)] + [low + bins * width]
    else:  # no finite value at all: everything is in `nulls`
        sql = "SELECT count(*), coalesce(sum(n_tokens), 0) FROM documents"
        for documents, tokens in scan.rows(sql):
            nulls[0] += documents
            nulls[1] += tokens
        edges = [0.0] * (bins + 1)
    return {
        "column": column,
        "where": where,
        "nulls": {"documents": nulls[0], "tokens": nulls[1]},
        "bins": [
            {"low": edges[i], "high": edges[i + 1], "documents": d, "tokens": t}
            for i, (d, t) in enumerate(counts)
        ],
    }


def _column(versions: list[DatasetVersion], name: str) -> tuple[str, str]:
    """The property column `name` (matched case-insensitively) and its type."""
    columns = columns_of(versions)
    by_lower = {column.lower(): column for column in columns}
    if name.lower() not in by_lower:
        known = ", ".join(sorted(columns))
        raise PredicateError(f"no property column {name!r}; the columns are: {known}")
    column = by_lower[name.lower()]
    kind = columns[column]
    return column, "VARCHAR" if is_null_type(kind) else kind


class _Scan:
    """Queries `... FROM documents WHERE <where> ...` on every version of a selection, their
    rows concatenated; `column` is the one they read besides the predicate's. The predicate is
    validated and each version's files checked unchanged once, however many queries run (a
    histogram runs two)."""

    def __init__(
        self, session: CatalogSession, versions: list[DatasetVersion], where: str, column: str
    ):
        columns = columns_of(versions)
        self.engine = session.engine(versions)
        self.predicate = check_predicate(where, columns, self.engine)
        needed = {name.lower() for name in (*self.predicate.columns, column)}
        self.views: list[tuple[str, str]] = []
        for version in versions:
            session.check_unchanged(version)
            present = {name.lower() for name in version.schema}
            missing = {
                name: "VARCHAR" if is_null_type(kind) else kind
                for name, kind in columns.items()
                if name.lower() not in present and name.lower() in needed
            }
            urls = session.meta_urls([version])[0]
            view = documents_view(urls, version.schema, missing, not version.uniform)
            self.views.append((version.ref, view))

    def rows(self, select: str, tail: str = "") -> list[tuple]:
        """`select ... FROM documents WHERE <where> tail` on every version."""
        rows: list[tuple] = []
        for ref, view in self.views:
            try:
                self.engine.execute(f"CREATE OR REPLACE TEMP VIEW documents AS {view}")
                rows += self.engine.execute(f"{select} {self.predicate.framed()} {tail}").fetchall()
            except duckdb.Error as error:
                raise engine_error(error, f"query failed on {ref}") from error
        return rows


def _group_key(value: Any) -> str | int | float | bool:
    """A group's value as JSON can carry it and a dict can key it (lists as their JSON)."""
    if value is None:
        return NULL
    plain = json_value(value)
    return plain if isinstance(plain, (str, int, float, bool)) else orjson.dumps(plain).decode()
