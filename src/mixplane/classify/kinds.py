"""A training config of any kind, from a config, a dict or a YAML path: `kind` picks the
model (`fasttext`, the default, or `embedding`).

Example:
    >>> as_config({"output": "m", "positive": "a", "negative": "b"}).kind
    'fasttext'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mixplane.classify.config import TrainCommon, TrainConfig
from mixplane.classify.embedding_config import EmbeddingTrainConfig
from mixplane.configs import read_yaml_mapping
from mixplane.errors import ConfigError

CONFIGS: dict[str, type[TrainCommon]] = {"fasttext": TrainConfig, "embedding": EmbeddingTrainConfig}


def as_config(
    config: TrainCommon | dict[str, Any] | str | Path, **overrides: Any
) -> TrainConfig | EmbeddingTrainConfig:
    """The training config of the kind `config` names (`kind`: fasttext, the default, or
    embedding), from a config, a dict or a YAML path, with `overrides` (not None) applied."""
    where = "classifier config"
    if isinstance(config, TrainCommon):
        data = config.model_dump()
    elif isinstance(config, dict):
        data = dict(config)
    elif isinstance(config, str | Path):
        data, where = read_yaml_mapping(config, "output and the training data"), str(config)
    else:
        raise ConfigError(f"expected a training config, a dict or a YAML path, got {type(config)}")
    data.update({key: value for key, value in overrides.items() if value is not None})
    kind = data.get("kind", "fasttext")
    if kind not in CONFIGS:
        raise ConfigError(f"{where}: kind {kind!r} is not one of {', '.join(CONFIGS)}")
    return CONFIGS[kind].parse(data, where)  # type: ignore[return-value]
