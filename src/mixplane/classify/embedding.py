"""Training an embedding classifier, FineWeb-Edu style, into a model folder.

1. Examples: from `positive` and `negative` selections (classification, both classes
   sampled to the same size, as for fastText), or from `documents` whose label is a field of
   theirs or a row of the `labels` file with their id (see `labels.py`), at most
   `max_examples` of them (seeded, see `data.py`).
2. Held-out split, stratified: the examples are grouped by target rounded to an integer
   (the class, or the score 0-5); each group is shuffled (numpy, seeded) and its last
   `round(size * holdout)` examples are held out.
3. The frozen encoder embeds every example's text in one call (`embed_batch_size` texts a
   batch, longest first; see `stages.embed.encoder`).
4. A linear head is fitted to the training examples' embeddings (see `head_fit.py`).
5. The head scores the held-out examples, as the `classify` stage would: regression gives
   MSE, MAE, and precision / recall / F1 / AUC of `score >= threshold` against
   `target >= threshold`; classification gives precision / recall / F1 / accuracy at
   `threshold` (0.5) and AUC.
6. The folder is written beside its destination and renamed into place when complete:
   `head.safetensors` and `classifier.json` (see `stages.classify.embedding`). The encoder
   is referenced by its resolved path and its folder hash, not copied.

Example:
    >>> result = train_embedding({"kind": "embedding", "output": "models/edu",
    ...     "encoder": "models/minilm", "documents": "annotated/",
    ...     "labels": "scores.csv", "label_key": "score"})  # doctest: +SKIP
    >>> result.metrics["f1"]  # doctest: +SKIP
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from mixplane._version import __version__
from mixplane.classify.config import ClassData
from mixplane.classify.data import CatalogPool, Example, FilePool, Target
from mixplane.classify.embedding_config import EmbeddingTrainConfig
from mixplane.classify.folder import check_new_folder, staged_folder, write_description
from mixplane.classify.head_fit import HeadSettings, fit_head
from mixplane.classify.kinds import as_config
from mixplane.classify.labels import FileTarget, column_target, read_labels
from mixplane.classify.metrics import binary_metrics, regression_metrics
from mixplane.classify.train import TrainResult
from mixplane.errors import ConfigError, InputError
from mixplane.stages.classify.embedding import KIND
from mixplane.stages.classify.head import HEAD_FILE, head_bytes
from mixplane.stages.classify.model import FORMAT_VERSION, file_sha256
from mixplane.stages.embed.encoder import load_encoder, read_settings


def train_embedding(
    config: EmbeddingTrainConfig | dict[str, Any] | str | Path, **overrides: Any
) -> TrainResult:
    """Train a linear head on a frozen encoder from a config, a dict or a YAML path (see
    `EmbeddingTrainConfig`); `overrides` that are not None win.

    Example:
        >>> train_embedding("edu.yaml", seed=3).folder  # doctest: +SKIP
        'models/edu'
    """
    config = as_config(config, **overrides)
    if not isinstance(config, EmbeddingTrainConfig):
        raise ConfigError(f"kind {config.kind!r}: train_embedding trains kind 'embedding'")
    assert config.head is not None and config.threshold is not None  # set by the config
    output = Path(config.output)
    check_new_folder(output)  # before reading any data
    read_settings(config.encoder)  # a missing encoder folder, before reading any data
    examples, data = _examples(config)
    targets = np.array([example.target for example in examples], dtype=np.float64)
    train_rows, test_rows = holdout_split(targets, config.holdout, config.seed)
    data.update(examples=len(examples), train=len(train_rows), held_out=len(test_rows))
    encoder = load_encoder(config.encoder, threads=config.threads, max_length=config.max_length)
    embeddings = encoder.embed([example.text for example in examples], config.embed_batch_size)
    settings = HeadSettings(
        config.epoch, config.lr, config.batch_size, config.weight_decay, config.seed, config.threads
    )
    head = fit_head(embeddings[train_rows], targets[train_rows], config.head, settings)
    metrics = None
    if len(test_rows):
        truth, scores = targets[test_rows], head.scores(embeddings[test_rows])
        if config.head == "regression":
            metrics = regression_metrics(truth, scores, config.threshold)
        else:
            metrics = binary_metrics(truth.astype(bool), scores, config.threshold)
    classes = [config.positive_label, config.negative_label]
    with staged_folder(output) as staging:
        (staging / HEAD_FILE).write_bytes(head_bytes(head))
        description: dict[str, Any] = {
            "format": FORMAT_VERSION,
            "kind": KIND,
            "head": config.head,
            "labels": classes if config.head == "classification" else [],
            "positive_label": config.positive_label if config.head == "classification" else None,
            "encoder": {
                "path": str(Path(config.encoder).resolve()),
                "folder_sha256": encoder.sha256,
                "pooling": encoder.settings.pooling,
                "normalize": encoder.settings.normalize,
                "max_length": encoder.settings.max_length,
                "dim": encoder.dim,
            },
            "model_file": HEAD_FILE,
            "model_sha256": file_sha256(staging / HEAD_FILE),
            "training": config.model_dump(mode="json", exclude={"storage_options", "output"}),
            "data": data,
            "metrics": metrics,
            "versions": _versions(),
        }
        write_description(staging, description)
    return TrainResult(str(output), description)


def holdout_split(targets: np.ndarray, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Training and held-out rows, stratified by the target rounded to an integer: each
    group is shuffled (seeded by `seed` and the group's rank) and its last
    `round(size * holdout)` rows are held out. Both are returned in ascending order.

    Example:
        >>> targets = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
        >>> train, test = holdout_split(targets, 0.25, 0)
        >>> len(train), targets[test].tolist()
        (6, [0.0, 1.0])
    """
    strata = np.round(targets)
    train: list[np.ndarray] = []
    test: list[np.ndarray] = []
    for rank, value in enumerate(np.unique(strata)):
        rows = np.flatnonzero(strata == value)
        rows = rows[np.random.default_rng([seed, 40, rank]).permutation(len(rows))]
        held = round(len(rows) * holdout)
        train.append(rows[: len(rows) - held])
        test.append(rows[len(rows) - held :])
    empty = np.empty(0, dtype=np.int64)
    return np.sort(np.concatenate([empty, *train])), np.sort(np.concatenate([empty, *test]))


def _examples(config: EmbeddingTrainConfig) -> tuple[list[Example], dict[str, Any]]:
    """The examples, each with its target, and the description of where they came from."""
    if config.documents is None:
        assert config.positive is not None and config.negative is not None
        positive = _pool(config, config.positive, 0, config.max_per_class)
        negative = _pool(config, config.negative, 1, config.max_per_class)
        n = min(positive.available, negative.available, config.max_per_class or positive.available)
        if n < 2:
            raise InputError(
                f"too few examples to train on: {positive.available} positive and "
                f"{negative.available} negative documents (at least 2 of each)"
            )
        examples = [Example(e.id, e.text, 1.0) for e in positive.take_examples(n)]
        examples += [Example(e.id, e.text, 0.0) for e in negative.take_examples(n)]
        data = {"positive": positive.describe(), "negative": negative.describe(), "per_class": n}
        return examples, data
    assert config.label_key is not None and config.head is not None
    file_target = None
    target: Target = column_target(config.label_key, config.head)
    if config.labels is not None:
        labels = read_labels(
            config.labels, config.id_key, config.label_key, config.head, config.storage_options
        )
        target = file_target = FileTarget(labels)
    pool = _pool(config, config.documents, 0, config.max_examples, target)
    n = min(pool.available, config.max_examples or pool.available)
    examples = pool.take_examples(n)
    counts = _target_counts(examples)
    source = f"the labels file {config.labels}" if config.labels else f"field {config.label_key!r}"
    if n < 2:
        raise InputError(
            f"too few labelled documents to train on: {n} of the documents have a label in "
            f"{source} (at least 2)"
        )
    if config.head == "classification" and len(counts) < 2:
        raise InputError(
            f"classification needs both classes: every labelled document has label "
            f"{next(iter(counts))} in {source}"
        )
    label_source: dict[str, Any] = {"label_key": config.label_key}
    if file_target is not None:
        label_source |= {
            "file": config.labels,
            "id_key": config.id_key,
            "rows": len(file_target.labels),
            "without_document": file_target.without_document,
        }
    data = {"documents": pool.describe(), "labels": label_source, "target_counts": counts}
    return examples, data


def _pool(
    config: EmbeddingTrainConfig,
    data: ClassData,
    stream: int,
    limit: int | None,
    target: Target | None = None,
) -> CatalogPool | FilePool:
    if data.where is not None:
        assert config.catalog is not None  # checked by the config
        return CatalogPool(config.catalog, data.where, data.datasets, config.seed, stream, target)
    assert data.paths is not None
    options = config.storage_options
    return FilePool(data.paths, config.text_key, config.seed, stream, limit, options, target)


def _target_counts(examples: list[Example]) -> dict[str, int]:
    """How many examples have each target, rounded to an integer (a score's bucket)."""
    values, counts = np.unique(
        np.round([example.target for example in examples]).astype(np.int64), return_counts=True
    )
    return {str(value): int(count) for value, count in zip(values, counts, strict=True)}


def _versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"mixplane": __version__}
    for name in ("torch", "transformers", "safetensors"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions
