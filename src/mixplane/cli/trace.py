"""`mixplane trace`: what a training step held on a rank, down to each document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from mixplane.cli.common import JSON_OPTION, console, print_json


def register(application: typer.Typer) -> None:
    application.command("trace")(trace_command)


def trace_command(
    mixture: Path = typer.Argument(..., help="Mixture YAML (catalog, seq_len, components...)."),
    step: int | None = typer.Option(None, "--step", help="The training (optimizer) step."),
    index: int | None = typer.Option(None, "--index", help="One sequence, by global position."),
    rank: int = typer.Option(0, "--rank", help="The rank whose part of the step to show."),
    world_size: int = typer.Option(1, "--world-size", help="Ranks of the run."),
    batch_size: int | None = typer.Option(
        None,
        "--batch-size",
        help="Sequences per rank per micro-batch (needed without global_batch_size).",
    ),
    properties: str | None = typer.Option(
        None,
        "--properties",
        help="Metadata columns to show per document (added ones too), comma-separated.",
    ),
    weight_log: Path | None = typer.Option(
        None, "--weight-log", help="The run's weight log (JSON Lines): needed when it adapted."
    ),
    origin: bool = typer.Option(
        False, "--origin", help="Follow each document to its raw input file and byte range."
    ),
    max_sequences: int = typer.Option(
        4096, "--max-sequences", help="Refuse a step with more sequences than this."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """The sequences of a training step on a rank (or one sequence): each document's dataset
    version, id, the token range taken from it, source, url and properties."""
    from mixplane.load.adaptive.weight_log import read_weight_log
    from mixplane.load.tools.trace import trace
    from mixplane.mix.spec import load_mixture

    fields = {
        "step": step,
        "index": index,
        "rank": rank,
        "world_size": world_size,
        "batch_size": batch_size,
        "properties": [p.strip() for p in (properties or "").split(",") if p.strip()],
        "origin": origin,
        "max_sequences": max_sequences,
    }
    changes = read_weight_log(weight_log) if weight_log is not None else None
    origins = None
    if origin:  # lineage reads processing's parts: imported only when asked
        from mixplane.lineage import Origins

        origins = Origins(load_mixture(mixture).storage_options).find
    report = trace(mixture, fields, weight_log=changes, origins=origins)
    if as_json:
        print_json(report)
    else:
        print_trace(report)


def print_trace(report: dict[str, Any]) -> None:
    count, seq_len = len(report["sequences"]), report["seq_len"]
    unpacked = report.get("packing") == "none"
    if report["step"] is not None:
        title = f"step {report['step']:,}, rank {report['rank']} of {report['world_size']}: " + (
            f"a padded batch of {count} documents (each cut to {seq_len:,} tokens)"
            if unpacked
            else f"{count} sequences of {seq_len:,} tokens"
        )
    elif unpacked:
        title = f"document {report['index']:,} (cut to {seq_len:,} tokens)"
    else:
        title = f"sequence {report['index']:,} ({seq_len:,} tokens)"
    table = Table(title=title, title_justify="left")
    for column in ("sequence", "micro-batch", "component", "dataset", "document", "tokens"):
        table.add_column(column, justify="right" if column == "micro-batch" else "left")
    for name in ["source", *report["properties"]]:
        table.add_column(name)
    for sequence in report["sequences"]:
        for n, document in enumerate(sequence["documents"]):
            begin, end = document["tokens"]
            values = [document.get("source"), *document["properties"].values()]  # in order
            table.add_row(
                str(sequence["index"]) if n == 0 else "",
                str(sequence["micro_batch"]) if n == 0 else "",
                sequence["component"] if n == 0 else "",
                document["dataset"],
                document["id"],
                f"{begin}-{end}" + (" +eos" if document["eos"] else ""),
                *("" if v is None else str(v) for v in values),
            )
    console.print(table)
    for sequence in report["sequences"]:
        for document in sequence["documents"]:
            for found in document.get("origin") or []:
                place = found.get("input") or {}
                console.print(
                    f"{document['id']}: {place.get('url')} bytes {place.get('start')}.."
                    f"{place.get('end') if place.get('end') is not None else 'end'}",
                    highlight=False,
                )


__all__ = ["register", "trace_command"]
