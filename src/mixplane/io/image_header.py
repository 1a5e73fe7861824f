"""Reading the header of an untrusted encoded image: its size, format and EXIF orientation,
without decoding a pixel.

Decompression bombs are refused by pixel count here, before anything is decoded. Failures
come back as `Drop`s naming the problem, never as exceptions. Shared by the image stages
(which decode after it) and the image shard writer (which records the size of images no
stage looked at). Needs Pillow (`pip install 'mixplane[images]'`).

Example:
    >>> from io import BytesIO
    >>> buffer = BytesIO()
    >>> Image.new("RGB", (4, 2), "red").save(buffer, "PNG")
    >>> header = open_header(buffer.getvalue(), max_pixels=100)
    >>> header.size, header.format
    ((4, 2), 'png')
    >>> open_header(b"", max_pixels=100)
    Drop(reason='empty_image', detail={'bytes': 0})
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from PIL import Image

from mixplane.document import Drop
from mixplane.error_text import describe_error, without_addresses

# EXIF orientations that swap width and height (a transpose or a quarter turn).
_SWAPPING = {5, 6, 7, 8}
_EXIF_ORIENTATION = 0x0112


@dataclass(frozen=True)
class Header:
    """What the header of an encoded image says, before decoding its pixels."""

    size: tuple[int, int]  # as stored, before the EXIF orientation
    format: str  # Pillow's format name, lowercased
    orientation: int  # EXIF orientation, 1 when absent

    @property
    def swaps_sides(self) -> bool:
        """Whether the EXIF orientation swaps width and height."""
        return self.orientation in _SWAPPING

    @property
    def oriented_size(self) -> tuple[int, int]:
        """(width, height) once the EXIF orientation is applied."""
        w, h = self.size
        return (h, w) if self.swaps_sides else (w, h)


def corrupt_image(error: Exception) -> Drop:
    """The exclusion of an image Pillow failed on, naming the error."""
    # Pillow names the unreadable file by its repr (`<_io.BytesIO object at 0x...>`): the
    # address would make the detail differ between identical runs.
    return Drop("corrupt_image", {"error": describe_error(error)})


def open_header(data: bytes, max_pixels: int) -> Header | Drop:
    """Read the header of `data`; a Drop for an empty, unreadable or too large image."""
    if not data:
        return Drop("empty_image", {"bytes": 0})
    try:
        # The size check below replaces Pillow's warning; Pillow still raises by itself
        # beyond twice its own limit, which is reported the same way.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                size, name = image.size, (image.format or "").lower()
                width, height = size
                if width <= 0 or height <= 0:
                    return Drop("empty_image", {"width": width, "height": height})
                if width * height > max_pixels:
                    detail = {"width": width, "height": height, "pixels": width * height}
                    return Drop("image_too_large", detail | {"max_pixels": max_pixels})
                # Only once the size is known to be safe: looking for a PNG's EXIF, Pillow
                # decodes the whole image (the chunk may follow the pixels).
                orientation = _orientation(image)
    except Image.DecompressionBombError as error:
        detail = {"error": without_addresses(str(error)), "max_pixels": max_pixels}
        return Drop("image_too_large", detail)
    except Exception as error:  # untrusted bytes: Pillow raises many kinds of errors
        return corrupt_image(error)
    return Header(size, name, orientation)


def _orientation(image: Image.Image) -> int:
    try:
        value = image.getexif().get(_EXIF_ORIENTATION, 1)
    except Exception:  # a broken EXIF block is ignored, like a missing one
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1
