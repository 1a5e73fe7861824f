"""`clip_score`: image-caption similarity from a CLIP model (open_clip), as a filter.

Example pipeline step (needs `pip install open_clip_torch`):

    - clip_score: {model: ViT-B-32, pretrained: openai, min_score: 0.28, batch_size: 64}
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, PrivateAttr

from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.stages.base import Result, Stage
from mixplane.stages.image.background import flatten
from mixplane.stages.image.decode import upright_image
from mixplane.stages.image.imaging import DEFAULT_MAX_PIXELS


class ClipScore(Stage):
    """Scores each sample by the cosine similarity of its image and caption embeddings.

    The score is stored as `clip_score`; below `min_score` (None: keep all) the sample is
    excluded with reason `low_clip_score`. Samples without a readable image are excluded
    like `decode_image` does. Runs on the CPU unless `device` says otherwise; the model is
    loaded once per worker in `setup`.

    Example:
        >>> ClipScore(min_score=0.3).min_score
        0.3
    """

    name: ClassVar[str] = "clip_score"
    adds: ClassVar[tuple[str, ...]] = ("clip_score",)

    model: str = Field("ViT-B-32", description="open_clip model name")
    pretrained: str = Field("openai", description="open_clip pretrained weights tag")
    min_score: float | None = Field(0.28, description="drop samples scoring lower")
    batch_size: int = Field(64, ge=1, description="samples per forward pass")
    device: str = Field("cpu", description="torch device")
    max_pixels: int = Field(DEFAULT_MAX_PIXELS, gt=0, description="refuse larger headers")

    _state: Any = PrivateAttr(None)

    def setup(self) -> None:
        try:
            import open_clip
            import torch
        except ImportError as error:
            raise ConfigError(
                f"stage clip_score needs open_clip ({error}): pip install open_clip_torch "
                "(and torch), or remove clip_score from the pipeline"
            ) from None
        model, _, preprocess = open_clip.create_model_and_transforms(
            self.model, pretrained=self.pretrained, device=self.device
        )
        model.eval()
        tokenizer = open_clip.get_tokenizer(self.model)
        self._state = (torch, model, preprocess, tokenizer)

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        if self._state is None:
            self.setup()
        results: list[Result] = list(docs)
        ready: list[tuple[int, Any]] = []
        for position, doc in enumerate(docs):
            image = self._image(doc)
            if isinstance(image, Drop):
                results[position] = image
            else:
                ready.append((position, image))
        for start in range(0, len(ready), self.batch_size):
            chunk = ready[start : start + self.batch_size]
            scores = self._scores([docs[p].text for p, _ in chunk], [i for _, i in chunk])
            for (position, _), score in zip(chunk, scores, strict=True):
                doc = docs[position]
                if self.min_score is not None and score < self.min_score:
                    detail = {"clip_score": round(score, 4), "min_score": self.min_score}
                    results[position] = Drop("low_clip_score", detail)
                else:
                    doc.metadata["clip_score"] = score
        return results

    def _image(self, doc: Document):
        image = upright_image(doc, self.max_pixels)
        return image if isinstance(image, Drop) else flatten(image)

    def _scores(self, captions: list[str], images: list) -> list[float]:
        torch, model, preprocess, tokenizer = self._state
        with torch.no_grad():
            pixels = torch.stack([preprocess(image) for image in images]).to(self.device)
            tokens = tokenizer(captions).to(self.device)
            image_features = model.encode_image(pixels)
            text_features = model.encode_text(tokens)
            image_features = image_features / image_features.norm(dim=-1, keepdim=True)
            text_features = text_features / text_features.norm(dim=-1, keepdim=True)
            similarity = (image_features * text_features).sum(dim=-1)
        return [float(value) for value in similarity.cpu().tolist()]
