"""Where a document keeps its image or audio clip: the first image (or audio) extension
present in `doc.media`.

Beside `Document`, as part of the record model: the readers, the image shard store, the
image stages, the image loader and the dashboard's previews all find images the same way.

Example:
    >>> doc = Document("a", "a cat", "web", media={"txt": b"a cat", "jpg": b"\\xff\\xd8"})
    >>> image_of(doc)
    ('jpg', b'\\xff\\xd8')
    >>> set_image(doc, "png", b"\\x89PNG")
    >>> sorted(doc.media)
    ['png', 'txt']
"""

from __future__ import annotations

from mixplane.document import Document, Drop

#: Extensions recognised as the image of a sample, in preference order.
IMAGE_EXTENSIONS: tuple[str, ...] = ("jpg", "jpeg", "png", "webp", "bmp", "gif", "tif", "tiff")
#: Extensions recognised as the audio clip of a sample, in preference order.
AUDIO_EXTENSIONS: tuple[str, ...] = ("flac", "wav", "mp3", "ogg", "oga", "opus")
#: Media a reader keeps as bytes, never as a small text field.
MEDIA_EXTENSIONS: tuple[str, ...] = IMAGE_EXTENSIONS + AUDIO_EXTENSIONS

# Pillow format name (lowercased) -> the extension an encoded image of that format is stored
# under; formats not listed use their own name.
_FORMAT_EXTENSIONS = {"jpeg": "jpg", "tiff": "tif"}


def image_of(doc: Document) -> tuple[str, bytes] | None:
    """The (extension, encoded bytes) of the document's image, or None if it has none.

    Example:
        >>> image_of(Document("a", "", "web"))  # a text document
    """
    media = doc.media
    if not media:
        return None
    for ext in IMAGE_EXTENSIONS:
        data = media.get(ext)
        if data is not None:
            return ext, data
    return None


def no_image(doc: Document) -> Drop:
    """The exclusion of a document that has no image, naming the media it has instead.

    Example:
        >>> no_image(Document("a", "a cat", "web", media={"html": b"<html>"}))
        Drop(reason='no_image', detail={'media': ['html']})
    """
    return Drop("no_image", {"media": sorted(doc.media or {})})


def set_image(doc: Document, ext: str, data: bytes) -> None:
    """Replace the document's image by `data` stored under `ext`; other media stay.

    Example:
        >>> doc = Document("a", "", "web", media={"jpeg": b"old"})
        >>> set_image(doc, "webp", b"new")
        >>> doc.media
        {'webp': b'new'}
    """
    media = {k: v for k, v in (doc.media or {}).items() if k not in IMAGE_EXTENSIONS}
    media[ext.lower().lstrip(".")] = data
    doc.media = media


def extension_for(image_format: str) -> str:
    """The file extension for an encoded image of a Pillow format name.

    Example:
        >>> extension_for("JPEG")
        'jpg'
    """
    name = image_format.lower()
    return _FORMAT_EXTENSIONS.get(name, name)


def audio_of(doc: Document) -> tuple[str, bytes] | None:
    """The (extension, encoded bytes) of the document's audio clip, or None if it has none.

    Example:
        >>> audio_of(Document("a", "hello", "web", media={"txt": b"hello", "wav": b"RIFF"}))
        ('wav', b'RIFF')
    """
    media = doc.media
    if not media:
        return None
    for ext in AUDIO_EXTENSIONS:
        data = media.get(ext)
        if data is not None:
            return ext, data
    return None


def no_audio(doc: Document) -> Drop:
    """The exclusion of a document that has no audio clip, naming the media it has instead.

    Example:
        >>> no_audio(Document("a", "hello", "web", media={"jpg": b"\\xff"}))
        Drop(reason='no_audio', detail={'media': ['jpg']})
    """
    return Drop("no_audio", {"media": sorted(doc.media or {})})


def set_audio(doc: Document, ext: str, data: bytes) -> None:
    """Replace the document's audio clip by `data` stored under `ext`; other media stay.

    Example:
        >>> doc = Document("a", "", "web", media={"mp3": b"old", "json": b"{}"})
        >>> set_audio(doc, "flac", b"new")
        >>> doc.media
        {'json': b'{}', 'flac': b'new'}
    """
    media = {k: v for k, v in (doc.media or {}).items() if k not in AUDIO_EXTENSIONS}
    media[ext.lower().lstrip(".")] = data
    doc.media = media
