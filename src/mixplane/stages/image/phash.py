"""A 64-bit perceptual hash (DCT pHash) and Hamming distances between hashes.

The image is reduced to 32x32 grey levels; its 2-D DCT-II keeps the 8x8 lowest
frequencies, and each of those 64 coefficients gives one bit: 1 when above their median.
Re-encoding, resizing, mild crops and colour changes move few bits; different pictures
differ in about half of them. Coefficients are rounded before the comparison, so the bits
do not depend on the last digits of floating point (a flat image that is not black
hashes to the DC bit only).

Example:
    >>> from PIL import Image
    >>> f"{phash(Image.new('RGB', (40, 30), 'blue')):016x}"
    '8000000000000000'
    >>> hamming(np.array([0b1011], np.uint64), np.array([0b0001], np.uint64)).tolist()
    [2]
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from mixplane.stages.image.imaging import to_rgb

SIDE = 32  # the grey image the DCT runs on
BLOCK = 8  # the lowest frequencies kept: BLOCK * BLOCK = 64 bits


def _dct_matrix(n: int) -> np.ndarray:
    """The orthonormal DCT-II matrix: row k is the k-th cosine basis vector."""
    k = np.arange(n)[:, None]
    x = np.arange(n)[None, :]
    matrix = np.cos(np.pi * (2 * x + 1) * k / (2 * n)) * np.sqrt(2.0 / n)
    matrix[0] /= np.sqrt(2.0)
    return matrix


_DCT = _dct_matrix(SIDE)
_WEIGHTS = np.left_shift(np.uint64(1), np.arange(63, -1, -1, dtype=np.uint64))


def phash(image: Image.Image) -> int:
    """The 64-bit perceptual hash of an image (any mode; transparency counts as white:
    flatten it first to choose another background, see `background.flatten`).

    Bit 63 is the DC coefficient, then row-major over the 8x8 lowest frequencies.

    Example:
        >>> phash(Image.new("L", (8, 8), 90)) == phash(Image.new("L", (64, 64), 200))
        True
    """
    return phash_of(grey_pixels(image))


def grey_pixels(image: Image.Image) -> np.ndarray:
    """The image in grey levels (0-255) reduced to SIDE x SIDE, as float64: what the hash
    and the blank test (`background.contrast`) read."""
    grey = image if image.mode == "L" else to_rgb(image).convert("L")
    # Reducing by an integer factor first (box averages) is 4x faster on large images.
    small = grey.resize((SIDE, SIDE), Image.Resampling.LANCZOS, reducing_gap=2.0)
    return np.asarray(small, dtype=np.float64)


def phash_of(pixels: np.ndarray) -> int:
    """The hash of `grey_pixels` of an image."""
    low = (_DCT @ pixels @ _DCT.T)[:BLOCK, :BLOCK]
    low = np.round(low, 6).ravel()
    bits = low > np.median(low)
    return int(np.sum(_WEIGHTS[bits], dtype=np.uint64))


def phash_hex(value: int) -> str:
    """The 16 lowercase hex digits stored as the `phash` metadata."""
    return f"{value:016x}"


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise number of differing bits between uint64 arrays (broadcasting).

    Example:
        >>> hamming(np.array([0, 2**64 - 1], np.uint64), np.uint64(0)).tolist()
        [0, 64]
    """
    x = np.bitwise_xor(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    as_bytes = x[..., None].view(np.uint8)  # numpy < 2: count the bits of each byte
    return np.unpackbits(as_bytes, axis=-1).sum(axis=-1, dtype=np.int64)
