"""`mixplane annotate`: score a registered version with a classifier, as a new version."""

from __future__ import annotations

import typer

from mixplane.cli.common import (
    JSON_OPTION,
    STORAGE_OPTION,
    console,
    print_json,
    progress,
    storage_options,
)


def register(app: typer.Typer) -> None:
    app.command("annotate")(annotate)


def annotate(
    dataset: str = typer.Argument(..., help="The version to score: NAME@N, or NAME (latest)."),
    classifier: str = typer.Option(
        ..., "--classifier", help="Model folder (`mixplane classifier train` or `import`)."
    ),
    column: str = typer.Option(..., "--as", help="Name of the new property column."),
    label: str | None = typer.Option(
        None, "--label", help="Label whose probability is the score (default: the positive one)."
    ),
    catalog: str = typer.Option("catalog.duckdb", "--catalog", "-c", help="Catalog file."),
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Folder for the column's files (default: _columns/NAME-HASH in the dataset's folder).",
        show_default=False,
    ),
    text: str = typer.Option(
        "auto",
        "--text",
        help="Text from the files the version was tokenized from (parts), from its tokens "
        "decoded (tokens), or parts while they are there and unchanged, else tokens (auto).",
    ),
    batch_size: int = typer.Option(1024, "--batch-size", help="Documents per classifier call."),
    workers: int = typer.Option(1, "--workers", "-w", help="Tasks scored side by side."),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Score every document of DATASET with a classifier and register the scores as a new
    version's column: the same token files (referenced, not copied), one property more.

    Then `mixplane query "quality >= 0.8" -d web@2` and mixtures select by it, and
    `mixplane lineage web@2` shows the classifier, its model hash and the version scored.

    Example: mixplane annotate web@1 --classifier models/quality --as quality
    """
    from mixplane.annotate import AnnotateConfig, plan_annotation, run_annotation

    config = AnnotateConfig.parse(
        {
            "dataset": dataset,
            "classifier": classifier,
            "as": column,
            "label": label,
            "catalog": catalog,
            "output": output,
            "text": text,
            "batch_size": batch_size,
            "workers": workers,
            "storage_options": storage_options(storage),
        }
    )
    annotation = plan_annotation(config)  # every refusal comes before the progress bar
    with progress(as_json) as bar:
        total = sum(task.documents for task in annotation.tasks)
        handle = bar.add_task(f"scoring ({annotation.text.kind})", total=total)
        result = run_annotation(
            annotation, on_done=lambda done: bar.advance(handle, done["documents"])
        )
    if as_json:
        print_json(result.summary())
        return
    verb = "annotated" if result.created else "unchanged, already registered as"
    console.print(
        f"{verb} [bold]{result.version.ref}[/]: {result.source.ref} with the column "
        f"[bold]{result.column.name}[/] ({result.documents:,} documents scored in "
        f"{result.seconds:.1f}s; text {result.text['reason']})",
        highlight=False,
    )
    console.print(
        f"wrote {result.written_bytes:,} bytes to {result.column.folder}; the "
        f"{result.shared_bytes:,} bytes of its shards are shared, not copied",
        highlight=False,
    )
