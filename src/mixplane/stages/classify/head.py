"""The linear head of an embedding classifier: its file, and the score it gives an embedding.

The file (`head.safetensors`) holds two float32 tensors: `weight` (one value per embedding
dimension) and `bias` (one value); it has no metadata (safetensors writes several metadata
keys in an order that changes from process to process, and the file must be the same bytes
for the same head). `classifier.json` says what the head is.

A regression head's score is `embedding . weight + bias`; a classification head's is the
logistic function of it, the positive class's probability. Both are computed in float64
and returned as float32, with numpy's own loop (no BLAS call whose summation order could
depend on the machine's thread settings).

Example:
    >>> head = LinearHead("regression", np.array([1.0, 2.0], np.float32), np.float32(0.5))
    >>> head.scores(np.array([[1.0, 1.0], [0.0, 0.5]], np.float32)).tolist()
    [3.5, 1.5]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mixplane.errors import ConfigError

HEAD_FILE = "head.safetensors"
HEAD_KINDS = ("regression", "classification")


@dataclass(frozen=True)
class LinearHead:
    """A trained head: `task` (regression or classification), `weight` and `bias`."""

    task: str
    weight: np.ndarray
    bias: np.float32

    @property
    def dim(self) -> int:
        return int(self.weight.shape[0])

    def raw(self, embeddings: np.ndarray) -> np.ndarray:
        """`embeddings . weight + bias` for each row, in float64."""
        weight = self.weight.astype(np.float64)
        return np.einsum("ij,j->i", embeddings.astype(np.float64), weight) + float(self.bias)

    def scores(self, embeddings: np.ndarray) -> np.ndarray:
        """One score per row of `embeddings` (float32): the value, or the probability."""
        values = self.raw(embeddings)
        if self.task == "classification":
            values = probability(values)
        return values.astype(np.float32)


def probability(values: np.ndarray) -> np.ndarray:
    """The logistic function 1 / (1 + e^-x), without overflow for large |x|.

    Example:
        >>> probability(np.array([0.0, 1000.0, -1000.0])).tolist()
        [0.5, 1.0, 0.0]
    """
    return np.exp(-np.logaddexp(0.0, -values))


def head_bytes(head: LinearHead) -> bytes:
    """The head as safetensors bytes: the same head gives the same bytes."""
    from safetensors.numpy import save

    tensors = {
        "bias": np.array([head.bias], dtype=np.float32),
        "weight": np.ascontiguousarray(head.weight, dtype=np.float32),
    }
    return save(tensors)


def read_head(path: str | Path, task: str, dim: int) -> LinearHead:
    """The head in `path`, checked to be a `dim`-wide float32 head (ConfigError otherwise)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load

    try:
        tensors = load(Path(path).read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"{path}: missing; the model folder is incomplete") from None
    except SafetensorError as error:
        raise ConfigError(f"{path}: not a safetensors file ({error})") from None
    weight, bias = tensors.get("weight"), tensors.get("bias")
    if weight is None or bias is None or weight.shape != (dim,) or bias.shape != (1,):
        shapes = {name: list(tensor.shape) for name, tensor in tensors.items()}
        raise ConfigError(
            f"{path}: expected tensors weight [{dim}] and bias [1] (the encoder's width); "
            f"found {shapes}"
        )
    if weight.dtype != np.float32 or bias.dtype != np.float32:
        raise ConfigError(f"{path}: expected float32 tensors, found {weight.dtype}")
    return LinearHead(task, weight, np.float32(bias[0]))
