"""Encoded images: originals (JPEG, PNG, WebP, some JPEGs with an EXIF orientation), their
planted near copies, and the broken files a pipeline must refuse.

Every function draws from the generator it is given and encodes with fixed settings, so the
bytes depend only on the generator's state.

Example:
    >>> import random
    >>> from PIL import Image
    >>> data, fmt = encode(Image.new("RGB", (40, 30), "red"), "png")
    >>> fmt, data[:4]
    ('png', b'\\x89PNG')
"""

from __future__ import annotations

import functools
import io
import random
import struct
import zlib

import numpy as np
from PIL import Image, ImageEnhance

from mixplane.synth.lexicon import between, pick

EXTENSIONS = {"jpeg": "jpg", "png": "png", "webp": "webp"}
EXIF_ORIENTATION = 0x0112
# How the stored pixels relate to the displayed ones for each EXIF orientation we plant:
# the stored image is the displayed one transposed by the inverse of what a viewer applies.
STORED_FROM_DISPLAYED = {
    3: Image.Transpose.ROTATE_180,
    6: Image.Transpose.ROTATE_90,
    8: Image.Transpose.ROTATE_270,
}
NEAR_KINDS = ("reencode", "resize", "crop", "colour")
MAX_CROP = 0.02
BOMB_SIDE = 30_000


def encode(image: Image.Image, fmt: str, quality: int = 90, exif: bytes | None = None):
    """`(bytes, fmt)` of `image` encoded as jpeg, png or webp with fixed settings."""
    buffer = io.BytesIO()
    if fmt == "jpeg":
        options = {"quality": quality} | ({"exif": exif} if exif else {})
        image.save(buffer, "JPEG", **options)
    elif fmt == "png":
        image.save(buffer, "PNG", compress_level=3)
    else:
        image.save(buffer, "WEBP", quality=quality, method=2)
    return buffer.getvalue(), fmt


def original_format(rng: random.Random) -> str:
    roll = rng.random()
    return "jpeg" if roll < 0.75 else "png" if roll < 0.9 else "webp"


def encode_original(
    rng: random.Random, image: Image.Image, fmt: str, orientation: int
) -> tuple[bytes, str]:
    """The original's file; with an orientation, stored turned and tagged so that a viewer
    applying the tag shows `image`."""
    quality = between(rng, 80, 95)
    if orientation:
        exif = Image.Exif()
        exif[EXIF_ORIENTATION] = orientation
        stored = image.transpose(STORED_FROM_DISPLAYED[orientation])
        return encode(stored, "jpeg", quality, exif.tobytes())
    return encode(image, fmt, quality)


def near_copy(
    rng: random.Random, image: Image.Image, fmt: str, kind: str
) -> tuple[Image.Image, bytes, str, str]:
    """`(pixels, bytes, fmt, detail)` of a near copy of `image` made by `kind`."""
    w, h = image.size
    if kind == "reencode":
        target = pick(rng, [f for f in ("jpeg", "png", "webp") if f != fmt] + ["jpeg"])
        quality = between(rng, 55, 75)
        data, fmt = encode(image, target, quality)
        return image, data, fmt, f"{target} q{quality}"
    if kind == "resize":
        scale = rng.uniform(0.5, 0.9)
        size = (max(16, round(w * scale)), max(16, round(h * scale)))
        copy = image.resize(size, Image.Resampling.BILINEAR)
        detail = f"scale {scale:.2f}"
    elif kind == "crop":
        left, top, right, bottom = (rng.uniform(0.005, MAX_CROP) for _ in range(4))
        box = (round(w * left), round(h * top), w - round(w * right), h - round(h * bottom))
        copy = image.crop(box)
        detail = f"crop {left:.3f} {top:.3f} {right:.3f} {bottom:.3f}"
    else:
        brightness, contrast = rng.uniform(0.95, 1.05), rng.uniform(0.95, 1.05)
        hue = between(rng, 2, 5) * pick(rng, (-1, 1))
        copy = ImageEnhance.Contrast(ImageEnhance.Brightness(image).enhance(brightness))
        copy = _shift_hue(copy.enhance(contrast), hue)
        detail = f"brightness {brightness:.3f} contrast {contrast:.3f} hue {hue}"
    data, fmt = encode(copy, fmt, between(rng, 80, 95))
    return copy, data, fmt, detail


def _shift_hue(image: Image.Image, steps: int) -> Image.Image:
    hsv = np.asarray(image.convert("HSV")).copy()
    hsv[..., 0] = (hsv[..., 0].astype(np.int16) + steps) % 256
    return Image.fromarray(hsv, "HSV").convert("RGB")


def corrupt_bytes(rng: random.Random) -> bytes:
    """Random bytes of a plausible size (no image format starts like this)."""
    data = bytearray(rng.randbytes(between(rng, 2_000, 20_000)))
    data[0] = 0x00  # never a JPEG/PNG/WebP/GIF/BMP signature by chance
    return bytes(data)


def truncated(data: bytes, rng: random.Random) -> bytes:
    """The first 30-70% of an encoded image: the header parses, the pixels do not."""
    return data[: round(len(data) * rng.uniform(0.3, 0.7))]


def tiny_size(rng: random.Random) -> tuple[int, int]:
    return between(rng, 6, 28), between(rng, 6, 28)


def extreme_size(rng: random.Random) -> tuple[int, int]:
    """A strip, 8:1 to 50:1, lying or standing."""
    long_side, short_side = between(rng, 600, 1000), between(rng, 16, 60)
    if long_side / short_side < 8:
        short_side = long_side // 8
    return (long_side, short_side) if rng.random() < 0.5 else (short_side, long_side)


@functools.cache
def bomb_png(side: int = BOMB_SIDE) -> bytes:
    """A PNG declaring `side` x `side` pixels of one colour (1-bit palette) in ~100 KB:
    decoding it would take side^2 bytes, and Pillow refuses it as a decompression bomb."""
    compressor = zlib.compressobj(9)
    row = b"\x00" * (1 + (side + 7) // 8)  # filter byte 0, then all pixels index 0
    block, rows = row * 1000, []
    for start in range(0, side, 1000):
        rows.append(compressor.compress(block if side - start >= 1000 else row * (side - start)))
    idat = b"".join(rows) + compressor.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", side, side, 1, 3, 0, 0, 0)
    palette = bytes((40, 120, 200, 0, 0, 0))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"PLTE", palette)
        + chunk(b"IDAT", idat)
        + chunk(b"IEND", b"")
    )
