"""`mixplane mix preview` (what a mixture delivers over the first steps) and `mixplane mix
weights` (the weight trajectories of an adaptive run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.rule import Rule
from rich.table import Table

from mixplane.cli.common import JSON_OPTION, console, print_json

RULE_WIDTH = 100  # a rule between decoded sequences, however wide the output

mix_app = typer.Typer(help="Declarative data mixtures.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(mix_app, name="mix")


@mix_app.command("preview")
def preview(
    mixture: Path = typer.Argument(..., help="Mixture YAML (catalog, seq_len, components...)."),
    steps: int = typer.Option(1000, "--steps", "-n", min=1, help="Training steps to preview."),
    show: int = typer.Option(3, "--show", min=0, help="First sequences to decode."),
    weight_log: Path | None = typer.Option(
        None, "--weight-log", help="A run's weight log (JSON Lines): show what its stream held."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Requested vs realized token shares per component, epochs, and the first sequences."""
    from mixplane.load.adaptive.weight_log import read_weight_log
    from mixplane.load.tools.preview import preview_mixture

    changes = read_weight_log(weight_log) if weight_log is not None else None
    report = preview_mixture(mixture, steps=steps, show=show, weight_log=changes)
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
        title = f"sequence {sample['index']} · {sample['component']} · {pieces} piece(s)"
        console.print(Rule(title), width=min(console.width, RULE_WIDTH))
        if "text" in sample:
            text = sample["text"]
            console.print(text[:600] + ("…" if len(text) > 600 else ""), highlight=False)
        else:
            console.print(f"{sample['tokens']} … ({sample['text_unavailable']})", highlight=False)


@mix_app.command("weights")
def weights(
    log: Path = typer.Argument(..., help="Weight log (JSON Lines) of an adaptive run."),
    plot: Path | None = typer.Option(None, "--plot", help="Draw the trajectories to this image."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Each component's weight from each change on, and the loss the policy saw."""
    from mixplane.load.adaptive.weight_log import plot_weight_log, read_weight_log, trajectories

    changes = read_weight_log(log)
    found = trajectories(changes)
    if plot is not None:
        plot_weight_log(changes, plot)
    if as_json:
        print_json(found)
        return
    table = Table(title=f"{len(changes)} weight changes in {log}", title_justify="left")
    table.add_column("from step", justify="right")
    table.add_column("decided at", justify="right")
    for name in found["components"]:
        table.add_column(name, justify="right")
    for row, step in enumerate(found["steps"]):
        decided = found["decided_at"][row]
        cells = []
        for name in found["components"]:
            weight, loss = found["weights"][name][row], found["loss"][name][row]
            text = "" if weight is None else f"{weight:.3f}"
            cells.append(text + ("" if loss is None else f" ({loss:.3f})"))
        table.add_row(f"{step:,}", "" if decided is None else f"{decided:,}", *cells)
    console.print(table)
    console.print("weight (mean loss per token the policy saw)", style="dim")
    if plot is not None:
        console.print(f"plot written to {plot}")
