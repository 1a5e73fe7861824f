"""A classifier model folder, and scoring documents with it.

A model is a folder on local disk holding `classifier.json` (what it is and where it came
from) and the model file it names (`model_file`), whose SHA-256 it records (`model_sha256`).
Its `kind` says which:

- `fasttext`: `model.bin`, a fastText model; `classifier.json` holds its `labels`,
  `positive_label`, the text `preprocess` settings (see `text.py`), the training config, the
  data it was trained on, its held-out metrics, and the mixplane and fastText versions.
- `embedding`: `head.safetensors`, a linear head on a frozen encoder's embeddings, the
  encoder referenced by path and hash (see `embedding.py`).

Loading checks the file against that hash, so a truncated or replaced model is refused
before it scores anything. Nothing is ever downloaded: the folder is the model.

Example:
    >>> model = load_classifier("models/quality")  # doctest: +SKIP
    >>> model.scores(["Some text", "more text"], label="hq")  # doctest: +SKIP
    array([0.91, 0.08], dtype=float32)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from mixplane.errors import ConfigError
from mixplane.stages.classify.files import DESCRIPTION_FILE, MODEL_FILE, model_file
from mixplane.stages.classify.text import fasttext_text, utf8_safe

if TYPE_CHECKING:
    from mixplane.stages.classify.embedding import EmbeddingClassifier

FORMAT_VERSION = 1
KIND = "fasttext"
KINDS = ("fasttext", "embedding")
LABEL_PREFIX = "__label__"

# Verified hashes by (path, size, mtime): a worker loading the same model twice, or the
# pipeline hashing it for the manifest, reads the file once.
_VERIFIED: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_description(folder: str | Path) -> dict[str, Any]:
    """The folder's `classifier.json`, checked for the fields scoring needs.

    Raises ConfigError naming the file and the problem when the folder or file is missing,
    unreadable, or not a fastText classifier description.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(
            f"classifier model folder {str(root)!r} does not exist or is not a folder; "
            "train one with `mixplane classifier train` or give the right path"
        )
    path = root / DESCRIPTION_FILE
    if not path.is_file():
        holds = f"{DESCRIPTION_FILE} and {MODEL_FILE}"
        raise ConfigError(f"{path}: missing; a model folder holds {holds}")
    try:
        description = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(description, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    kind = description.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{path}: kind is {kind!r}; expected one of {', '.join(KINDS)}")
    fields = [("labels", list), ("model_sha256", str)]
    fields += [("preprocess", dict)] if kind == KIND else [("model_file", str)]
    for key, kind_of in fields:
        if not isinstance(description.get(key), kind_of):
            raise ConfigError(f"{path}: field {key!r} is missing or not a {kind_of.__name__}")
    name = description.get("model_file", MODEL_FILE)
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise ConfigError(f"{path}: model_file {name!r} is not a file name in the folder")
    if kind != KIND:
        from mixplane.stages.classify.embedding import check_description

        check_description(path, description)
    return description


def verified_hash(folder: str | Path, description: dict[str, Any] | None = None) -> str:
    """The SHA-256 of the folder's model file, checked against its `classifier.json`.

    Raises ConfigError when the file is missing or its content differs from the recorded hash.
    """
    description = description or read_description(folder)
    path = model_file(folder, description)
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"{path}: missing; the model folder is incomplete") from None
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    digest = _VERIFIED.get(key) or file_sha256(path)
    expected = description["model_sha256"]
    if digest != expected:
        raise ConfigError(
            f"{path}: content hash {digest[:16]}... does not match {DESCRIPTION_FILE}'s "
            f"model_sha256 {expected[:16]}...; the file is corrupt or was replaced: restore "
            "it or train the model again"
        )
    _VERIFIED[key] = digest
    return digest


@dataclass(frozen=True)
class Classifier:
    """A loaded, verified fastText classifier."""

    folder: str
    description: dict[str, Any]
    sha256: str
    model: Any

    @property
    def labels(self) -> list[str]:
        return list(self.description["labels"])

    @property
    def lowercase(self) -> bool:
        return bool(self.description["preprocess"].get("lowercase", True))

    def scores(
        self, texts: list[str], label: str | None = None, batch_size: int | None = None
    ) -> np.ndarray:
        """Probability of `label` (default: the positive label) for each text (float32),
        texts preprocessed as in training, `batch_size` texts per fastText call (1024).

        Example:
            >>> classifier.scores(["A clear explanation of tides."], "hq")  # doctest: +SKIP
            array([0.87], dtype=float32)
        """
        label = self.description["positive_label"] if label is None else label
        lines = [fasttext_text(text, self.lowercase) for text in texts]
        size = batch_size or 1024
        parts = [self.line_scores(lines[i : i + size], label) for i in range(0, len(lines), size)]
        return np.concatenate([np.empty(0, dtype=np.float32), *parts])

    def line_scores(self, lines: list[str], label: str) -> np.ndarray:
        """Probability of `label` for already preprocessed lines."""
        wanted = LABEL_PREFIX + label
        out = np.zeros(len(lines), dtype=np.float32)
        if not lines:
            return out
        # k=-1: every label's probability, so the wanted one is always among them.
        try:
            all_labels, all_probs = self.model.predict(lines, k=-1, threshold=0.0)
        except TypeError:  # a lone surrogate cannot become the binding's UTF-8 string
            safe = [utf8_safe(line) for line in lines]
            all_labels, all_probs = self.model.predict(safe, k=-1, threshold=0.0)
        for row, (names, probs) in enumerate(zip(all_labels, all_probs, strict=True)):
            for name, prob in zip(names, probs, strict=True):
                if name == wanted:
                    out[row] = prob
                    break
        return out


def check_label(folder: str, description: dict[str, Any], label: str | None) -> str | None:
    """The label to score (`label`, or the model's positive label), checked to exist; None
    for a regression model, which scores one value and has no labels."""
    if description.get("head") == "regression":
        if label is not None:
            raise ConfigError(
                f"{Path(folder) / DESCRIPTION_FILE}: a regression model scores one value and "
                f"has no labels; remove label {label!r}"
            )
        return None
    chosen = label if label is not None else description.get("positive_label")
    labels = description["labels"]
    if chosen not in labels:
        raise ConfigError(
            f"{Path(folder) / DESCRIPTION_FILE}: the model has no label {chosen!r}; "
            f"its labels: {', '.join(map(str, labels))}"
        )
    return str(chosen)


def load_classifier(folder: str | Path) -> Classifier | EmbeddingClassifier:
    """Load a model folder after checking its files (see the module docstring): a fastText
    `Classifier` or an `EmbeddingClassifier`, both scoring with `scores(texts, label)`.

    Example:
        >>> load_classifier("models/quality").labels  # doctest: +SKIP
        ['hq', 'lq']
    """
    description = read_description(folder)
    digest = verified_hash(folder, description)
    if description["kind"] != KIND:
        from mixplane.stages.classify.embedding import load_embedding_classifier

        return load_embedding_classifier(folder, description, digest)
    try:
        import fasttext
    except ImportError as error:
        raise ConfigError(
            f"fastText classifiers need the fasttext package ({error}): "
            "pip install 'mixplane[classify]'"
        ) from None
    path = str(model_file(folder, description))
    try:
        model = fasttext.load_model(path)
    except ValueError as error:
        raise ConfigError(f"{path}: fastText cannot read it ({error})") from None
    return Classifier(str(folder), description, digest, model)
