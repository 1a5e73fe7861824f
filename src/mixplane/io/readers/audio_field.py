"""A record's audio field (`audio_key`) as media: bytes, a path, or a Hugging Face struct.

Example:
    >>> audio_media({"bytes": b"fLaC\\x00\\x00\\x00\\x22", "path": "a.flac"}, "data")
    {'flac': b'fLaC\\x00\\x00\\x00"'}
    >>> audio_media(None, "data") is None
    True
"""

from __future__ import annotations

import posixpath
from typing import Any

from mixplane.io.urls import url_filesystem
from mixplane.media import AUDIO_EXTENSIONS


def audio_media(
    value: Any, folder: str, storage_options: dict[str, Any] | None = None
) -> dict[str, bytes] | str | None:
    """The clip of a record as `{ext: bytes}`, None when the record has none, or why not.

    Bytes are taken as they are; text is a path to the clip, relative to `folder` (the
    record file's folder) unless absolute or a URL; a `{"bytes", "path"}` struct (how
    Hugging Face datasets store audio) by its bytes, else its path. The extension comes
    from the bytes' signature (WAV, FLAC, Ogg Vorbis or Opus, MP3), else the path's.
    """
    path = None
    if isinstance(value, dict):
        path = value.get("path")
        value = value.get("bytes") or path
    if value is None:
        return None
    if isinstance(value, str):
        path = value
        value = _read(value, folder, storage_options)
        if isinstance(value, str):
            return value
    if not isinstance(value, bytes | bytearray):
        return f"is {type(value).__name__}, expected bytes, a path or a {{bytes, path}} struct"
    data = bytes(value)
    return {extension_of(data, path): data}


def extension_of(data: bytes, path: str | None = None) -> str:
    """The audio format of `data` by its first bytes, else by `path`'s extension, else
    `bin`.

    Example:
        >>> extension_of(b"OggS" + bytes(24) + b"OpusHead"), extension_of(b"??", "x.MP3")
        ('opus', 'mp3')
    """
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data[:4] == b"fLaC":
        return "flac"
    if data[:4] == b"OggS":
        return "opus" if b"OpusHead" in data[:80] else "ogg"
    if data[:3] == b"ID3" or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "mp3"
    suffix = posixpath.splitext(path or "")[1].lower().lstrip(".")
    return suffix if suffix in AUDIO_EXTENSIONS else "bin"


def _read(path: str, folder: str, storage_options: dict[str, Any] | None) -> bytes | str:
    url = path if path.startswith("/") or "://" in path else posixpath.join(folder, path)
    try:
        fs, inner = url_filesystem(url, storage_options)
        return fs.cat_file(inner)
    except (OSError, ValueError) as error:
        return f"names {path!r}, which cannot be read ({type(error).__name__}: {error})"
