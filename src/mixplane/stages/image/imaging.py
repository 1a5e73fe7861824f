"""Decoding untrusted encoded images safely, and the conversions every image stage shares.

`decode` checks the file (`verify`) whose header `mixplane.io.image_header.open_header` read
(refusing decompression bombs by pixel count before any pixel is decoded), decodes it fully
(a truncated file fails: Pillow's `LOAD_TRUNCATED_IMAGES` stays off) and applies the EXIF
orientation. Failures come back as `Drop`s naming the problem, never as exceptions.

Example:
    >>> from io import BytesIO
    >>> from mixplane.io.image_header import open_header
    >>> buffer = BytesIO()
    >>> Image.new("RGB", (4, 2), "red").save(buffer, "PNG")
    >>> header = open_header(buffer.getvalue(), max_pixels=100)
    >>> decode(buffer.getvalue(), header, exif_orientation=True).size
    (4, 2)
"""

from __future__ import annotations

import io
import warnings

import numpy as np
from PIL import Image, ImageOps

from mixplane.document import Drop
from mixplane.io.image_header import Header, corrupt_image

#: Pillow's own default bomb limit (about 89 million pixels), the default of `max_pixels`.
DEFAULT_MAX_PIXELS = 89_478_485

WHITE, BLACK = (255, 255, 255), (0, 0, 0)
_ALPHA_MODES = ("RGBA", "RGBa", "LA", "La", "PA")
_RESAMPLING = {
    "nearest": Image.Resampling.NEAREST,
    "box": Image.Resampling.BOX,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
}


def decode(
    data: bytes,
    header: Header,
    exif_orientation: bool,
    draft: tuple[int, int] | None = None,
) -> Image.Image | Drop:
    """Verify and fully decode `data` (whose header is `header`), upright if
    `exif_orientation`; `draft` lets a JPEG decode at a reduced scale no smaller than that
    (width, height), given upright."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                image.verify()
            image = Image.open(io.BytesIO(data))
            if draft is not None and image.format == "JPEG":
                swap = exif_orientation and header.swaps_sides
                image.draft(image.mode, draft[::-1] if swap else draft)
            image.load()
    except Exception as error:  # untrusted bytes: Pillow raises many kinds of errors
        return corrupt_image(error)
    if exif_orientation and header.orientation != 1:
        try:
            image = ImageOps.exif_transpose(image)
        except Exception as error:
            return corrupt_image(error)
    return image


def to_rgb(image: Image.Image, background: tuple[int, int, int] = WHITE) -> Image.Image:
    """An RGB copy: transparency composed on `background` (white), CMYK and other modes
    converted, 16-bit and float samples scaled to 8 bits.

    Example:
        >>> to_rgb(Image.new("RGBA", (1, 1), (0, 0, 0, 0))).getpixel((0, 0))
        (255, 255, 255)
    """
    mode = image.mode
    if mode == "RGB":
        return image
    if mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        samples = np.asarray(image, dtype=np.float64)
        top = 65535.0 if samples.max(initial=0) > 255 or mode.startswith("I;16") else 255.0
        scaled = np.clip(np.rint(samples * (255.0 / top)), 0, 255).astype(np.uint8)
        return Image.fromarray(scaled, "L").convert("RGB")
    if mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    elif mode in ("PA", "LA", "La", "RGBa"):
        image = image.convert("RGBA")
    if image.mode == "RGBA":
        canvas = Image.new("RGB", image.size, background)
        canvas.paste(image, mask=image.getchannel("A"))
        return canvas
    return image.convert("RGB")


def has_alpha(image: Image.Image) -> bool:
    """Whether the image has transparency (an alpha channel or a transparent palette entry).

    Example:
        >>> has_alpha(Image.new("LA", (1, 1))), has_alpha(Image.new("RGB", (1, 1)))
        (True, False)
    """
    if image.mode == "P":
        return "transparency" in image.info
    return image.mode in _ALPHA_MODES


def resampling(name: str) -> Image.Resampling:
    """Pillow's resampling filter by its lowercase name."""
    return _RESAMPLING[name]


RESAMPLING_NAMES = tuple(_RESAMPLING)


def encode(image: Image.Image, image_format: str, quality: int, icc: bytes | None) -> bytes:
    """Encode an RGB image; the same pixels and options give the same bytes.

    Example:
        >>> encode(Image.new("RGB", (2, 2)), "png", 95, None)[:4]
        b'\\x89PNG'
    """
    buffer = io.BytesIO()
    options: dict = {"icc_profile": icc} if icc else {}
    if image_format == "jpeg":
        image.save(buffer, "JPEG", quality=quality, optimize=False, progressive=False, **options)
    elif image_format == "webp":
        image.save(buffer, "WEBP", quality=quality, method=4, **options)
    else:
        image.save(buffer, "PNG", optimize=False, **options)
    return buffer.getvalue()
