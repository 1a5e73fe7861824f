"""`mixplane report`: what a dataset version holds and what its lineage removed, or what a
mixture's first steps read, as tables, JSON, a self-contained HTML page and a CSV
attribution list."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from mixplane.cli.common import JSON_OPTION, STORAGE_OPTION, console, print_json, storage_options

if TYPE_CHECKING:
    from mixplane.report import Report

MIXTURE_SUFFIXES = (".yaml", ".yml")


def register(application: typer.Typer) -> None:
    application.command("report")(report_command)


def report_command(
    target: str = typer.Argument(
        ..., help="A dataset version (NAME@N, or NAME for the latest) or a mixture YAML."
    ),
    catalog: str | None = typer.Option(
        None,
        "--catalog",
        "-c",
        help="Catalog file (DuckDB); default catalog.duckdb, or the mixture's own.",
    ),
    html: str | None = typer.Option(None, "--html", help="Write the report as one HTML file."),
    csv: str | None = typer.Option(
        None, "--csv", help="Write the attribution list (url, licence, source...) as CSV."
    ),
    steps: int | None = typer.Option(
        None, "--steps", help="A mixture: report what its first N training steps read."
    ),
    world_size: int = typer.Option(1, "--world-size", help="A mixture: ranks of the run."),
    batch_size: int | None = typer.Option(
        None,
        "--batch-size",
        help="A mixture: sequences per rank per micro-batch (needed without global_batch_size); "
        "documents per rank per step for packing: none without bucketing.",
    ),
    weight_log: Path | None = typer.Option(
        None, "--weight-log", help="A mixture's weight log (JSON Lines): needed when it adapted."
    ),
    top: int = typer.Option(20, "--top", min=1, help="Domains listed before the rest is 'other'."),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Documents and tokens by licence, source, domain and language; personal data found and
    redacted; exclusions, dedup, opt-outs and takedowns over the data's whole lineage. For a
    mixture, the same over what its first --steps steps read, each document counted by the
    tokens taken from it."""
    from mixplane.errors import ConfigError
    from mixplane.io.atomic import write_bytes
    from mixplane.report import report_dataset, report_mixture
    from mixplane.report.html import render_html

    options = storage_options(storage)
    if target.endswith(MIXTURE_SUFFIXES) or Path(target).is_file():
        if steps is None:
            raise ConfigError(
                f"{target}: a mixture's report covers its first steps: give --steps N"
            )
        from mixplane.load.adaptive.weight_log import read_weight_log

        report = report_mixture(
            target,
            steps,
            world_size=world_size,
            batch_size=batch_size,
            catalog=catalog,
            weight_log=read_weight_log(weight_log) if weight_log is not None else None,
            top=top,
            attribution=csv,
        )
    else:
        if steps is not None:
            raise ConfigError(f"{target}: --steps is for a mixture; a dataset is reported whole")
        from mixplane.catalog import Catalog

        report = report_dataset(
            Catalog(catalog or "catalog.duckdb", options), target, top=top, attribution=csv
        )
    if html:
        write_bytes(html, render_html(report).encode("utf-8"), options)
    if as_json:
        print_json(report.to_json())
    else:
        print_report(report)


def print_report(report: Report) -> None:
    console.print(
        f"[bold]{report.subject}[/bold]: {report.documents:,} documents, {report.tokens:,} tokens",
        highlight=False,
    )
    for breakdown in report.breakdowns:
        table = Table(title=f"by {breakdown.name}", title_justify="left")
        for column in (breakdown.name, "documents", "tokens"):
            table.add_column(column, justify="left" if column == breakdown.name else "right")
        for row in breakdown.rows:
            table.add_row(row.key, f"{row.documents:,}", f"{row.tokens:,}")
        console.print(table)
    rows = {
        "personal data (kind: documents, found, redacted, dropped)": [
            f"{k.kind}: {k.documents:,}, {k.found:,}, {k.redacted:,}, {k.dropped:,}"
            for k in report.pii
        ],
        "removed (dataset, stage, reason: documents)": [
            f"{r.dataset} {r.outcome} by {r.stage}, {r.reason}: {r.documents:,}"
            for r in report.removals
        ],
        "opt-outs (dataset, signal: documents)": [
            f"{o.dataset} {o.signal} ({o.outcome}): {o.documents:,}"
            for o in report.lineage.opt_outs
        ],
        "takedowns": [
            f"{t.dataset} {t.request} {t.reference or ''}: {t.documents:,} documents, "
            f"{t.tokens:,} tokens"
            for t in report.lineage.takedowns
        ],
    }
    for title, lines in rows.items():
        console.print(f"[bold]{title}[/bold]", highlight=False)
        for line in lines or ["none"]:
            console.print(f"  {line}", highlight=False)
