"""What a safety model takes and gives: its description, and images made into its input.

A user's model comes with a small description, a YAML or JSON file beside it (the model's
path with `.yaml`, `.yml` or `.json` for its suffix) or given inline in the stage's options:

    size: 224                     # input height and width (or [height, width])
    resize: center_crop           # or squash (to the size, ignoring the aspect ratio)
    channels: RGB                 # or BGR
    layout: NCHW                  # or NHWC
    scale: 255                    # pixel values (0-255) are divided by this ...
    mean: [0.485, 0.456, 0.406]   # ... then have mean taken off and are divided by std,
    std: [0.229, 0.224, 0.225]    #     per channel, in the channel order above
    output: 0                     # which of the model's outputs holds the scores
    activation: softmax           # none (the default), softmax or sigmoid, per image
    unsafe: [1]                   # the column(s) of that output summed into the score
    labels: [safe, unsafe]        # optional names of the columns

Example:
    >>> spec = SafetySpec(size=2, unsafe=0, resize="squash")
    >>> spec.pixels(Image.new("RGB", (4, 4), (255, 0, 0)))[:, 0, 0].tolist()
    [1.0, 0.0, 0.0]
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import yaml
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mixplane.errors import ConfigError

#: Suffixes a description beside the model may have, in the order they are looked for.
SPEC_SUFFIXES = (".yaml", ".yml", ".json")
Channel = tuple[float, float, float]


class SafetySpec(BaseModel):
    """A safety model's input and output, as its description file gives them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["onnx", "torchscript"] | None = Field(
        None, description="the model file's format; by default from its suffix"
    )
    size: tuple[int, int] = Field(description="input height and width (one number: square)")
    resize: Literal["center_crop", "squash"] = Field(
        "center_crop",
        description="center_crop: the largest centred box of the input's shape, resized; "
        "squash: the whole image resized to the size",
    )
    channels: Literal["RGB", "BGR"] = "RGB"
    layout: Literal["NCHW", "NHWC"] = "NCHW"
    scale: float = Field(255.0, gt=0, description="pixel values are divided by this first")
    mean: Channel = (0.0, 0.0, 0.0)
    std: Channel = (1.0, 1.0, 1.0)
    input: str | None = Field(None, description="ONNX input name; default: the first")
    output: int = Field(0, ge=0, description="which of the model's outputs holds the scores")
    activation: Literal["none", "softmax", "sigmoid"] = "none"
    unsafe: tuple[int, ...] = Field(description="output column(s) summed into the score")
    labels: tuple[str, ...] | None = None

    @field_validator("size", mode="before")
    @classmethod
    def _square(cls, value: object) -> object:
        return (value, value) if isinstance(value, int) else value

    @field_validator("size")
    @classmethod
    def _positive(cls, value: tuple[int, int]) -> tuple[int, int]:
        if min(value) < 1:
            raise ValueError(f"size must be positive, got {list(value)}")
        return value

    @field_validator("unsafe", mode="before")
    @classmethod
    def _columns(cls, value: object) -> object:
        return (value,) if isinstance(value, int) else value

    @field_validator("unsafe")
    @classmethod
    def _some_columns(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or min(value) < 0 or len(set(value)) != len(value):
            raise ValueError("unsafe needs one or more distinct column numbers (0 or more)")
        return value

    @field_validator("std")
    @classmethod
    def _nonzero(cls, value: Channel) -> Channel:
        if min(abs(v) for v in value) == 0:
            raise ValueError("std values must not be 0")
        return value

    def pixels(self, image: Image.Image) -> np.ndarray:
        """An RGB image as the model's float32 input for one image (no batch axis)."""
        height, width = self.size
        if self.resize == "center_crop":
            # The largest centred box with the input's aspect ratio.
            scale = min(image.width / width, image.height / height)
            box_w, box_h = width * scale, height * scale
            left, top = (image.width - box_w) / 2, (image.height - box_h) / 2
            box = (left, top, left + box_w, top + box_h)
        else:
            box = (0, 0, image.width, image.height)
        resized = image.resize((width, height), Image.Resampling.BICUBIC, box=box)
        array = np.asarray(resized, dtype=np.float32)  # (H, W, 3), RGB
        if self.channels == "BGR":
            array = array[:, :, ::-1]
        mean, std = np.asarray(self.mean, np.float32), np.asarray(self.std, np.float32)
        array = (array / np.float32(self.scale) - mean) / std
        if self.layout == "NCHW":
            array = array.transpose(2, 0, 1)
        return np.ascontiguousarray(array, dtype=np.float32)

    def scores(self, output: np.ndarray) -> np.ndarray:
        """The unsafe score of each image from the model's chosen output: (N,) or (N, K)."""
        values = np.asarray(output, dtype=np.float64)
        if values.ndim == 1:
            values = values[:, None]
        if self.activation == "softmax":
            shifted = np.exp(values - values.max(axis=1, keepdims=True))
            values = shifted / shifted.sum(axis=1, keepdims=True)
        elif self.activation == "sigmoid":
            values = 1.0 / (1.0 + np.exp(-values))
        return values[:, list(self.unsafe)].sum(axis=1)


def spec_beside(model: str) -> Path | None:
    """The description file beside the model file, if there is one."""
    path = Path(model)
    for suffix in SPEC_SUFFIXES:
        candidate = path.with_suffix(suffix)
        if candidate.is_file():
            return candidate
    return None


def read_spec(model: str, given: str | dict | None) -> SafetySpec:
    """The model's description: inline (`given` a dict), from the file `given` names, or
    from the file beside the model. Errors name the file and the problem."""
    if isinstance(given, dict):
        return _validated(given, "the stage's spec")
    path = Path(given) if given is not None else spec_beside(model)
    if path is None:
        names = ", ".join(Path(model).with_suffix(s).name for s in SPEC_SUFFIXES)
        raise ConfigError(
            f"image safety model {model}: no description beside it ({names}); write one "
            "(size, mean, std, unsafe, ...) or give spec: in the stage's options"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: model description not found") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        problem = " ".join(str(error).split())
        raise ConfigError(f"{path}: not a readable YAML or JSON description ({problem})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of fields (size, unsafe, ...)")
    return _validated(data, str(path))


def _validated(data: dict, where: str) -> SafetySpec:
    try:
        return SafetySpec(**data)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            field = ".".join(str(part) for part in item["loc"]) or "description"
            message = "unknown field" if item["type"] == "extra_forbidden" else item["msg"]
            problems.append(f"{field}: {message}")
        valid = ", ".join(SafetySpec.model_fields)
        raise ConfigError(f"{where}: {'; '.join(problems)} (fields: {valid})") from None
