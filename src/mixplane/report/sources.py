"""Where a report's numbers come from: the shards' metadata of dataset versions as one
DuckDB relation, and each version's lineage (manifests, `_excluded/` and `_quarantine/`).

Example:
    >>> files = lineage_files([version], {})  # doctest: +SKIP
    >>> connection = open_relation([version], files, {})  # doctest: +SKIP
    >>> connection.execute("SELECT count(*) FROM all_documents").fetchone()  # doctest: +SKIP
    (274,)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from mixplane.catalog.engine import (
    ROW_COLUMN,
    SHARD_COLUMN,
    documents_view,
    parquet_source,
    quote_literal,
    quote_name,
    sandbox,
)
from mixplane.catalog.query import added_urls, check_unchanged
from mixplane.catalog.registry import DatasetVersion
from mixplane.errors import InputError
from mixplane.io.atomic import join_url
from mixplane.lineage import Step as LineageStep
from mixplane.lineage import trace
from mixplane.manifest import read_json
from mixplane.report.aggregate import property_sql, stage_options, takedowns
from mixplane.report.model import Lineage, OptOut, Removal, Step

# Where a step writes the records it did not keep, and what the report calls them.
FOLDERS = {"_excluded/": "excluded", "_quarantine/": "quarantined", "_errors/": "errored"}
# The `_stats.json` tables of removed records by stage and reason, per outcome.
STATS_TABLES = {"excluded": "excluded_by", "quarantined": "quarantined_by", "errored": "errored_by"}
STATS = "_stats.json"
INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT"} | {
    f"U{name}" for name in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT")
}


@dataclass
class StepFiles:
    """One lineage step: its manifest, its `_stats.json` ({} when it wrote none) and the
    files of the records it removed, by outcome."""

    step: LineageStep
    stats: dict[str, Any]
    files: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class VersionLineage:
    """A version's lineage steps, nearest first, with their statistics and files."""

    version: DatasetVersion
    steps: list[StepFiles]

    @property
    def urls(self) -> list[str]:
        return [url for step in self.steps for urls in step.files.values() for url in urls]


def lineage_files(
    versions: Sequence[DatasetVersion], storage_options: dict[str, Any]
) -> list[VersionLineage]:
    """Each version's lineage back to its raw inputs: every step's statistics and the files
    of removed records its manifest lists."""
    found = []
    for version in versions:
        steps = []
        for step in trace(version.lineage_root, storage_options):
            files: dict[str, list[str]] = {}
            for output in step.outputs:
                path = str(output.get("path") or "")
                for prefix, outcome in FOLDERS.items():
                    if path.startswith(prefix) and path.endswith(".parquet"):
                        files.setdefault(outcome, []).append(join_url(step.folder, path))
            steps.append(StepFiles(step, _stats(step.folder, storage_options), files))
        found.append(VersionLineage(version, steps))
    return found


def _stats(folder: str, storage_options: dict[str, Any]) -> dict[str, Any]:
    url = join_url(folder, STATS)
    try:
        stats = read_json(url, storage_options)
    except FileNotFoundError:
        return {}
    except ValueError as error:
        raise InputError(f"{url}: not valid JSON ({error})") from error
    if not isinstance(stats, dict):
        raise InputError(f"{url}: statistics are a JSON object")
    return stats


def pii_columns(versions: Sequence[DatasetVersion]) -> list[str]:
    """The kinds of the `pii_*` count columns (integers: the pii stage's) any version has,
    in first-seen order."""
    kinds: dict[str, None] = {}
    for version in versions:
        for name, kind in version.schema.items():
            if name.startswith("pii_") and kind.upper() in INTEGERS:
                kinds[name[len("pii_") :]] = None
    return list(kinds)


def open_relation(
    versions: Sequence[DatasetVersion],
    lineages: Sequence[VersionLineage],
    storage_options: dict[str, Any],
) -> duckdb.DuckDBPyConnection:
    """A sandboxed connection with the view `all_documents` over every document of
    `versions`: `dataset`, `shard` (the version's shard number), `row`, `id`, `source`,
    `url`, `license`, `language`, `opt_out`, `opt_out_signal`, `n_tokens` and `pii_*`
    counts (NULL where a version has no such column). A version whose files changed since
    it was registered is refused, as every catalog query refuses it."""
    for version in versions:
        check_unchanged(version, storage_options)
    urls = [url for version in versions for url in version.meta_urls() + added_urls(version)]
    urls += [url for lineage in lineages for url in lineage.urls]
    connection = sandbox(urls, storage_options)
    kinds = pii_columns(versions)
    selects = [_version_select(version, kinds) for version in versions]
    connection.execute(f"CREATE VIEW all_documents AS {' UNION ALL '.join(selects)}")
    return connection


def _version_select(version: DatasetVersion, kinds: Sequence[str]) -> str:
    schema = version.schema
    view = documents_view(
        version.meta_urls(), schema, {}, not version.uniform, version.added_sources()
    )
    columns = [
        f"{quote_literal(version.ref)} AS dataset",
        f"{SHARD_COLUMN} AS shard",
        f"{ROW_COLUMN} AS row",
        "CAST(id AS VARCHAR) AS id",
        f"{property_sql('source', 'source' in schema, 'unknown')} AS source",
        f"{_nullable('url', schema)} AS url",
        f"{_nullable('license', schema)} AS license",
        f"{_nullable('language', schema)} AS language",
        (
            "CAST(opt_out AS BOOLEAN) AS opt_out"
            if "opt_out" in schema
            else "CAST(NULL AS BOOLEAN) AS opt_out"
        ),
        f"{_nullable('opt_out_signal', schema)} AS opt_out_signal",
        "CAST(n_tokens AS BIGINT) AS n_tokens",
    ]
    for kind in kinds:
        name = f"pii_{kind}"
        value = quote_name(name) if name in schema else "NULL"
        columns.append(f"CAST({value} AS BIGINT) AS {quote_name(name)}")
    return f"SELECT {', '.join(columns)} FROM ({view})"


def _nullable(column: str, schema: dict[str, str]) -> str:
    if column not in schema:
        return "CAST(NULL AS VARCHAR)"
    return f"CAST({quote_name(column)} AS VARCHAR)"


def read_lineage(
    connection: duckdb.DuckDBPyConnection, lineages: Sequence[VersionLineage]
) -> Lineage:
    """Steps, removals by stage and reason, opt-outs excluded by signal, documents the pii
    stage dropped by kind, takedowns, and the pii stage's mode, over every version's whole
    lineage. Reasons come from each step's `_stats.json` (quarantined and errored records
    keep only their error in their files); a step without one is counted from its files."""
    steps, removals, opt_outs, taken_down = [], [], [], []
    modes: dict[str, str] = {}
    dropped: dict[str, int] = {}
    for lineage in lineages:
        ref = lineage.version.ref
        for item in lineage.steps:
            step = item.step
            steps.append(_step(ref, step, item.stats))
            taken_down += takedowns(step.manifest, ref, step.folder)
            options = stage_options(step.manifest, "pii")
            if options is not None and ref not in modes:  # the nearest pii stage counted
                modes[ref] = str(options.get("mode", "redact"))
            for outcome, table in STATS_TABLES.items():
                counts = item.stats.get(table)
                if counts is None and item.files.get(outcome):
                    counts = _counted(connection, item.files[outcome], outcome, step.folder)
                removals += [
                    Removal(ref, step.folder, outcome, str(stage), str(reason), int(n))
                    for stage, reasons in sorted((counts or {}).items())
                    for reason, n in sorted(reasons.items())
                ]
            if item.files.get("excluded"):
                source = parquet_source(item.files["excluded"])
                opt_outs += [
                    OptOut(ref, str(signal), "excluded", int(n))
                    for signal, n in _query(
                        connection,
                        "SELECT coalesce(json_extract_string(detail, '$.signal'), 'unknown'), "
                        f"count(*) FROM {source} WHERE stage = 'opt_out' GROUP BY 1 ORDER BY 1",
                        step.folder,
                    )
                ]
                for kind, n in _query(
                    connection,
                    "SELECT kind, count(*) FROM (SELECT unnest(json_keys(detail)) AS kind "
                    f"FROM {source} WHERE stage = 'pii' AND reason = 'contains_pii') "
                    "GROUP BY 1",
                    step.folder,
                ):
                    dropped[kind] = dropped.get(kind, 0) + int(n)
    return Lineage(
        tuple(steps), tuple(removals), tuple(opt_outs), tuple(taken_down), modes, dropped
    )


def _counted(
    connection: duckdb.DuckDBPyConnection, urls: list[str], outcome: str, folder: str
) -> dict[str, dict[str, int]]:
    """Removed records by stage and reason, from their files: excluded ones keep their
    reason; quarantined and errored ones only their error, whose type (before the first
    colon) stands for it."""
    reason = "reason" if outcome == "excluded" else "trim(split_part(error, ':', 1))"
    counts: dict[str, dict[str, int]] = {}
    for stage, why, n in _query(
        connection,
        f"SELECT stage, {reason}, count(*) FROM {parquet_source(urls)} GROUP BY ALL",
        folder,
    ):
        counts.setdefault(str(stage), {})[str(why)] = int(n)
    return counts


def _query(connection: duckdb.DuckDBPyConnection, query: str, folder: str) -> list[tuple]:
    try:
        return connection.execute(query).fetchall()
    except duckdb.Error as error:
        message = str(error).splitlines()[0]
        raise InputError(
            f"{folder}: its removed records could not be read ({message}); "
            f"`mixplane lineage {folder} --verify` checks its files"
        ) from error


def _step(ref: str, step: LineageStep, stats: dict[str, Any]) -> Step:
    stats = stats or step.manifest.get("stats") or {}

    def number(*keys: str) -> int | None:
        for key in keys:
            if isinstance(stats.get(key), int):
                return int(stats[key])
        return None

    return Step(
        dataset=ref,
        folder=step.folder,
        kind=step.kind,
        created_at=step.manifest.get("created_at"),
        documents_in=number("documents_in"),
        kept=number("kept", "documents"),
        excluded=number("excluded"),
        quarantined=number("quarantined"),
    )
