"""`resize_image`: bring images to a training size and encode them in one format.

Example pipeline step:

    - resize_image: {size: 256, mode: center_crop, encode_format: jpeg, quality: 95}
"""

from __future__ import annotations

from typing import ClassVar, Literal

from PIL import Image
from pydantic import Field, field_validator

from mixplane.document import Document, Drop
from mixplane.media import extension_for, image_of, no_image, set_image
from mixplane.stages.base import Result, Stage
from mixplane.stages.image.background import Background, flatten, parse_colour
from mixplane.stages.image.decode import check_header
from mixplane.stages.image.imaging import (
    DEFAULT_MAX_PIXELS,
    RESAMPLING_NAMES,
    decode,
    encode,
    resampling,
)

Mode = Literal["keep_ratio", "center_crop", "border", "none"]
# A JPEG is decoded at a reduced DCT scale when that still leaves this many times the
# target size: the reduction is much faster and the resampling after it keeps the quality.
_DRAFT_MARGIN = 2
# Large reductions first average pixel blocks, then resample from this many times the target.
_REDUCING_GAP = 3.0


class ResizeImage(Stage):
    """Resizes each sample's image (upright, as RGB) and stores it re-encoded.

    Modes: `keep_ratio` scales the shorter side to `size`; `center_crop` does the same then
    keeps the central `size` x `size` square; `border` scales the longer side to `size`
    and pads to a square with `border_color`; `none` keeps the size. `max_side` then caps
    the longer side. Images are never enlarged unless `upscale` (a small image keeps its
    size; `center_crop` then crops to its shorter side). The result is encoded as
    `encode_format` (`jpeg` at `quality`, `webp` at `quality`, or lossless `png`): the same
    input and options always give the same bytes. Transparency is composed on
    `background` (`auto`: white or black, whichever leaves more contrast). Updates the
    media (its extension follows the format), `width`, `height`, `image_format` and
    `image_bytes`; sets `original_width`/`original_height` if `decode_image` did not.
    Unreadable images are excluded with `decode_image`'s reasons.

    Example:
        >>> ResizeImage(size=64, mode="border", border_color="white").border_color
        (255, 255, 255)
    """

    name: ClassVar[str] = "resize_image"
    adds: ClassVar[tuple[str, ...]] = ("width", "height", "image_format", "image_bytes")

    size: int = Field(256, ge=1, description="target side in pixels (see mode)")
    mode: Mode = Field("keep_ratio", description="keep_ratio, center_crop, border or none")
    max_side: int | None = Field(None, ge=1, description="cap on the longer side")
    upscale: bool = Field(False, description="enlarge images smaller than the target")
    border_color: tuple[int, int, int] = Field(
        (0, 0, 0), description="padding colour of mode border: a name, #hex or [r, g, b]"
    )
    background: Background = Field(
        "auto",
        description="colour transparent images are put on: auto (white or black, whichever "
        "leaves more contrast, as decode_image reads them), a name, #rrggbb or [r, g, b]",
    )
    resample: Literal[RESAMPLING_NAMES] = Field("lanczos", description="resampling filter")
    encode_format: Literal["jpeg", "webp", "png"] = Field("jpeg", description="output format")
    quality: int = Field(95, ge=1, le=100, description="JPEG/WebP quality")
    keep_unchanged: bool = Field(
        False,
        description="keep the original bytes of an image already upright, of the target "
        "size and in encode_format (no second lossy encoding)",
    )
    exif_orientation: bool = Field(True, description="apply the EXIF orientation tag")
    max_pixels: int = Field(DEFAULT_MAX_PIXELS, gt=0, description="refuse larger headers")

    @field_validator("border_color", "background", mode="before")
    @classmethod
    def _color(cls, value):
        return parse_colour(value)

    def geometry(self, width: int, height: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """The scaled size of a `width` x `height` image and the size of the output.

        Example:
            >>> ResizeImage(size=64, mode="center_crop").geometry(200, 100)
            ((128, 64), (64, 64))
        """
        short, long = min(width, height), max(width, height)
        scale = {
            "keep_ratio": self.size / short,
            "center_crop": self.size / short,
            "border": self.size / long,
            "none": 1.0,
        }[self.mode]
        if self.max_side is not None:
            scale = min(scale, self.max_side / long)
        if not self.upscale:
            scale = min(scale, 1.0)
        scaled = (max(1, round(width * scale)), max(1, round(height * scale)))
        if self.mode == "center_crop":
            side = min(scaled)
            return scaled, (side, side)
        if self.mode == "border":
            side = max(scaled)
            return scaled, (side, side)
        return scaled, scaled

    def apply(self, doc: Document) -> Result:
        found = image_of(doc)
        if found is None:
            return no_image(doc)
        _, data = found
        header = check_header(data, self.max_pixels, None)
        if isinstance(header, Drop):
            return header
        width, height = header.oriented_size if self.exif_orientation else header.size
        scaled, output = self.geometry(width, height)
        meta = doc.metadata
        meta.setdefault("original_width", width)
        meta.setdefault("original_height", height)
        upright = header.orientation == 1 or not self.exif_orientation
        if (
            self.keep_unchanged
            and upright
            and output == (width, height)
            and header.format == self.encode_format
        ):
            _describe(meta, output, header.format, len(data))
            return doc
        draft = (scaled[0] * _DRAFT_MARGIN, scaled[1] * _DRAFT_MARGIN)
        draft = draft if draft[0] < width and draft[1] < height else None
        image = decode(data, header, self.exif_orientation, draft)
        if isinstance(image, Drop):
            return image
        icc = image.info.get("icc_profile")
        result = self._reshape(flatten(image, self.background), scaled, output)
        encoded = encode(result, self.encode_format, self.quality, icc)
        set_image(doc, extension_for(self.encode_format), encoded)
        _describe(meta, result.size, self.encode_format, len(encoded))
        return doc

    def _reshape(
        self, image: Image.Image, scaled: tuple[int, int], output: tuple[int, int]
    ) -> Image.Image:
        filter_ = resampling(self.resample)
        width, height = image.size  # may be a reduced JPEG decode
        if self.mode == "center_crop":
            # Crop in source coordinates and resample only the square that is kept.
            fx, fy = width / scaled[0], height / scaled[1]
            left = (scaled[0] - output[0]) / 2 * fx
            top = (scaled[1] - output[1]) / 2 * fy
            box = (left, top, left + output[0] * fx, top + output[1] * fy)
            if box == (0, 0, width, height) and image.size == output:
                return image
            return image.resize(output, filter_, box=box, reducing_gap=_REDUCING_GAP)
        resized = (
            image
            if image.size == scaled
            else image.resize(scaled, filter_, reducing_gap=_REDUCING_GAP)
        )
        if self.mode != "border" or resized.size == output:
            return resized
        canvas = Image.new("RGB", output, self.border_color)
        canvas.paste(resized, ((output[0] - scaled[0]) // 2, (output[1] - scaled[1]) // 2))
        return canvas


def _describe(meta: dict, size: tuple[int, int], image_format: str, length: int) -> None:
    meta["width"], meta["height"] = size
    meta["image_format"] = image_format
    meta["image_bytes"] = length
