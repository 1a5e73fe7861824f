"""Transparent images on a background, and blank images.

A transparent image has to be put on some colour before it is hashed, scored or stored as
RGB. Always white turns a white logo on a transparent background into a white square; the
`auto` background takes white or black, whichever leaves the image more contrast (so a dark
drawing stays on white and a white logo goes on black), white when they tie.

An image is blank when its grey levels (0-255), reduced to 32 x 32 as the perceptual hash
reads them, have a standard deviation (`contrast`) below a limit: a single colour, a
white page with JPEG noise, a logo that vanished on its background. Blank images carry
no picture for training, and they all share one perceptual hash, so `decode_image` excludes
them by default (`blank_image`).

Example:
    >>> from PIL import Image
    >>> logo = Image.new("RGBA", (64, 64), (255, 255, 255, 0))
    >>> logo.paste((255, 255, 255, 255), (16, 16, 48, 48))  # a white square, nothing else
    >>> contrast(flatten(logo, WHITE)), contrast(flatten(logo, "auto"))
    (0.0, 108.39)
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from PIL import Image, ImageColor

from mixplane.stages.image.imaging import BLACK, WHITE, has_alpha, to_rgb
from mixplane.stages.image.phash import grey_pixels

Colour = tuple[int, int, int]
Background = Literal["auto"] | Colour
#: Contrast below which an image counts as blank (grey levels 0-255 at 32 x 32): flat
#: colours and JPEG noise on them measure under 1, a clear sky's gradient about 5 and up.
BLANK_CONTRAST = 2.0


def parse_colour(value: object) -> object:
    """A colour option as (r, g, b): a name (`white`), `#rrggbb` or a list of 3 numbers;
    `auto` and other values are left as they are, for validation to take or refuse.

    Example:
        >>> parse_colour("#00ff00"), parse_colour([1, 2, 3]), parse_colour("auto")
        ((0, 255, 0), [1, 2, 3], 'auto')
    """
    if isinstance(value, str) and value != "auto":
        try:
            return ImageColor.getrgb(value)[:3]
        except ValueError as error:
            raise ValueError(f"not a colour: {value!r} (a name, #rrggbb or [r, g, b])") from error
    return value


def flatten(image: Image.Image, background: Background = "auto") -> Image.Image:
    """The image as RGB, its transparency composed on `background` (see the module).

    Example:
        >>> dot = Image.new("LA", (8, 8), (0, 0)); dot.putpixel((4, 4), (250, 255))
        >>> flatten(dot).getpixel((0, 0)), flatten(dot, (9, 9, 9)).getpixel((0, 0))
        ((0, 0, 0), (9, 9, 9))
    """
    if not has_alpha(image):
        return to_rgb(image)
    if background != "auto":
        return to_rgb(image, background)
    on_white, on_black = to_rgb(image, WHITE), to_rgb(image, BLACK)
    return on_black if contrast(on_black) > contrast(on_white) else on_white


def contrast(image: Image.Image) -> float:
    """The standard deviation of the image's grey levels at 32 x 32 (0 for one colour).

    Example:
        >>> contrast(Image.new("RGB", (50, 40), "navy"))
        0.0
    """
    return contrast_of(grey_pixels(image))


def contrast_of(pixels: np.ndarray) -> float:
    """`contrast` from the grey pixels `phash.grey_pixels` gives, rounded to 0.01."""
    return round(float(np.std(pixels)), 2)
