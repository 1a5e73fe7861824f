"""`mixplane synth`: write a synthetic multi-source raw corpus with its ground truth."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from mixplane.cli.common import JSON_OPTION, console, print_json, progress

if TYPE_CHECKING:
    from mixplane.synth import SynthSummary


def register(app: typer.Typer) -> None:
    app.command("synth")(synth)


def synth(
    out: str = typer.Argument(..., help="Output folder (raw/ and truth/ are written in it)."),
    docs: int = typer.Option(10_000, "--docs", "-n", min=0, help="Number of documents."),
    seed: int = typer.Option(0, "--seed", "-s", help="Random seed; same seed, same bytes."),
    faults: bool = typer.Option(
        False, "--faults", help="Also write broken files (bad JSON, truncated archives...)."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing raw/ and truth/ under OUT."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Generate web (WARC and HTML), wiki, code and forum files in several languages, with
    planted duplicates, spam, low-quality pages and PII, and their ground truth in truth/.

    Point the pipeline at OUT/raw so record ids match truth/duplicates.jsonl.
    """
    started = time.perf_counter()
    with progress(quiet=as_json) as bar:
        handle = bar.add_task("generating", total=docs)
        from mixplane.synth import generate_corpus

        summary = generate_corpus(
            out,
            docs,
            seed,
            faults,
            overwrite=overwrite,
            on_progress=lambda done: bar.update(handle, completed=done),
        )
    seconds = time.perf_counter() - started
    if as_json:
        print_json({"out": out, "seconds": round(seconds, 3), **summary.to_dict()})
    else:
        print_summary(out, summary, seconds)


def print_summary(out: str, summary: SynthSummary, seconds: float) -> None:
    table = Table(title=f"{summary.documents:,} documents in {seconds:.1f}s", title_justify="left")
    table.add_column("source")
    table.add_column("documents", justify="right")
    table.add_column("files", justify="right")
    table.add_column("kinds")
    for source, info in summary.sources.items():
        kinds = summary.kinds_by_source.get(source, {})
        described = ", ".join(f"{kind} {n:,}" for kind, n in kinds.items())
        table.add_row(source, f"{info['documents']:,}", f"{len(info['files']):,}", described)
    console.print(table)
    languages = ", ".join(f"{code} {n:,}" for code, n in summary.languages.items())
    console.print(f"languages: {languages}")
    dupes = summary.duplicates
    console.print(f"duplicate pairs: {dupes['exact']:,} exact, {dupes['near']:,} near")
    if summary.faults:
        console.print(f"fault files: {summary.faults['bad_records']} bad records planted")
    console.print(f"ground truth: {out.rstrip('/')}/truth/  (ids relative to {out}/raw)")
