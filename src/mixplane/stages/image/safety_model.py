"""Running a user's image safety model: TorchScript with torch, ONNX with onnxruntime.

Loading checks all it can before any image is scored: the file exists, its library is
installed, the file loads, and the model, run on blank images, gives an output its
description can read (that output exists, with one row per image and the unsafe columns).
Each failure is one line naming the file and the problem. A worker loads a model once; the
same file, description and thread count give the same loaded model back.

Example:
    >>> model = load_safety_model("models/nsfw.onnx", spec, threads=1)  # doctest: +SKIP
    >>> model.scores(np.stack([spec.pixels(image)]))  # doctest: +SKIP
    array([0.03])
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.stages.classify.model import file_sha256
from mixplane.stages.image.safety_spec import SafetySpec

#: Model formats by file suffix (a description's `format` names it for other suffixes).
FORMATS = {".onnx": "onnx", ".pt": "torchscript", ".pth": "torchscript", ".ts": "torchscript",
           ".jit": "torchscript", ".torchscript": "torchscript"}  # fmt: skip
#: Blank images the loaded model is tried on (two: a model that cannot take a batch fails).
PROBE_IMAGES = 2

_hashes: dict[tuple[str, int, int], str] = {}
_loaded: dict[tuple[str, str, str, int | None], SafetyModel] = {}


def model_format(path: str, spec: SafetySpec) -> str:
    """`onnx` or `torchscript`: the description's `format`, else the file's suffix."""
    if spec.format is not None:
        return spec.format
    found = FORMATS.get(Path(path).suffix.lower())
    if found is None:
        raise ConfigError(
            f"image safety model {path}: unknown format; name the file .onnx or .pt "
            "(TorchScript), or set format: onnx or torchscript in its description"
        )
    return found


def model_hash(path: str) -> str:
    """The SHA-256 of the model file (computed once per file version), or one line saying
    it is missing."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(f"image safety model {path}: file not found") from None
    key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _hashes:
        _hashes[key] = file_sha256(path)
    return _hashes[key]


@dataclass
class SafetyModel:
    """A loaded model: `run` gives its chosen output for a float32 batch."""

    path: str
    spec: SafetySpec
    threads: int | None
    runner: Any
    #: The batch size the model was exported with, when it takes no other.
    fixed_batch: int | None = None

    def scores(self, batch: np.ndarray) -> np.ndarray:
        """The unsafe score (float64) of each image of a batch of model inputs."""
        if self.fixed_batch is None:
            return self.spec.scores(self._output(batch))
        parts = []
        for start in range(0, len(batch), self.fixed_batch):
            chunk = batch[start : start + self.fixed_batch]
            kept = len(chunk)
            if kept < self.fixed_batch:  # filled up with blank images, whose scores go
                blank = np.zeros((self.fixed_batch - kept, *chunk.shape[1:]), chunk.dtype)
                chunk = np.concatenate([chunk, blank])
            parts.append(self.spec.scores(self._output(chunk))[:kept])
        return np.concatenate(parts)

    def _output(self, batch: np.ndarray) -> np.ndarray:
        outputs = self.runner(batch)
        index = self.spec.output
        if index >= len(outputs):
            raise ConfigError(
                f"image safety model {self.path}: it has {len(outputs)} output(s); its "
                f"description reads output {index} (outputs count from 0)"
            )
        output = np.asarray(outputs[index])
        if output.ndim > 2 and all(side == 1 for side in output.shape[2:]):
            output = output.reshape(output.shape[:2])  # (N, K, 1, 1) from a convolution
        columns = 1 if output.ndim == 1 else output.shape[1]
        if output.ndim > 2 or len(output) != len(batch) or max(self.spec.unsafe) >= columns:
            raise ConfigError(
                f"image safety model {self.path}: output {index} has shape "
                f"{list(output.shape)} for {len(batch)} images; the description needs one row "
                f"per image with column(s) {list(self.spec.unsafe)}"
            )
        return output


def load_safety_model(path: str, spec: SafetySpec, threads: int | None) -> SafetyModel:
    """Load and try the model (see the module), once per process for the same inputs."""
    key = (model_hash(path), path, spec.model_dump_json(), threads)
    if key not in _loaded:
        kind = model_format(path, spec)
        load = _load_onnx if kind == "onnx" else _load_torch
        model = load(path, spec, threads)
        height, width = spec.size
        shape = (3, height, width) if spec.layout == "NCHW" else (height, width, 3)
        probe = np.zeros((PROBE_IMAGES, *shape), dtype=np.float32)
        try:
            model.scores(probe)
        except ConfigError:
            raise
        except Exception as error:
            raise ConfigError(
                f"image safety model {path}: fails on a batch of {PROBE_IMAGES} blank "
                f"{'x'.join(map(str, shape))} inputs ({_one_line(error)}); check size and "
                "layout in its description"
            ) from None
        _loaded[key] = model
    return _loaded[key]


def _one_line(error: BaseException) -> str:
    """The error's type and first sentence (torch adds paragraphs of advice), on one line."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text.split('. ')[0][:300]}"


def _load_torch(path: str, spec: SafetySpec, threads: int | None) -> SafetyModel:
    try:
        import torch
    except ImportError as error:
        raise ConfigError(
            f"image safety model {path}: TorchScript models need torch ({error}): "
            "pip install 'mixplane[torch]'"
        ) from None
    try:
        with warnings.catch_warnings():
            # torch deprecates TorchScript; its models still load, and users still have them.
            warnings.simplefilter("ignore", DeprecationWarning)
            module = torch.jit.load(path, map_location="cpu")
    except Exception as error:
        raise ConfigError(
            f"image safety model {path}: torch cannot load it as TorchScript "
            f"({_one_line(error)}); save the model with torch.jit.script(model).save(path) "
            "or torch.jit.trace"
        ) from None
    module.eval()

    def run(batch: np.ndarray) -> list[np.ndarray]:
        previous = torch.get_num_threads()
        if threads is not None:
            torch.set_num_threads(threads)
        try:
            with torch.inference_mode():
                result = module(torch.from_numpy(batch))
        finally:
            torch.set_num_threads(previous)
        outputs = result if isinstance(result, list | tuple) else [result]
        return [output.detach().float().numpy() for output in outputs]

    return SafetyModel(path, spec, threads, run)


def _load_onnx(path: str, spec: SafetySpec, threads: int | None) -> SafetyModel:
    try:
        import onnxruntime
    except ImportError as error:
        raise ConfigError(
            f"image safety model {path}: ONNX models need onnxruntime ({error}): "
            "pip install 'mixplane[onnx]'"
        ) from None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads or 0  # 0: onnxruntime's default
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only
    try:
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as error:
        raise ConfigError(
            f"image safety model {path}: onnxruntime cannot load it ({_one_line(error)})"
        ) from None
    inputs = {item.name: item for item in session.get_inputs()}
    name = spec.input or session.get_inputs()[0].name
    if name not in inputs:
        raise ConfigError(
            f"image safety model {path}: no input {name!r}; its inputs: {', '.join(inputs)}"
        )
    declared = inputs[name]
    if declared.type != "tensor(float)":
        raise ConfigError(
            f"image safety model {path}: input {name!r} is {declared.type}; image_safety "
            "gives float32 images (tensor(float))"
        )
    batch_side = declared.shape[0] if declared.shape else None

    def run(batch: np.ndarray) -> list[np.ndarray]:
        return session.run(None, {name: batch})

    fixed = batch_side if isinstance(batch_side, int) and batch_side > 0 else None
    return SafetyModel(path, spec, threads, run, fixed)
