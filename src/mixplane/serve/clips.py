"""The audio clips of audio shards, as stored, for the dashboard's players.

A sample is read with one ranged read of its tar (located by the shard's index) and only if
it is at most `MAX_CLIP_BYTES`: a larger clip is refused rather than streamed. The clip is
sent as it was stored (no decoding, no re-encoding), typed by its member's extension.

Example:
    >>> data, media_type = sample_clip("out/speech", "part-00000", 3)  # doctest: +SKIP
    >>> media_type  # doctest: +SKIP
    'audio/flac'
"""

from __future__ import annotations

from typing import Any

from mixplane.errors import MixplaneError
from mixplane.media import AUDIO_EXTENSIONS
from mixplane.serve.thumbnails import bounded_sample

MAX_CLIP_BYTES = 64 << 20  # of one sample (clip, transcript, metadata) in its tar
MEDIA_TYPES = {
    "flac": "audio/flac",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
    "oga": "audio/ogg",
    "opus": "audio/opus",
}
assert set(MEDIA_TYPES) == set(AUDIO_EXTENSIONS), "every stored audio format has its type"


class NoClip(MixplaneError):
    """The sample's clip cannot be sent (too large, or no clip in the sample)."""


def sample_clip(
    uri: str, stem: str, index: int, storage_options: dict[str, Any] | None = None
) -> tuple[bytes, str]:
    """`(clip bytes, media type)` of sample `index` of the audio shard `uri/stem`."""
    what = "the service sends clips of samples"
    sample = bounded_sample(uri, stem, index, storage_options, MAX_CLIP_BYTES, NoClip, what)
    for ext in AUDIO_EXTENSIONS:
        if ext in sample:
            return bytes(sample[ext]), MEDIA_TYPES[ext]
    raise NoClip(f"{stem} sample {index} holds no audio clip")
