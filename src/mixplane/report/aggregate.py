"""The report's arithmetic, with no I/O: SQL over a relation of documents, and the
readings of manifests and statistics turned into typed rows.

The relation every query reads (`documents`) has one row per document with `dataset`,
`id`, `source`, `url`, `license`, `language`, `tokens` (the document's, or those a
mixture's steps took from it) and the `pii_*` counts; `mixplane.report.sources` builds it.

Example:
    >>> top_sql("documents", "license", 2).split("\\n")[0]
    'WITH grouped AS (SELECT license AS key, count(*) AS documents, '
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mixplane.catalog.engine import quote_literal, quote_name
from mixplane.errors import InputError
from mixplane.report.model import Breakdown, PiiKind, Row, Takedown

NOT_DETECTED = "not detected"  # the property is absent: its stage did not run
OTHER = "other"
NO_URL = "(no url)"
# The host of a URL (userinfo and port left out), lower case, without a leading `www.`.
HOST = r"^[A-Za-z][A-Za-z0-9+.\-]*://(?:[^/?#@]*@)?([^/?#:]+)"


def domain_sql(column: str = "url") -> str:
    """The SQL expression of a URL's domain: its host in lower case, `www.` dropped.

    Example:
        >>> import duckdb
        >>> url = "'HTTPS://user@WWW.Example.org:8080/a?b'"
        >>> duckdb.sql(f"SELECT {domain_sql(url)}").fetchall()[0][0]
        'example.org'
    """
    host = f"lower(regexp_extract({column}, {quote_literal(HOST)}, 1))"
    return f"coalesce(nullif(regexp_replace({host}, '^www\\.', ''), ''), {quote_literal(NO_URL)})"


def property_sql(column: str, present: bool, missing: str = NOT_DETECTED) -> str:
    """A text property, `missing` where a document has none (NULL) or no shard has it."""
    if not present:
        return quote_literal(missing)
    return f"coalesce(CAST({quote_name(column)} AS VARCHAR), {quote_literal(missing)})"


def top_sql(relation: str, key: str, top: int | None) -> str:
    """Documents and tokens per `key` value, most tokens first (ties by value); past the
    first `top` values, one `other` row. Each row also carries the number of values."""
    grouped = (
        f"WITH grouped AS (SELECT {key} AS key, count(*) AS documents, "
        f"\ncoalesce(sum(tokens), 0) AS tokens FROM {relation} GROUP BY 1), "
        "ranked AS (SELECT *, row_number() OVER (ORDER BY tokens DESC, documents DESC, key) "
        "AS place, count(*) OVER () AS distinct_keys FROM grouped) "
    )
    if top is None:
        return grouped + "SELECT key, documents, tokens, distinct_keys FROM ranked ORDER BY place"
    return grouped + (
        f"SELECT CASE WHEN place <= {int(top)} THEN key ELSE {quote_literal(OTHER)} END AS key, "
        "sum(documents), sum(tokens), any_value(distinct_keys), min(place) AS first "
        f"FROM ranked GROUP BY 1 ORDER BY first"
    )


def breakdown(name: str, rows: Iterable[Sequence[Any]]) -> Breakdown:
    """A `Breakdown` from `top_sql`'s rows.

    Example:
        >>> breakdown("source", [("web", 3, 900, 2), ("wiki", 1, 50, 2)]).rows[1]
        Row(key='wiki', documents=1, tokens=50)
    """
    rows = list(rows)
    return Breakdown(
        name,
        tuple(Row(str(r[0]), int(r[1]), int(r[2])) for r in rows),
        int(rows[0][3]) if rows else 0,
    )


def pii_sql(relation: str, kinds: Sequence[str]) -> str:
    """Per dataset and kind: documents holding any and the findings in all (two columns a
    kind)."""
    parts = []
    for kind in kinds:
        column = quote_name(f"pii_{kind}")
        parts += [f"count(*) FILTER (WHERE {column} > 0)", f"coalesce(sum({column}), 0)"]
    return f"SELECT dataset, {', '.join(parts)} FROM {relation} GROUP BY 1 ORDER BY 1"


def pii_kinds(
    kinds: Sequence[str],
    rows: Iterable[Sequence[Any]],
    modes: dict[str, str],
    dropped: dict[str, int],
) -> tuple[PiiKind, ...]:
    """`PiiKind`s from `pii_sql`'s rows: what a dataset's pii stage found counts as
    redacted when its mode (`modes`) was `redact`; `dropped` are documents dropped per kind.

    Example:
        >>> pii_kinds(["email"], [("web@1", 2, 5), ("wiki@1", 1, 1)],
        ...           {"web@1": "redact", "wiki@1": "annotate"}, {"email": 1})
        (PiiKind(kind='email', documents=3, found=6, redacted=5, dropped=1),)
    """
    rows = list(rows)
    found = []
    for n, kind in enumerate(kinds):
        documents = total = redacted = 0
        for row in rows:
            documents += int(row[1 + 2 * n])
            total += int(row[2 + 2 * n])
            if modes.get(str(row[0])) == "redact":
                redacted += int(row[2 + 2 * n])
        found.append(PiiKind(kind, documents, total, redacted, dropped.get(kind, 0)))
    for kind in sorted(set(dropped) - set(kinds)):
        found.append(PiiKind(kind, 0, 0, 0, dropped[kind]))
    return tuple(found)


def stage_options(manifest: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The options of the last stage called `name` in a processing manifest's config, or
    None when it did not run.

    Example:
        >>> stage_options({"config": {"stages": [{"name": "pii", "options": {"mode": "drop"}}]}},
        ...               "pii")
        {'mode': 'drop'}
    """
    found = None
    for stage in (manifest.get("config") or {}).get("stages") or []:
        if isinstance(stage, dict) and stage.get("name") == name:
            found = dict(stage.get("options") or {})
        elif stage == name:
            found = {}
    return found


def takedowns(manifest: dict[str, Any], dataset: str, folder: str) -> list[Takedown]:
    """The `takedowns` a manifest records (`mixplane takedown` writes them in the
    manifest of the version it makes); none when the key is absent.

    Example:
        >>> takedowns({"takedowns": [{"request": "r1", "reference": "T-1",
        ...     "criteria": {"domain": "a.example"}, "at": "2026-01-01T00:00:00Z",
        ...     "removed": {"documents": 3, "tokens": 90, "shards_rewritten": 1}}]},
        ...     "web@2", "tok")[0].tokens
        90
    """
    entries = manifest.get("takedowns") or []
    if not isinstance(entries, list):
        raise InputError(f"{folder}/_manifest.json: takedowns is a list of requests")
    found = []
    for n, entry in enumerate(entries):
        removed = entry.get("removed") if isinstance(entry, dict) else None
        if not isinstance(removed, dict) or not isinstance(entry.get("criteria", {}), dict):
            raise InputError(
                f"{folder}/_manifest.json: takedowns[{n}] is not a request with criteria and "
                "removed {documents, tokens, shards_rewritten}"
            )
        found.append(
            Takedown(
                dataset=dataset,
                folder=folder,
                request=str(entry.get("request")),
                reference=entry.get("reference"),
                criteria=dict(entry.get("criteria") or {}),
                at=entry.get("at"),
                documents=int(removed.get("documents") or 0),
                tokens=int(removed.get("tokens") or 0),
                shards_rewritten=int(removed.get("shards_rewritten") or 0),
            )
        )
    return found
