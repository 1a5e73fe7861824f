"""`mixplane classifier train`: train a quality classifier (fastText, or a linear head on a
frozen encoder) into a model folder; `mixplane classifier import`: wrap a fastText model."""

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
        None,
        help="Training YAML (output, positive, negative, ...; kind: embedding for a head on an "
        "encoder).",
        show_default=False,
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
    encoder: str | None = typer.Option(
        None,
        "--encoder",
        help="Train a linear head on this frozen encoder folder's embeddings (kind: embedding).",
        show_default=False,
    ),
    documents: str | None = typer.Option(
        None,
        "--documents",
        help="With --encoder: labelled documents (as --positive), each label in --label-key.",
        show_default=False,
    ),
    labels: str | None = typer.Option(
        None,
        "--labels",
        help="With --documents: a file of (id, label) rows, JSON Lines / CSV / Parquet.",
        show_default=False,
    ),
    label_key: str | None = typer.Option(
        None,
        "--label-key",
        help="The field holding each label: in --labels, else in the documents.",
        show_default=False,
    ),
    head: str | None = typer.Option(
        None,
        "--head",
        help="regression (scores; the default with --documents) or classification.",
        show_default=False,
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        help="With --encoder: the cut for held-out precision/recall/F1 (regression 3, "
        "classification 0.5).",
        show_default=False,
    ),
    max_examples: int | None = typer.Option(
        None,
        "--max-examples",
        min=1,
        help="With --documents: at most this many.",
        show_default=False,
    ),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Train a classifier: fastText telling positive from negative documents (the DCLM
    recipe), or with --encoder a linear head on a frozen encoder's embeddings fitted to
    scores or classes (the FineWeb-Edu recipe).

    The examples are sampled (seeded), a share is held out, and the held-out metrics
    (precision, recall, F1, AUC; MSE and MAE for scores) are printed and stored in the model
    folder's classifier.json with the model's hash. The same data, options and seed give a
    byte-identical model (fastText with one thread, the default). Apply it with the classify
    stage of a pipeline.
    """
    from mixplane.classify import train_classifier
    from mixplane.classify.kinds import as_config

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
        "encoder": encoder,
        "documents": documents,
        "labels": labels,
        "label_key": label_key,
        "head": head,
        "threshold": threshold,
        "max_examples": max_examples,
        "kind": "embedding" if encoder else None,
        "storage_options": storage_options(storage) or None,
    }
    if config is not None:
        settings = as_config(config, **overrides)
    elif output and (documents or (positive and negative)):
        settings = as_config({k: v for k, v in overrides.items() if v is not None})
    else:
        raise ConfigError(
            "give a training YAML, or --output, --positive and --negative (with --encoder, "
            "--documents instead of the two classes for labelled documents)"
        )
    result = train_classifier(settings)
    if result.description["kind"] == "embedding":
        _report_embedding(result, as_json)
        return
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


def _report_embedding(result: Any, as_json: bool) -> None:
    description, data = result.description, result.description["data"]
    encoder = description["encoder"]
    if as_json:
        print_json(
            {
                "model": result.folder,
                "model_sha256": description["model_sha256"],
                "encoder": encoder["path"],
                "encoder_sha256": encoder["folder_sha256"],
                "head": description["head"],
                "data": data,
                "metrics": result.metrics,
            }
        )
        return
    console.print(
        f"trained {result.folder}: a {description['head']} head on {encoder['path']} "
        f"({encoder['dim']} dimensions), {data['train']:,} examples, {data['held_out']:,} held "
        f"out; head sha256 {description['model_sha256'][:16]}"
    )
    metrics = result.metrics
    if metrics is None:
        console.print("no examples held out (holdout 0): no metrics")
        return
    names = ["precision", "recall", "f1", "accuracy", "auc"]
    if description["head"] == "regression":
        names = ["mse", "mae", *names]
    table = Table(f"held-out metric (threshold {metrics['threshold']:g})", "value")
    for name in names:
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
