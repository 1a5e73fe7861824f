"""`mixplane demo`: the whole journey on a synthetic corpus."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from mixplane.cli.common import JSON_OPTION, console, print_json


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    work: Path | None = typer.Argument(
        None, help="Work folder to keep every step's output in (default: a temporary folder)."
    ),
    docs: int = typer.Option(3000, "--docs", min=100, help="Documents in the synthetic corpus."),
    seed: int = typer.Option(7, "--seed", help="Seed of the corpus."),
    workers: int = typer.Option(2, "--workers", "-w", min=1, help="Parallel tasks and loaders."),
    batches: int = typer.Option(300, "--batches", min=1, help="Batches to stream at the end."),
    images: int = typer.Option(
        600, "--images", min=0, help="Image-caption samples for the image-text journey (0: none)."
    ),
    audio: int = typer.Option(
        120,
        "--audio",
        min=0,
        help="Spoken clips for the audio-text journey (0: none; needs espeak-ng: "
        "make audio-tools).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Synthesize a corpus, clean and deduplicate it, tokenize, catalog, query, and stream a
    declared mixture through a PyTorch DataLoader, printing what each step did; then the
    same journey for image-caption data and for spoken clips."""
    from mixplane.demo import run_demo

    def show(name: str, out: dict[str, Any]) -> None:
        if not as_json:
            SHOW[name](out)

    if work is None:
        with tempfile.TemporaryDirectory(prefix="mixplane-demo-") as folder:
            report = run_demo(folder, docs, seed, workers, batches, show, images, audio)
    else:
        report = run_demo(work, docs, seed, workers, batches, show, images, audio)
        if not as_json:
            console.print(f"every step's files are in {work}/ (pipeline.yaml, mixture.yaml...)")
            console.print(
                f"browse them in the dashboard: mixplane serve --catalog {work}/catalog.duckdb"
                "  (then open http://127.0.0.1:8000/)"
            )
    if as_json:
        print_json(report)


def _synth(out: dict[str, Any]) -> None:
    sources = ", ".join(f"{name} {n:,}" for name, n in out["sources"].items())
    _title("1. synth", out, f"{out['documents']:,} raw documents: {sources}")


def _process(out: dict[str, Any], step: str = "2. process") -> None:
    _title(
        step,
        out,
        f"{out['documents_in']:,} in, {out['kept']:,} kept, {out['excluded']:,} excluded, "
        f"{out['quarantined']:,} quarantined",
    )
    table = Table("stage", "reason", "documents", box=None, padding=(0, 2))
    for stage, reasons in out["excluded_by"].items():
        for reason, n in reasons.items():
            table.add_row(stage, reason, f"{n:,}")
    for stage, reasons in out.get("quarantined_by", {}).items():
        for reason, n in reasons.items():
            table.add_row(stage, f"{reason} (quarantined)", f"{n:,}")
    console.print(table)


def _tokenizer(out: dict[str, Any]) -> None:
    _title("3. tokenizer", out, f"byte-level BPE, {out['vocab_size']:,} tokens")


def _tokenize(out: dict[str, Any]) -> None:
    _title("4. tokenize", out, f"{out['documents']:,} documents, {out['tokens']:,} tokens")


def _catalog(out: dict[str, Any]) -> None:
    _title("5. catalog", out, f"registered {out['dataset']}")
    table = Table("query", "where", "documents", "tokens", box=None, padding=(0, 2))
    for title, q in out["queries"].items():
        table.add_row(title, q["where"], f"{q['documents']:,}", f"{q['tokens']:,}")
    console.print(table)


def _mix(out: dict[str, Any]) -> None:
    _title(
        "6. mix + load",
        out,
        f"{out['batches']} batches, {out['tokens']:,} tokens through a DataLoader with workers; "
        f"first batch {out['seconds_to_first_batch']:.2f}s, "
        f"{out['sequences_per_second']:,.0f} sequences/s",
    )
    _components(out, "sequences")


def _report(out: dict[str, Any]) -> None:
    _title(
        "   report",
        out,
        f"{out['documents']:,} documents under {out['licenses']} licence values, "
        f"{out['removed']:,} removed in lineage: {out['html']}, attribution in {out['csv']}",
    )


def _image_synth(out: dict[str, Any]) -> None:
    sources = ", ".join(f"{name} {n:,}" for name, n in out["sources"].items())
    planted = ", ".join(
        f"{kind} {n:,}" for kind, n in out["kinds"].items() if kind != "original" and n
    )
    _title("7. image synth", out, f"{out['samples']:,} image-caption samples: {sources}")
    console.print(f"  planted: {planted}")


def _image_process(out: dict[str, Any]) -> None:
    _process(out, "8. image process")
    dedup = out["dedup"]
    console.print(
        f"  pHash dedup against the ground truth: recall {dedup['recall']:.3f}, "
        f"false removals {dedup['false_removal_rate']:.2%}"
    )


def _image_catalog(out: dict[str, Any]) -> None:
    _title("9. image catalog", out, f"registered {out['dataset']}")
    table = Table("query", "where", "samples", box=None, padding=(0, 2))
    for title, q in out["queries"].items():
        table.add_row(title, q["where"], f"{q['samples']:,}")
    console.print(table)


def _image_mix(out: dict[str, Any]) -> None:
    _title(
        "10. image-text mix + load",
        out,
        f"{out['batches']} batches of {tuple(out['batch_shape'])} images with tokenized "
        f"captions through a DataLoader with workers, {out['images_per_second']:,.0f} images/s",
    )
    _components(out, "images")


def _audio_synth(out: dict[str, Any]) -> None:
    planted = ", ".join(
        f"{kind} {n:,}" for kind, n in out["kinds"].items() if kind != "original" and n
    )
    _title("11. audio synth", out, f"{out['clips']:,} spoken clips (espeak-ng), planted: {planted}")


def _audio_process(out: dict[str, Any]) -> None:
    _process(out, "12. audio process")
    dedup = out["dedup"]
    console.print(
        f"  acoustic dedup against the ground truth: recall {dedup['recall']:.3f} of "
        f"{dedup['planted_copies']} planted copies, {dedup['false_removals']} other clips removed"
    )


def _audio_catalog(out: dict[str, Any]) -> None:
    _title("13. audio catalog", out, f"registered {out['dataset']}")
    table = Table("query", "where", "clips", box=None, padding=(0, 2))
    for title, q in out["queries"].items():
        table.add_row(title, q["where"], f"{q['clips']:,}")
    console.print(table)


def _audio_mix(out: dict[str, Any]) -> None:
    _title(
        "14. audio-text mix + load",
        out,
        f"{out['batches']} batches by duration ({out['clips']} clips, {out['audio_seconds']} s "
        f"of audio, {out['padding']:.1%} padding) through a DataLoader with workers, "
        f"{out['clips_per_second']:,.0f} clips/s",
    )
    _components(out, "audio ms")


def _components(out: dict[str, Any], unit: str) -> None:
    """The requested and realized share of each component of a streamed mixture."""
    table = Table("component", "requested", "realized", unit, box=None, padding=(0, 2))
    for name, c in out["components"].items():
        table.add_row(name, f"{c['requested']:.3f}", f"{c['realized']:.3f}", f"{c[unit]:,}")
    console.print(table)


def _title(step: str, out: dict[str, Any], text: str) -> None:
    console.print(f"[bold cyan]{step}[/] [dim]({out['seconds']:.1f}s)[/] {text}")


SHOW = {
    "synth": _synth,
    "process": _process,
    "tokenizer": _tokenizer,
    "tokenize": _tokenize,
    "catalog": _catalog,
    "mix": _mix,
    "report": _report,
    "image_synth": _image_synth,
    "image_process": _image_process,
    "image_catalog": _image_catalog,
    "image_mix": _image_mix,
    "audio_synth": _audio_synth,
    "audio_process": _audio_process,
    "audio_catalog": _audio_catalog,
    "audio_mix": _audio_mix,
}
