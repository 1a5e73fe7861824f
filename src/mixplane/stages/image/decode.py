"""`decode_image`: check that a sample's image decodes, and describe it.

Example pipeline step:

    - decode_image: {min_image_size: 64, max_aspect_ratio: 3.0}
"""

from __future__ import annotations

from typing import ClassVar

from PIL import Image
from pydantic import Field, field_validator

from mixplane.document import Document, Drop
from mixplane.io.image_header import Header, open_header
from mixplane.media import extension_for, image_of, no_image, set_image
from mixplane.stages.base import Result, Stage
from mixplane.stages.image.background import (
    BLANK_CONTRAST,
    Background,
    contrast_of,
    flatten,
    parse_colour,
)
from mixplane.stages.image.imaging import DEFAULT_MAX_PIXELS, decode, encode, has_alpha
from mixplane.stages.image.phash import grey_pixels, phash_hex, phash_of


class DecodeImage(Stage):
    """Decodes and validates each sample's image; adds its size, format and pHash.

    Checks, in order, each failure excluding the sample with its reason: an image in
    `media` (`no_image`); a non-empty file (`empty_image`); a header within `max_pixels`
    and `max_image_area` (`image_too_large`, refused before any pixel is decoded); the
    shorter side at least `min_image_size` (`image_too_small`); the long/short side ratio
    at most `max_aspect_ratio` (`aspect_ratio`); the whole file decodes (`corrupt_image`,
    truncated files included, with Pillow's error in the detail); the image is not blank
    (`blank_image`, unless `drop_blank` is off; see `background`).

    Transparent images are read on `background` (`auto`: white or black, whichever leaves
    more contrast; or a colour). A kept sample gets `original_width`, `original_height`,
    `width`, `height` (upright, once the EXIF orientation is applied), `image_format`,
    `image_bytes`, `phash` (the 64-bit DCT hash of the upright image as 16 hex digits;
    `dedup_image` uses it), `contrast` (the standard deviation of its grey levels at
    32 x 32) and `blank` (contrast below `blank_contrast`). An image whose EXIF orientation
    is not upright is stored again upright (JPEG at `quality`, other formats as PNG), so
    that its bytes match `width` and `height`.

    Example:
        >>> DecodeImage().apply(Document("a", "a caption", "web"))
        Drop(reason='no_image', detail={'media': []})
    """

    name: ClassVar[str] = "decode_image"
    adds: ClassVar[tuple[str, ...]] = (
        "original_width",
        "original_height",
        "width",
        "height",
        "image_format",
        "image_bytes",
        "phash",
        "contrast",
        "blank",
    )

    max_pixels: int = Field(
        DEFAULT_MAX_PIXELS, gt=0, description="refuse headers claiming more pixels (bombs)"
    )
    max_image_area: int | None = Field(None, gt=0, description="drop larger images (pixels)")
    min_image_size: int = Field(0, ge=0, description="drop images whose shorter side is less")
    max_aspect_ratio: float | None = Field(
        None, ge=1, description="drop images whose long/short side ratio is larger"
    )
    exif_orientation: bool = Field(True, description="apply the EXIF orientation tag")
    phash: bool = Field(True, description="add the perceptual hash `phash`")
    quality: int = Field(95, ge=1, le=100, description="JPEG quality when storing upright")
    background: Background = Field(
        "auto",
        description="colour transparent images are read on: auto (white or black, whichever "
        "leaves more contrast), a name, #rrggbb or [r, g, b]",
    )
    blank_contrast: float = Field(
        BLANK_CONTRAST,
        ge=0,
        description="images whose grey levels at 32x32 vary less (standard deviation, "
        "0-255) are blank",
    )
    drop_blank: bool = Field(
        True, description="exclude blank images (blank_image); off: keep them, `blank` true"
    )

    @field_validator("background", mode="before")
    @classmethod
    def _colour(cls, value):
        return parse_colour(value)

    def apply(self, doc: Document) -> Result:
        found = image_of(doc)
        if found is None:
            return no_image(doc)
        _, data = found
        header = check_header(data, self.max_pixels, self.max_image_area)
        if isinstance(header, Drop):
            return header
        width, height = header.oriented_size
        short, long = min(width, height), max(width, height)
        if short < self.min_image_size:
            return Drop("image_too_small", {"short_side": short, "min": self.min_image_size})
        if self.max_aspect_ratio is not None and long / short > self.max_aspect_ratio:
            detail = {"aspect_ratio": round(long / short, 4), "max": self.max_aspect_ratio}
            return Drop("aspect_ratio", detail)
        image = decode(data, header, self.exif_orientation)
        if isinstance(image, Drop):
            return image
        rgb = flatten(image, self.background)
        pixels = grey_pixels(rgb)
        level = contrast_of(pixels)
        blank = level < self.blank_contrast
        if blank and self.drop_blank:
            detail = {"contrast": level, "blank_contrast": self.blank_contrast}
            return Drop("blank_image", detail | {"transparent": has_alpha(image)})
        name = header.format
        if self.exif_orientation and header.orientation != 1:
            name = "jpeg" if header.format == "jpeg" else "png"
            data = encode(rgb, name, self.quality, image.info.get("icc_profile"))
            set_image(doc, extension_for(name), data)
        meta = doc.metadata
        meta["original_width"], meta["original_height"] = width, height
        meta["width"], meta["height"] = image.size
        meta["image_format"] = name
        meta["image_bytes"] = len(data)
        if self.phash:
            meta["phash"] = phash_hex(phash_of(pixels))
        meta["contrast"], meta["blank"] = level, blank
        return doc


def check_header(data: bytes, max_pixels: int, max_area: int | None) -> Header | Drop:
    """The image's header, or the Drop for an empty, unreadable or too large image."""
    limit = min(max_pixels, max_area) if max_area is not None else max_pixels
    return open_header(data, limit)


def upright_image(doc: Document, max_pixels: int) -> Image.Image | Drop:
    """The document's image, decoded and upright, or the Drop saying why it has none that
    decodes (`decode_image`'s reasons)."""
    found = image_of(doc)
    if found is None:
        return no_image(doc)
    header = check_header(found[1], max_pixels, None)
    if isinstance(header, Drop):
        return header
    return decode(found[1], header, exif_orientation=True)
