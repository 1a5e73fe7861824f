"""A `Report` from a connection whose view `documents` holds the documents to count (a
version's, or those a mixture's steps read, with the tokens taken from each).

Example:
    >>> report = assemble(connection, "web@1", "dataset", ["web@1"], lineage, ["email"], 20)
    ... # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from mixplane.report.aggregate import (
    breakdown,
    domain_sql,
    pii_kinds,
    pii_sql,
    property_sql,
    top_sql,
)
from mixplane.report.model import Lineage, OptOut, Report

RELATION = "documents"


def assemble(
    connection: duckdb.DuckDBPyConnection,
    subject: str,
    kind: str,
    datasets: Sequence[str],
    lineage: Lineage,
    kinds: Sequence[str],
    top: int | None,
    reads: dict[str, Any] | None = None,
) -> Report:
    """Every number of the report, each one query over `documents`."""

    def by(name: str, key: str, most: int | None = None):
        return breakdown(name, connection.execute(top_sql(RELATION, key, most)).fetchall())

    documents, tokens = connection.execute(
        f"SELECT count(*), coalesce(sum(tokens), 0) FROM {RELATION}"
    ).fetchone()
    kept = [
        OptOut(str(dataset), str(signal), "kept", int(n))
        for dataset, signal, n in connection.execute(
            "SELECT dataset, coalesce(trim(split_part(opt_out_signal, ':', 1)), 'unknown'), "
            f"count(*) FROM {RELATION} WHERE opt_out GROUP BY 1, 2 ORDER BY 1, 2"
        ).fetchall()
    ]
    pii_rows = connection.execute(pii_sql(RELATION, kinds)).fetchall() if kinds else []
    return Report(
        subject=subject,
        kind=kind,
        datasets=tuple(datasets),
        documents=int(documents),
        tokens=int(tokens),
        by_dataset=by("dataset", "dataset"),
        by_license=by("license", property_sql("license", True)),
        by_source=by("source", "source"),
        by_domain=by("domain", domain_sql("url"), top),
        by_language=by("language", property_sql("language", True)),
        pii=pii_kinds(kinds, pii_rows, lineage.pii_modes, lineage.pii_dropped),
        lineage=Lineage(
            lineage.steps,
            lineage.removals,
            lineage.opt_outs + tuple(kept),
            lineage.takedowns,
            lineage.pii_modes,
            lineage.pii_dropped,
        ),
        reads=reads,
    )
