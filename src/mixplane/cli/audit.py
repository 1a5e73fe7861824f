"""`mixplane audit`: which recorded training runs read a dataset version, or a document."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from mixplane.cli.common import JSON_OPTION, console, print_json
from mixplane.errors import ConfigError

DEFAULT_CATALOG = "catalog.duckdb"  # the same default as mixplane.catalog.Catalog
VERSION = re.compile(r"^[^@\s]+@\d+$")


def register(application: typer.Typer) -> None:
    application.command("audit")(audit_command)


def audit_command(
    version: str | None = typer.Argument(
        None, help="A dataset version NAME@N: list the runs that read it."
    ),
    catalog: str = typer.Option(
        DEFAULT_CATALOG, "--catalog", "-c", help="The catalog whose audit trail to read."
    ),
    all_runs: bool = typer.Option(False, "--runs", help="List every recorded run."),
    document: str | None = typer.Option(
        None, "--document", help="A document id: whether and where recorded runs read it."
    ),
    dataset: str | None = typer.Option(
        None, "--dataset", help="With --document: the version NAME@N that holds it."
    ),
    run: str | None = typer.Option(None, "--run", help="With --document: only this run."),
    weight_log: Path | None = typer.Option(
        None,
        "--weight-log",
        help="With --document: an adaptive run's weight log, where the trail lacks it.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """The audit trail of the catalog: the runs that read dataset version NAME@N (run id,
    first and last time, hosts, world size, mixture fingerprint, how far it read, stopped or
    not), every run (--runs), or whether and where runs read a document (--document ID):
    each sequence that held its tokens, with step, rank, position and the tokens taken."""
    chosen = [bool(version), all_runs, document is not None]
    if sum(chosen) != 1:
        raise ConfigError("give one of: a dataset version NAME@N, --runs, or --document ID")
    for ref in (version, dataset):
        if ref is not None and not VERSION.match(ref):
            raise ConfigError(f"{ref!r}: expected a dataset version NAME@N, such as web@3")
    if document is not None:
        _document(catalog, document, dataset, run, weight_log, as_json)
        return
    from mixplane.catalog.audit import runs

    found = runs(catalog)
    if version:
        from mixplane.catalog import Catalog

        Catalog(catalog).get(version)  # an unknown version is an error, not "no runs"
        found = [run for run in found if version in run.datasets]
    summaries = [run.summary() for run in found]
    if as_json:
        print_json(summaries)
    else:
        print_runs(summaries, version, catalog)


def _document(
    catalog: str,
    document: str,
    dataset: str | None,
    run: str | None,
    weight_log: Path | None,
    as_json: bool,
) -> None:
    from mixplane.load.adaptive.weight_log import read_weight_log
    from mixplane.load.tools.document_audit import document_reads

    changes = read_weight_log(weight_log) if weight_log is not None else None
    report = document_reads(catalog, document, dataset, weight_log=changes, run=run)
    if as_json:
        print_json(report)
    else:
        print_document(report)


def print_runs(summaries: list[dict[str, Any]], version: str | None, catalog: str) -> None:
    if not summaries:
        what = f"read {version}" if version else "recorded"
        console.print(f"no run {what} in the audit trail of {catalog}", highlight=False)
        return
    title = f"runs that read {version}" if version else "recorded runs"
    table = Table(title=title, title_justify="left")
    for column in ("run", "first", "last", "hosts", "world size", "mixture", "read", "stopped"):
        table.add_column(column)
    for run in summaries:
        consumed = run["consumed"]
        table.add_row(
            run["run"],
            run["first"],
            run["last"],
            ", ".join(run["hosts"]),
            str(run["world_size"]),
            ", ".join(mixture[:12] for mixture in run["mixtures"]),
            "?" if consumed is None else f"{consumed:,}",
            "yes" if run["stopped"] else "no",
        )
    console.print(table)


def print_document(report: dict[str, Any]) -> None:
    document = report["document"]
    if not report["versions"]:
        console.print(
            "no run is recorded in this catalog's audit trail, so none read it (give "
            "--dataset NAME@V to find where the document is)",
            highlight=False,
        )
        return
    if not report["places"]:
        console.print(
            f"{document}: in none of the versions searched ({', '.join(report['versions'])})",
            highlight=False,
        )
        return
    where = ", ".join(f"{p['dataset']} ({p['shard']} #{p['document']})" for p in report["places"])
    console.print(f"{document}: in {where}", highlight=False)
    if not report["runs"]:
        console.print("no recorded run read these versions", highlight=False)
    for run in report["runs"]:
        consumed = run["consumed"]
        reach = "how far unknown" if consumed is None else f"read up to position {consumed:,}"
        console.print(
            f"run {run['run']}: {run['status']} ({reach}, {run['world_size']} ranks)",
            highlight=False,
        )
        if run["note"]:
            console.print(f"  {run['note']}", highlight=False)
        if run["reads"]:
            table = Table()
            for column in ("position", "step", "rank", "component", "dataset", "tokens"):
                table.add_column(column)
            for read in run["reads"]:
                tokens = read.get("tokens")  # none for an image-text sample: read whole
                taken = "whole sample" if tokens is None else f"{tokens[0]}-{tokens[1]}"
                table.add_row(
                    str(read["position"]),
                    "" if read["step"] is None else str(read["step"]),
                    "" if read["rank"] is None else str(read["rank"]),
                    read["component"],
                    read["dataset"],
                    taken + (" +eos" if read.get("eos") else ""),
                )
            console.print(table)


__all__ = ["audit_command", "register"]
