"""Answers as CSV files: a composition's groups, or a page of sample documents.

A cell that a spreadsheet would run as a formula (text starting with `=`, `+`, `-`, `@`, a
tab or a carriage return) is written with a leading `'`, so a document's text cannot
run anything in the program that opens the export. Lists and mappings are written as JSON.

Example:
    >>> print(composition_csv({"groups": [{"value": "en", "documents": 2, "tokens": 9}]}))
    value,low,high,documents,tokens\r
    en,,,2,9\r
    <BLANKLINE>
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from fastapi.responses import Response

FORMULA = ("=", "+", "-", "@", "\t", "\r")
FORMATS = ("json", "csv")


def cell(value: Any) -> Any:
    """A value as a CSV cell: text that would start a formula is quoted with `'`.

    Example:
        >>> cell("=HYPERLINK(1)"), cell(-2), cell(["a", 1]), cell(None)
        ("'=HYPERLINK(1)", -2, '["a",1]', '')
    """
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        value = orjson.dumps(value).decode()
    if isinstance(value, str) and value.startswith(FORMULA):
        return "'" + value
    return value


def to_csv(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> str:
    """A header of `columns`, then one line per row (missing keys are empty)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row.get(column)) for column in columns])
    return out.getvalue()


def composition_csv(answer: dict[str, Any]) -> str:
    """A composition's groups: value, bucket edges (numeric columns), documents, tokens."""
    return to_csv(("value", "low", "high", "documents", "tokens"), answer["groups"])


def samples_csv(answer: dict[str, Any]) -> str:
    """A page of samples: where each document is, its text, then every property seen."""
    samples = answer["samples"]
    fixed = ["dataset", "shard", "index", "text", "truncated"]
    properties = list(dict.fromkeys(key for sample in samples for key in sample["properties"]))
    named = [f"properties.{key}" if key in fixed else key for key in properties]
    rows = [
        {key: sample[key] for key in fixed}
        | dict(zip(named, (sample["properties"].get(key) for key in properties), strict=True))
        for sample in samples
    ]
    return to_csv(fixed + named, rows)


def csv_response(text: str, name: str) -> Response:
    """A CSV download named after `name` (reduced to letters, digits, '_', '-', '.')."""
    safe = re.sub(r"[^A-Za-z0-9_.\-]+", "_", name).strip("_.") or "export"
    headers = {"Content-Disposition": f'attachment; filename="{safe}.csv"'}
    return Response(text, media_type="text/csv; charset=utf-8", headers=headers)


# The spec's description of a route that answers CSV as well as JSON.
CSV_CONTENT = {200: {"content": {"text/csv": {"schema": {"type": "string"}}}}}
