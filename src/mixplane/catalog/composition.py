"""What a selection is made of: documents and tokens grouped by a property, and histograms.

Both run on the catalog's sandboxed engine, after the predicate's validation, one dataset
version at a time (a column some versions lack reads as NULL there), and add the versions up.
A numeric property is cut into equal-width buckets over the selection's own range (or,
on a log scale, buckets of equal width in log10 over its positive values). Every bucket holds
`low <= value < high`, the last one `low <= value <= high`: its label says so ("[0.9, 1]").

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
NONPOSITIVE = "(<= 0)"  # on a log scale, the values it cannot place
SCALES = ("linear", "log")
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
    scale: str = "linear",
) -> dict[str, Any]:
    """Documents and tokens of the selection grouped by the property `by`, largest first.

    A numeric property is cut into `bins` buckets (see `histogram`), in order, labelled
    "[low, high)" and the last "[low, high]", with `low` and `high`; NULL is its own group,
    and so, on a log scale, are the values <= 0. Other properties are grouped by value
    (`bins` and `scale` do not apply); past `max_groups`, the smallest groups are summed into
    "(other)".
    """
    versions = session.resolve(datasets)
    column, kind = _column(versions, by)
    if is_numeric(kind):
        histogram = _histogram(session, versions, column, where, bins, scale)
        last = len(histogram["bins"]) - 1
        groups = [
            {"value": bucket_label(b["low"], b["high"], closed=i == last), **b}
            for i, b in enumerate(histogram["bins"])
            if b["documents"]
        ]
        if histogram.get("nonpositive", {}).get("documents"):
            groups.insert(0, {"value": NONPOSITIVE, **histogram["nonpositive"]})
        if histogram["nulls"]["documents"]:
            groups.append({"value": NULL, **histogram["nulls"]})
    else:
        _check_scale(scale)  # a column of words is grouped by its values, whatever the scale
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


def bucket_label(low: float, high: float, closed: bool) -> str:
    """A bucket's label: "[low, high)", or "[low, high]" for the last one, which holds its end;
    the numbers exactly as they compare.

    Example:
        >>> bucket_label(0.8, 0.9, closed=False), bucket_label(0.9, 1.0, closed=True)
        ('[0.8, 0.9)', '[0.9, 1]')
    """
    return f"[{exact(low)}, {exact(high)}{']' if closed else ')'}"


def exact(number: float) -> str:
    """The shortest text of `number` that reads back as the same double.

    Example:
        >>> exact(16.1), exact(8.0), exact(0.1 + 0.2)
        ('16.1', '8', '0.30000000000000004')
    """
    short = f"{number:.15g}"
    return short if float(short) == number else repr(number)


def histogram(
    session: CatalogSession,
    column: str,
    where: str = "TRUE",
    datasets: Sequence[str] | None = None,
    bins: int = 20,
    scale: str = "linear",
) -> dict[str, Any]:
    """Documents and tokens of the selection in `bins` buckets of a numeric property, from
    its smallest to its largest value: of equal width, or with `scale="log"` of equal width in
    log10 from the smallest positive value (the others are counted in `nonpositive`).

    Bucket i holds `low <= value < high`; the last holds its end too (`value <= high`). A
    property with a single value has one bucket, `[value, value]`; NULL, NaN and infinite
    values are counted in `nulls`.
    """
    versions = session.resolve(datasets)
    name, kind = _column(versions, column)
    if not is_numeric(kind):
        raise PredicateError(f"{name} is {kind}, not a number; group by it instead")
    return _histogram(session, versions, name, where, bins, scale)


def bucket_edges(low: float, high: float, bins: int, scale: str = "linear") -> list[float]:
    """The `bins + 1` edges of buckets from `low` to `high` (both exactly), equally wide, or
    on a log scale equally wide in log10 (`low` > 0 then); one bucket when `low == high`, and
    fewer than `bins` when they would be narrower than a billionth of the numbers' size. The
    inner edges are rounded to three significant digits of a bucket's width.

    Example:
        >>> bucket_edges(0.0, 1.0, 4)
        [0.0, 0.25, 0.5, 0.75, 1.0]
        >>> bucket_edges(8.0, 2135.0, 5, "log")
        [8.0, 24.5, 74.8, 228.0, 698.0, 2135.0]
    """
    if low == high:
        return [low, high]
    log = scale == "log"
    start, end = (math.log10(low), math.log10(high)) if log else (low, high)
    if math.isinf(end - start):
        raise PredicateError(f"values from {low:g} to {high:g} are too far apart to bucket")
    # Narrower buckets would blur into rounding errors (and the bucket a value falls in, see
    # `_bucket`).
    size = max(abs(start), abs(end), 1.0 if log else 0.0)
    bins = max(1, min(bins, int((end - start) / (size * 1e-9))))
    width = (end - start) / bins
    inner = [start + (end - start) * i / bins for i in range(1, bins)]
    if log:
        # Three significant digits, more when the buckets are narrower than that.
        digits = 3 + max(0, math.ceil(-math.log10(10**width - 1))) if width < 1 else 3
        inner = [_round(10**edge, digits - 1 - math.floor(math.log10(10**edge))) for edge in inner]
    else:
        inner = [_round(edge, 2 - math.floor(math.log10(width))) for edge in inner]
    edges = [low]
    for edge in inner:  # rounding may join neighbours or pass an end: keep them increasing
        if edges[-1] < edge < high:
            edges.append(edge)
    return [*edges, high]


def _round(number: float, decimals: int) -> float:
    """`number` at `decimals` decimal places (negative: tens, hundreds...): the inner edges
    are short decimals (16.1, not 16.08343...), so a label says exactly where a bucket
    starts, and the buckets stay of equal width to a fraction of a percent."""
    return float(round(number, decimals))


def _histogram(
    session: CatalogSession,
    versions: list[DatasetVersion],
    column: str,
    where: str,
    bins: int,
    scale: str = "linear",
) -> dict[str, Any]:
    if not 1 <= bins <= MAX_BINS:
        raise PredicateError(f"bins must be between 1 and {MAX_BINS}, not {bins}")
    _check_scale(scale)
    log = scale == "log"
    scan = _Scan(session, versions, where, column)
    value = f"CAST({quote_name(column)} AS DOUBLE)"
    finite = f"isfinite({value})" + (f" AND {value} > 0" if log else "")
    low, high = math.inf, -math.inf
    sql = f"SELECT min({value}) FILTER ({finite}), max({value}) FILTER ({finite}) FROM documents"
    for smallest, largest in scan.rows(sql):
        if smallest is not None:
            low, high = min(low, smallest), max(high, largest)
    edges = bucket_edges(low, high, bins, scale) if low <= high else []
    counts = [[0, 0] for _ in range(max(len(edges) - 1, 0))]
    nulls, nonpositive = [0, 0], [0, 0]
    sql = (
        f"SELECT {_bucket(value, edges, log)}, count(*), coalesce(sum(n_tokens), 0) FROM documents"
    )
    for index, documents, tokens in scan.rows(sql, "GROUP BY 1"):
        target = (
            nulls if index == _NULL else nonpositive if index == _NONPOSITIVE else counts[index]
        )
        target[0] += documents
        target[1] += tokens
    answer = {
        "column": column,
        "where": where,
        "scale": scale,
        "nulls": {"documents": nulls[0], "tokens": nulls[1]},
        "bins": [
            {"low": edges[i], "high": edges[i + 1], "documents": d, "tokens": t}
            for i, (d, t) in enumerate(counts)
        ],
    }
    if log:
        answer["nonpositive"] = {"documents": nonpositive[0], "tokens": nonpositive[1]}
    return answer


_NULL, _NONPOSITIVE = -1, -2


def _bucket(value: str, edges: list[float], log: bool) -> str:
    """SQL of a value's bucket by `edges`: -1 for NULL, NaN and infinities, -2 for values
    <= 0 on a log scale.

    The division only guesses the bucket; a comparison with the edges themselves decides, so
    a value on an edge is in the bucket that starts there, as the labels say.
    """
    special = f"WHEN {value} IS NULL OR NOT isfinite({value}) THEN {_NULL}"
    if log:
        special += f" WHEN {value} <= 0 THEN {_NONPOSITIVE}"
    if not edges:  # no value to place: everything is special
        return f"CASE {special} END"
    count = len(edges) - 1
    low, high = edges[0], edges[-1]
    start, end = (math.log10(low), math.log10(high)) if log else (low, high)
    scaled = f"log10({value})" if log else value
    position = f"({scaled} - {start!r}) / {(end - start) / count or 1.0!r}"
    guess = f"least(greatest(CAST(floor({position}) AS BIGINT), 0), {count - 1})"
    listed = "[" + ", ".join(repr(edge) for edge in edges) + "]::DOUBLE[]"
    # Lists are 1-based: bucket i starts at edge i + 1 and ends at edge i + 2.
    below = f"CASE WHEN {value} < list_extract({listed}, {guess} + 1) THEN 1 ELSE 0 END"
    above = (
        f"CASE WHEN {guess} < {count - 1} AND {value} >= list_extract({listed}, {guess} + 2) "
        "THEN 1 ELSE 0 END"
    )
    return f"CASE {special} ELSE {guess} - {below} + {above} END"


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise PredicateError(f"scale must be one of {', '.join(SCALES)}, not {scale!r}")


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
            view = documents_view(
                urls, version.schema, missing, not version.uniform, version.added_sources()
            )
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
