"""Small previews of the images in image shards, for the dashboard.

A sample is read with one ranged read of its tar (located by the shard's index) and only if
it is at most `MAX_SAMPLE_BYTES`; an image of more than `MAX_PIXELS` is refused before it is
decoded. The preview fits in `size` x `size` pixels: JPEG, or PNG when the image has
transparency. Needs Pillow (`pip install 'mixplane[images]'`).

Example:
    >>> data, media_type = thumbnail(open("cat.png", "rb").read(), 128)  # doctest: +SKIP
    >>> media_type  # doctest: +SKIP
    'image/png'
"""

from __future__ import annotations

import io
from typing import Any

from mixplane.errors import MixplaneError
from mixplane.media import IMAGE_EXTENSIONS
from mixplane.store.images import ImageShardReader

MAX_SAMPLE_BYTES = 64 << 20
MAX_PIXELS = 64_000_000
SIZES = (16, 512)  # smallest and largest side of a thumbnail


class NoThumbnail(MixplaneError):
    """The sample cannot be previewed (too large, no image, or an image Pillow cannot read)."""


class NoPillow(NoThumbnail):
    """This installation cannot decode images at all."""


def bounded_sample(
    uri: str,
    stem: str,
    index: int,
    storage_options: dict[str, Any] | None,
    limit: int,
    refusal: type[MixplaneError],
    what: str,
) -> dict[str, Any]:
    """Sample `index` of the media shard `uri/stem` (`ImageShardReader.sample`), read only if
    its tar holds it in at most `limit` bytes; else `refusal` is raised, saying `what` is
    made of samples up to that size."""
    reader = ImageShardReader(uri, stem, storage_options)
    start, end = reader.byte_range(index)
    if end - start > limit:
        raise refusal(
            f"{stem} sample {index} is {end - start:,} bytes; {what} up to {limit:,} bytes"
        )
    return reader.sample(index)


def sample_image(
    uri: str, stem: str, index: int, storage_options: dict[str, Any] | None = None
) -> bytes:
    """The encoded image of sample `index` of the image shard `uri/stem`."""
    what = "previews are made of samples"
    sample = bounded_sample(uri, stem, index, storage_options, MAX_SAMPLE_BYTES, NoThumbnail, what)
    for ext in IMAGE_EXTENSIONS:
        if ext in sample:
            return bytes(sample[ext])
    raise NoThumbnail(f"{stem} sample {index} holds no image")


def thumbnail(image: bytes, size: int) -> tuple[bytes, str]:
    """`(encoded preview, media type)` of an encoded image, at most `size` pixels a side."""
    try:
        from PIL import Image, UnidentifiedImageError
        from PIL.Image import DecompressionBombError
    except ImportError:
        raise NoPillow("previews need Pillow: pip install 'mixplane[images]'") from None
    try:
        with Image.open(io.BytesIO(image)) as opened:
            width, height = opened.size
            if width * height > MAX_PIXELS:
                raise NoThumbnail(
                    f"the image is {width} x {height} pixels; previews are made of images up "
                    f"to {MAX_PIXELS:,} pixels"
                )
            opened.draft("RGB", (size, size))  # JPEG: decode at a fraction of the size
            picture = opened.convert("RGBA" if _transparent(opened) else "RGB")
    except (UnidentifiedImageError, DecompressionBombError, OSError, ValueError) as error:
        raise NoThumbnail(f"the image cannot be read: {error}") from None
    picture.thumbnail((size, size))
    out = io.BytesIO()
    if picture.mode == "RGBA":
        picture.save(out, "PNG", optimize=True)
        return out.getvalue(), "image/png"
    picture.save(out, "JPEG", quality=85)
    return out.getvalue(), "image/jpeg"


def _transparent(image: Any) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
