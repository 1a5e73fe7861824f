"""`mixplane classifier train`: train a fastText quality classifier into a model folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from mixplane.cli.common import JSON_OPTION, STORAGE_OPTION, console, print_json, storage_options
from mixplane.errors import ConfigError

classifier_app = typer.Typer(
    help="Learned quality classifiers for the classify stage: train one, or import one."
)


def register(app: typer.Typer) -> None:
    app.add_typer(classifier_app, name="classifier")


@classifier_app.command("train")
def train(
    config: Path | None = typer.Argument(
        None, help="Training YAML (output, positive, negative, ...).", show_default=False
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Model folder to create.", show_default=False
    ),
    positive: str | None = typer.Option(
        None,
        "--positive",
        help="Positive examples: a catalog predicate with --catalog, else files, a glob or a "
        "folder (JSON Lines / Parquet).",
        show_default=False,
    ),
    negative: str | None = typer.Option(
        None, "--negative", help="Negative examples, as --positive.", show_default=False
    ),
    catalog: str | None = typer.Option(
        None, "--catalog", "-c", help="Catalog file the predicates run against.", show_default=False
    ),
    max_per_class: int | None = typer.Option(
        None, "--max-per-class", min=1, help="Examples per class at most.", show_default=False
    ),
    holdout: float | None = typer.Option(
        None,
        "--holdout",
        help="Share of each class held out for metrics (0.1).",
        show_default=False,
    ),
    seed: int | None = typer.Option(None, "--seed", help="Seed (0).", show_default=False),
    text_key: str | None = typer.Option(
        None, "--text-key", help="Field holding the text in files (text).", show_default=False
    ),
    epoch: int | None = typer.Option(
        None, "--epoch", help="fastText epochs (5).", show_default=False
    ),
    dim: int | None = typer.Option(None, "--dim", help="Vector size (100).", show_default=False),
    word_ngrams: int | None = typer.Option(
        None, "--word-ngrams", help="Word n-gram length (2).", show_default=False
    ),
    bucket: int | None = typer.Option(
        None, "--bucket", help="Hash buckets for n-grams (2000000).", show_default=False
    ),
    threads: int | None = typer.Option(
        None,
        "--threads",
        help="Training threads; 1 (the default) is deterministic.",
        show_default=False,
    ),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Train a fastText classifier telling positive from negative documents (the DCLM recipe).

    Both classes are sampled to the same size (seeded), a share is held out, and the
    held-out precision, recall, F1 and AUC are printed and stored in the model folder's
    classifier.json with the model's hash. With one thread (the default) the same data, options
    and seed give a byte-identical model. Apply it with the classify stage of a pipeline.
    """
    from mixplane.classify import TrainConfig, train_fasttext

    overrides: dict[str, Any] = {
        "output": output,
        "positive": positive,
        "negative": negative,
        "catalog": catalog,
        "max_per_class": max_per_class,
        "holdout": holdout,
        "seed": seed,
        "text_key": text_key,
        "epoch": epoch,
        "dim": dim,
        "word_ngrams": word_ngrams,
        "bucket": bucket,
        "threads": threads,
        "storage_options": storage_options(storage) or None,
    }
    if config is not None:
        settings = TrainConfig.from_yaml(config, **overrides)
    elif output and positive and negative:
        settings = TrainConfig.parse({k: v for k, v in overrides.items() if v is not None})
    else:
        raise ConfigError("give a training YAML, or --output, --positive and --negative")
    result = train_fasttext(settings)
    description = result.description
    if as_json:
        print_json(
            {
                "model": result.folder,
                "model_sha256": description["model_sha256"],
                "data": description["data"],
                "metrics": result.metrics,
            }
        )
        return
    data = description["data"]
    console.print(
        f"trained {result.folder}: {data['train_per_class']:,} examples per class, "
        f"{data['held_out_per_class']:,} held out; model sha256 {description['model_sha256'][:16]}"
    )
    metrics = result.metrics
    if metrics is None:
        console.print("no examples held out (holdout 0): no metrics")
        return
    table = Table("held-out metric", "value", title_justify="left")
    for name in ("precision", "recall", "f1", "accuracy", "auc"):
        value = metrics[name]
        table.add_row(name, "n/a" if value is None else f"{value:.4f}")
    console.print(table)


@classifier_app.command("import")
def import_model(
    model_file: Path = typer.Argument(..., help="A supervised fastText model (.bin)."),
    output: str = typer.Option(..., "--output", "-o", help="Model folder to create."),
    positive_label: str = typer.Option(
        ..., "--positive-label", help="The label classify scores by default (without __label__)."
    ),
    lowercase: bool = typer.Option(
        False,
        "--lowercase/--no-lowercase",
        help="Whether the model was trained on lowercased text.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Make a model folder from a fastText model trained elsewhere (DCLM's, say), on disk.

    The file is copied beside a classifier.json recording its labels, the label to score, the
    text preprocessing and its SHA-256, so the classify stage can use and check it.
    """
    from mixplane.classify import import_fasttext

    description = import_fasttext(model_file, output, positive_label, lowercase)
    if as_json:
        print_json({"model": output, **description})
        return
    console.print(
        f"{output}: labels {', '.join(description['labels'])}, scoring {positive_label}; "
        f"model sha256 {description['model_sha256'][:16]}"
    )
