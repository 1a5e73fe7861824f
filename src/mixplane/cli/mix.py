"""`mixplane mix preview`: what a mixture delivers over the first steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from mixplane.cli.common import JSON_OPTION, console, print_json

mix_app = typer.Typer(help="Declarative data mixtures.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(mix_app, name="mix")


@mix_app.command("preview")
def preview(
    mixture: Path = typer.Argument(..., help="Mixture YAML (catalog, seq_len, components...)."),
    steps: int = typer.Option(1000, "--steps", "-n", min=1, help="Training steps to preview."),
    show: int = typer.Option(3, "--show", min=0, help="First sequences to decode."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Requested vs realized token shares per component, epochs, and the first sequences."""
    from mixplane.load.preview import preview_mixture

    report = preview_mixture(mixture, steps=steps, show=show)
    if as_json:
        print_json(report)
    else:
        print_report(report)


def print_report(report: dict[str, Any]) -> None:
    title = (
        f"{report['steps']:,} steps = {report['sequences']:,} sequences = "
        f"{report['tokens']:,} tokens"
    )
    if report["global_batch_size"] is None:
        title += " (no global_batch_size in the mixture: a step is one sequence)"
    table = Table(title=title, title_justify="left")
    for column in ("component", "documents", "tokens", "requested", "realized", "epochs"):
        table.add_column(column, justify="left" if column == "component" else "right")
    for c in report["components"]:
        cap = f" / {c['max_epochs']:g}" if c["max_epochs"] else ""
        table.add_row(
            c["name"],
            f"{c['documents']:,}",
            f"{c['tokens']:,}",
            f"{c['requested']:.4f}",
            f"{c['realized']:.4f}",
            f"{c['epochs']:.3f}{cap}",
        )
    console.print(table)
    if len(report["segments"]) > 1:
        for segment in report["segments"]:
            weights = ", ".join(f"{n}={w:.3f}" for n, w in segment["weights"].items())
            console.print(f"from sequence {segment['from_sequence']:,}: {weights}")
    if report["stream_ends_at"] is not None:
        console.print(f"the stream ends after {report['stream_ends_at']:,} sequences")
    for sample in report["samples"]:
        pieces = len(sample["pieces"])
        console.rule(f"sequence {sample['index']} · {sample['component']} · {pieces} piece(s)")
        if "text" in sample:
            text = sample["text"]
            console.print(text[:600] + ("…" if len(text) > 600 else ""), highlight=False)
        else:
            console.print(f"{sample['tokens']} … ({sample['text_unavailable']})", highlight=False)
