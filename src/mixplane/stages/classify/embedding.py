"""An embedding classifier's model folder, and scoring texts with it.

The folder holds `head.safetensors` (see `head.py`) and `classifier.json` with `kind:
embedding`, `head` (regression or classification), `labels` and `positive_label` (for
classification), `model_sha256` (the head file's SHA-256) and `encoder`: the encoder
folder's `path`, its `folder_sha256` (a hash over all its files, see
`stages.embed.encoder.folder_sha256`) and how it embeds (`pooling`, `normalize`,
`max_length`, `dim`). The encoder is not copied into the model folder: it is found at its
path, and refused if its files changed since the head was trained.

A text's score is the head's output on the text's embedding: the predicted value for
regression, the positive class's probability for classification (or the negative's, when
that label is asked for).

Example:
    >>> model = load_classifier("models/edu")  # doctest: +SKIP
    >>> model.scores(["Photosynthesis turns light into sugar."])  # doctest: +SKIP
    array([2.71], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.stages.classify.files import DESCRIPTION_FILE, model_file
from mixplane.stages.classify.head import HEAD_KINDS, LinearHead, probability, read_head
from mixplane.stages.embed.encoder import Encoder, folder_sha256, load_encoder, read_settings

KIND = "embedding"
#: Texts per encoder batch when the caller does not say.
DEFAULT_BATCH = 32


def check_description(path: Path, description: dict[str, Any]) -> None:
    """ConfigError naming `path` (the classifier.json) when an embedding model's
    description lacks a field scoring needs."""
    if description.get("head") not in HEAD_KINDS:
        head = description.get("head")
        raise ConfigError(f"{path}: head is {head!r}; expected one of {', '.join(HEAD_KINDS)}")
    encoder = description.get("encoder")
    if not isinstance(encoder, dict):
        raise ConfigError(f"{path}: field 'encoder' is missing or not a dict")
    for key, kind in (("path", str), ("folder_sha256", str), ("dim", int), ("max_length", int)):
        if not isinstance(encoder.get(key), kind):
            raise ConfigError(f"{path}: field 'encoder.{key}' is missing or not a {kind.__name__}")


def verified_encoder(folder: str | Path, description: dict[str, Any]) -> str:
    """The encoder folder's hash, checked against the one the head was trained with.

    Raises ConfigError when the folder is gone or its files changed.
    """
    encoder = description["encoder"]
    path, expected = encoder["path"], encoder["folder_sha256"]
    where = Path(folder) / DESCRIPTION_FILE
    if not Path(path).is_dir():
        raise ConfigError(
            f"{where}: the encoder folder {path!r} does not exist; put the encoder the head "
            f"was trained on there (folder_sha256 {expected[:16]}...) or train the head again"
        )
    digest = folder_sha256(path)
    if digest != expected:
        raise ConfigError(
            f"{path}: the encoder folder's content hash {digest[:16]}... does not match "
            f"{where}'s encoder folder_sha256 {expected[:16]}...; the encoder changed since "
            "the head was trained: restore it or train the head again"
        )
    return digest


@dataclass(frozen=True)
class EmbeddingClassifier:
    """A loaded, verified embedding classifier: a frozen encoder and a linear head."""

    folder: str
    description: dict[str, Any]
    sha256: str
    encoder_sha256: str
    encoder: Encoder
    head: LinearHead

    @property
    def labels(self) -> list[str]:
        return list(self.description.get("labels") or [])

    def scores(
        self, texts: Sequence[str], label: str | None = None, batch_size: int | None = None
    ) -> np.ndarray:
        """One float32 score per text: the regression value, or the probability of `label`
        (default: the positive one). The encoder cuts batches of `batch_size` texts (32)
        from all the texts given, longest first, so the same texts in one call always give
        the same bytes.

        Example:
            >>> model.scores(["A clear explanation of tides."], batch_size=16)  # doctest: +SKIP
            array([3.12], dtype=float32)
        """
        embeddings = self.encoder.embed(list(texts), batch_size or DEFAULT_BATCH)
        return self.embedding_scores(embeddings, label)

    def embedding_scores(self, embeddings: np.ndarray, label: str | None = None) -> np.ndarray:
        """The scores of texts already embedded by this model's encoder."""
        if label is None or label == self.description.get("positive_label"):
            return self.head.scores(embeddings)
        if self.head.task == "classification" and label in self.labels:
            return probability(-self.head.raw(embeddings)).astype(np.float32)
        raise ConfigError(f"{self.folder}: the model has no label {label!r}")


def load_embedding_classifier(
    folder: str | Path, description: dict[str, Any], head_sha256: str
) -> EmbeddingClassifier:
    """Load the encoder and the head of an already verified model folder (see
    `model.load_classifier`, which checks the head's hash); the encoder's is checked here."""
    encoder_sha256 = verified_encoder(folder, description)
    recorded = description["encoder"]
    path = recorded["path"]
    # The folder's own limit is asked for as None, so a worker's other stages using the same
    # encoder (semantic dedup) share one loaded copy.
    own = read_settings(path).max_length
    max_length = None if recorded["max_length"] == own else recorded["max_length"]
    encoder = load_encoder(path, threads=1, max_length=max_length)
    head = read_head(model_file(folder, description), description["head"], encoder.dim)
    return EmbeddingClassifier(str(folder), description, head_sha256, encoder_sha256, encoder, head)
