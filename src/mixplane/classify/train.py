"""Training a fastText quality classifier, the DCLM way, into a model folder.

1. Each class's pool is sampled to the same size `n` (the smaller pool's size, at most
   `max_per_class`), seeded (see `data.py`).
2. Each class's sample is shuffled (numpy, seeded) and its last `round(n * holdout)`
   examples are held out; the training examples of both classes are shuffled together.
3. fastText trains on them (texts preprocessed as in `stages.classify.text`) in a child
   process (see `fit.py`), then the model scores the held-out examples: precision, recall,
   F1 and accuracy at 0.5, and AUC.
4. The folder is written beside its destination and renamed into place when complete:
   `model.bin` and `classifier.json` (see `stages.classify.model`).

Example:
    >>> result = train_fasttext({"output": "models/q", "positive": "clean/wiki",
    ...                          "negative": "clean/web"})  # doctest: +SKIP
    >>> result.metrics["f1"]  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mixplane._version import __version__
from mixplane.classify.config import ClassData, TrainConfig
from mixplane.classify.data import CatalogPool, FilePool
from mixplane.classify.fit import fit
from mixplane.classify.folder import (
    check_new_folder,
    fasttext_version,
    require_fasttext,
    staged_folder,
    write_description,
)
from mixplane.classify.kinds import as_config
from mixplane.classify.metrics import binary_metrics
from mixplane.errors import ConfigError, InputError
from mixplane.stages.classify.model import (
    FORMAT_VERSION,
    KIND,
    LABEL_PREFIX,
    MODEL_FILE,
    Classifier,
    file_sha256,
)
from mixplane.stages.classify.text import fasttext_text


@dataclass(frozen=True)
class TrainResult:
    """The model folder written and its description (`classifier.json`)."""

    folder: str
    description: dict[str, Any]

    @property
    def metrics(self) -> dict[str, Any]:
        return self.description["metrics"]


def train_fasttext(
    config: TrainConfig | dict[str, Any] | str | Path, **overrides: Any
) -> TrainResult:
    """Train a fastText classifier from a config, a dict or a YAML path (see `TrainConfig`).

    Example:
        >>> train_fasttext("quality.yaml", seed=3).folder  # doctest: +SKIP
        'models/quality'
    """
    config = as_config(config, **overrides)
    if not isinstance(config, TrainConfig):
        raise ConfigError(f"kind {config.kind!r}: train_fasttext trains kind 'fasttext'")
    output = Path(config.output)
    check_new_folder(output)  # before reading any data
    fasttext = require_fasttext("training")
    positive = _pool(config, config.positive, 0)
    negative = _pool(config, config.negative, 1)
    n = min(positive.available, negative.available, config.max_per_class or positive.available)
    if n < 2:
        raise InputError(
            f"too few examples to train on: {positive.available} positive and "
            f"{negative.available} negative documents (at least 2 of each)"
        )
    held = round(n * config.holdout)
    labels = (config.positive_label, config.negative_label)
    train_lines: list[str] = []
    test_lines: list[str] = []
    test_truth: list[int] = []
    for stream, (pool, label) in enumerate(zip((positive, negative), labels, strict=True)):
        texts = [fasttext_text(text, config.lowercase) for text in pool.take(n)]
        order = np.random.default_rng([config.seed, 10 + stream]).permutation(n)
        texts = [texts[i] for i in order]
        train_lines += [f"{LABEL_PREFIX}{label} {text}" for text in texts[: n - held]]
        test_lines += texts[n - held :]
        test_truth += [int(stream == 0)] * held
    mixed = np.random.default_rng([config.seed, 20]).permutation(len(train_lines))
    with staged_folder(output) as staging:
        data = staging / "train.txt"
        # errors="replace": a lone surrogate becomes "?", as `utf8_safe` makes it when scoring.
        text = "".join(train_lines[i] + "\n" for i in mixed)
        data.write_text(text, encoding="utf-8", errors="replace")
        params = {
            "epoch": config.epoch,
            "lr": config.lr,
            "dim": config.dim,
            "wordNgrams": config.word_ngrams,
            "minCount": config.min_count,
            "bucket": config.bucket,
            "thread": config.threads,
            "seed": config.seed,
            "verbose": 0,
        }
        fit(str(data), str(staging / MODEL_FILE), params)
        data.unlink()
        model = fasttext.load_model(str(staging / MODEL_FILE))
        digest = file_sha256(staging / MODEL_FILE)
        description: dict[str, Any] = {
            "format": FORMAT_VERSION,
            "kind": KIND,
            "labels": list(labels),
            "positive_label": config.positive_label,
            "preprocess": {"lowercase": config.lowercase},
            "model_file": MODEL_FILE,
            "model_sha256": digest,
            "training": config.model_dump(mode="json", exclude={"storage_options", "output"}),
            "data": {
                "positive": positive.describe(),
                "negative": negative.describe(),
                "per_class": n,
                "train_per_class": n - held,
                "held_out_per_class": held,
            },
            "metrics": None,
            "versions": {"mixplane": __version__, "fasttext": fasttext_version()},
        }
        if held:
            classifier = Classifier(str(staging), description, digest, model)
            scores = classifier.line_scores(test_lines, config.positive_label)
            description["metrics"] = binary_metrics(np.array(test_truth), scores)
        write_description(staging, description)
    return TrainResult(str(output), description)


def _pool(config: TrainConfig, data: ClassData, stream: int):
    if data.where is not None:
        assert config.catalog is not None  # checked by the config
        return CatalogPool(config.catalog, data.where, data.datasets, config.seed, stream)
    assert data.paths is not None
    return FilePool(
        data.paths,
        config.text_key,
        config.seed,
        stream,
        config.max_per_class,
        config.storage_options,
    )
