"""Training a classifier of any kind: the config's `kind` picks the trainer.

Example:
    >>> train_classifier("edu.yaml").metrics["f1"]  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mixplane.classify.config import TrainCommon
from mixplane.classify.embedding import train_embedding
from mixplane.classify.embedding_config import EmbeddingTrainConfig
from mixplane.classify.kinds import as_config
from mixplane.classify.train import TrainResult, train_fasttext


def train_classifier(
    config: TrainCommon | dict[str, Any] | str | Path, **overrides: Any
) -> TrainResult:
    """Train the classifier a config, a dict or a YAML path describes: fastText (`kind:
    fasttext`, the default) or a head on an encoder (`kind: embedding`); `overrides` that
    are not None win over it."""
    config = as_config(config, **overrides)
    if isinstance(config, EmbeddingTrainConfig):
        return train_embedding(config)
    return train_fasttext(config)
