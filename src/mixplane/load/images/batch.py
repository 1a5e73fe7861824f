"""Turning stored samples into batch arrays: images decoded, resized and normalized, captions
tokenized and padded.

Images: the shorter side is resized to `image_size` (bicubic) and the center cropped to a
square, then scaled to [0, 1] and normalized with `mean`/`std` (CLIP's by default), as
float32 (3, H, W). A JPEG much larger than the target is decoded at a reduced scale
(Pillow's `Image.draft`: libjpeg scales by 1/2, 1/4 or 1/8 while decoding, never below the
target), which skips most of the decoding work. A `transform` (any callable taking a PIL
image, such as a torchvision `Compose`) replaces all of this.

Example:
    >>> from PIL import Image
    >>> images = ImagePreprocess(image_size=32)
    >>> photo = io.BytesIO()
    >>> Image.new("RGB", (120, 80), (255, 0, 0)).save(photo, "PNG")
    >>> array = images(photo.getvalue(), "example")
    >>> array.shape, array.dtype, round(float(array[0, 0, 0]), 2)
    ((3, 32, 32), dtype('float32'), 1.93)
    >>> CaptionTokenizer(lambda text: [len(w) for w in text.split()], 4)(["a red cat"])
    array([[1, 3, 3, 0]])
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from mixplane.error_text import describe_error
from mixplane.errors import InputError

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
# Decode at a reduced scale only when the image is at least this many times the target: a
# scale of 1/2 or less then always applies, and the bicubic resize after it still has a
# margin of pixels to filter from.
DRAFT_FACTOR = 2


class BadImageError(InputError):
    """A stored image that cannot be decoded (it passed processing, so its bytes changed)."""


class ImagePreprocess:
    """Encoded image bytes -> float32 (3, image_size, image_size), normalized."""

    def __init__(
        self,
        image_size: int = 224,
        mean: Sequence[float] = CLIP_MEAN,
        std: Sequence[float] = CLIP_STD,
        transform: Callable[[Image.Image], Any] | None = None,
    ):
        if image_size < 1:
            raise ValueError(f"image_size must be >= 1, got {image_size}")
        self.image_size = int(image_size)
        self.transform = transform
        mean_array = np.asarray(mean, dtype=np.float32)
        std_array = np.asarray(std, dtype=np.float32)
        # (pixel / 255 - mean) / std as one multiply and one subtract per value.
        self.scale = (1.0 / (255.0 * std_array)).astype(np.float32)
        self.offset = (mean_array / std_array).astype(np.float32)

    def __call__(self, data: bytes, where: str, out: np.ndarray | None = None) -> np.ndarray:
        """The image as float32 (3, H, W), written into `out` when given (a batch's row)."""
        try:
            image = Image.open(io.BytesIO(data))
            if self.transform is not None:
                image.load()
                array = _as_array(self.transform(image.convert("RGB")), where)
                if out is None:
                    return array
                out[...] = array
                return out
            return self.normalize(self.resize(image), out)
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as e:
            raise BadImageError(f"{where}: cannot decode the image ({describe_error(e)})") from None

    def resize(self, image: Image.Image) -> Image.Image:
        """Shorter side to `image_size`, center crop to a square, RGB."""
        size = self.image_size
        width, height = image.size
        if image.format == "JPEG" and min(width, height) >= DRAFT_FACTOR * size:
            image.draft("RGB", (size, size))
        if image.mode != "RGB":
            image = image.convert("RGB")
        # Coordinates of the original (draft may have shrunk the image by a power of two).
        width, height = image.size
        side = min(width, height)
        left, top = (width - side) / 2, (height - side) / 2
        box = (left, top, left + side, top + side)
        return image.resize((size, size), Image.Resampling.BICUBIC, box=box)

    def normalize(self, image: Image.Image, out: np.ndarray | None = None) -> np.ndarray:
        """RGB pixels -> normalized float32 (3, H, W), into `out` when given."""
        pixels = np.asarray(image).transpose(2, 0, 1)  # uint8 (3, H, W), a view
        if out is None:
            out = np.empty(pixels.shape, dtype=np.float32)
        out[...] = pixels  # one pass: reorder and widen to float32
        out *= self.scale[:, None, None]
        out -= self.offset[:, None, None]
        return out


def _as_array(value: Any, where: str) -> np.ndarray:
    """A transform's output as a float32 array (a torch tensor, numpy array or PIL image)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    array = np.asarray(value, dtype=np.float32)
    if array.ndim != 3:
        raise ValueError(f"{where}: the transform returned shape {array.shape}, not (C, H, W)")
    return array


class CaptionTokenizer:
    """Captions -> int64 (B, context_length) ids, truncated or padded with `pad_id`.

    `tokenizer` is a `tokenizers.Tokenizer` (captions encoded as one batch) or any callable
    taking a caption and returning its token ids.
    """

    def __init__(self, tokenizer: Any, context_length: int = 77, pad_id: int = 0):
        if context_length < 1:
            raise ValueError(f"context_length must be >= 1, got {context_length}")
        if not (hasattr(tokenizer, "encode_batch") or callable(tokenizer)):
            raise TypeError("tokenizer must be a tokenizers.Tokenizer or a callable")
        self.tokenizer = tokenizer
        self.context_length = int(context_length)
        self.pad_id = int(pad_id)

    def __call__(self, captions: Sequence[str]) -> np.ndarray:
        return self.encode(captions)[0]

    def encode(self, captions: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The padded ids and their mask (True over tokens, False over padding)."""
        if hasattr(self.tokenizer, "encode_batch"):
            ids = [e.ids for e in self.tokenizer.encode_batch(list(captions))]
        else:
            ids = [self.tokenizer(caption) for caption in captions]
        out = np.full((len(captions), self.context_length), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(captions), self.context_length), dtype=bool)
        for row, tokens in enumerate(ids):
            tokens = list(tokens)[: self.context_length]
            out[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = True
        return out, mask
