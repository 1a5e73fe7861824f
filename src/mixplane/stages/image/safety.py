"""`image_safety`: an unsafe (NSFW) score for each image from a model of your own, to keep as
a property or to drop by.

Example pipeline steps:

    - image_safety: {model: models/nsfw.onnx}                                 # annotate
    - image_safety: {model: models/nsfw.pt, mode: filter, threshold: 0.8}     # drop above

The model is a file on local disk: ONNX (run with onnxruntime, `mixplane[onnx]`) or
TorchScript (run with torch). Its description (`safety_spec.py`: input size, resizing,
channel order, layout, scale, mean and std; which output and columns are the unsafe score,
after which activation) is a YAML or JSON file beside it, or `spec:` in the options.
Images are decoded upright as `decode_image` does (transparency on the background that
shows it), made into the model's input and scored `batch_size` at a time. The score is
stored as `unsafe_score` (option `as`); with `mode: filter`, a score above `threshold`
excludes the sample with reason `unsafe_image`, its score and the threshold in the detail.
The model file's SHA-256 and the description are recorded in the run's manifest. The model
runs on `threads` threads (1 by default), so scores do not depend on the machine's cores.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import AliasChoices, Field, PrivateAttr

from mixplane.document import RESERVED_COLUMNS, Document, Drop
from mixplane.errors import ConfigError
from mixplane.stages.base import Result, Stage
from mixplane.stages.image.background import flatten
from mixplane.stages.image.decode import upright_image
from mixplane.stages.image.imaging import DEFAULT_MAX_PIXELS
from mixplane.stages.image.safety_model import SafetyModel, load_safety_model, model_hash
from mixplane.stages.image.safety_spec import SafetySpec, read_spec


class ImageSafety(Stage):
    """Scores each image with a user's safety model; annotates, or drops above a threshold.

    Example:
        >>> ImageSafety(model="models/nsfw.onnx", mode="filter", threshold=0.8)  # doctest: +SKIP
    """

    name: ClassVar[str] = "image_safety"
    adds: ClassVar[tuple[str, ...]] = ("unsafe_score",)  # with the default `as`

    model: str = Field(description="the model file: .onnx, or .pt (TorchScript)")
    spec: str | dict[str, Any] | None = Field(
        None,
        description="the model's description: a YAML/JSON file, or the fields inline; "
        "default: the model's path with .yaml, .yml or .json",
    )
    property: str = Field(
        "unsafe_score",
        validation_alias=AliasChoices("as", "property"),
        description="the property the score is stored as (option `as` or `property`)",
    )
    mode: Literal["annotate", "filter"] = Field(
        "annotate", description="annotate: keep all, add the score; filter: drop high scores"
    )
    threshold: float | None = Field(None, description="filter: drop scores above this")
    batch_size: int = Field(32, ge=1, description="images per model call")
    threads: int | None = Field(
        1, ge=1, description="threads the model runs on (null: the library's default)"
    )
    max_pixels: int = Field(DEFAULT_MAX_PIXELS, gt=0, description="refuse larger headers")

    _spec: SafetySpec | None = PrivateAttr(None)
    _model: SafetyModel | None = PrivateAttr(None)

    def model_post_init(self, context: Any) -> None:
        where = f"stage 'image_safety' (model {self.model!r})"
        if (self.mode == "filter") != (self.threshold is not None):
            raise ConfigError(f"{where}: mode filter needs a threshold, and only it takes one")
        if self.property in RESERVED_COLUMNS:
            raise ConfigError(f"{where}: 'as' cannot be {self.property!r}, a document column")
        # A missing, corrupt or misdescribed model fails when the pipeline is built.
        self._spec = read_spec(self.model, self.spec)
        self._model = load_safety_model(self.model, self._spec, self.threads)

    def provenance(self) -> dict[str, Any]:
        assert self._spec is not None
        spec = self._spec.model_dump(mode="json", exclude_defaults=True)
        return {"model": self.model, "model_sha256": model_hash(self.model), "spec": spec}

    def node_paths(self) -> list[tuple[str, str, bool]]:
        paths = [(self.model, "image safety model", False)]
        if isinstance(self.spec, str):
            paths.append((self.spec, "image safety model description", False))
        return paths

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        assert self._spec is not None and self._model is not None
        results: list[Result] = list(docs)
        ready: list[tuple[int, np.ndarray]] = []
        for position, doc in enumerate(docs):
            image = upright_image(doc, self.max_pixels)
            if isinstance(image, Drop):
                results[position] = image
            else:
                ready.append((position, self._spec.pixels(flatten(image))))
        for start in range(0, len(ready), self.batch_size):
            chunk = ready[start : start + self.batch_size]
            scores = self._model.scores(np.stack([pixels for _, pixels in chunk]))
            for (position, _), score in zip(chunk, scores.tolist(), strict=True):
                results[position] = self._judge(docs[position], score)
        return results

    def _judge(self, doc: Document, score: float) -> Result:
        if not math.isfinite(score):
            raise ValueError(f"{doc.id}: the safety model scored the image {score}")
        if self.threshold is not None and score > self.threshold:
            return Drop("unsafe_image", {self.property: score, "threshold": self.threshold})
        doc.metadata[self.property] = score
        return doc
