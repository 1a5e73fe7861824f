"""`decode_audio`: check that a sample's audio clip decodes whole, and describe it.

Example pipeline step:

    - decode_audio: {max_duration: 600}
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from mixplane.document import Document, Drop
from mixplane.io.audio_codec import AudioInfo, decode, probe
from mixplane.media import audio_of, no_audio
from mixplane.stages.base import Result, Stage

# An hour: longer clips are almost always a whole recording or a damaged header.
DEFAULT_MAX_DURATION = 3600.0


class DecodeAudio(Stage):
    """Decodes and validates each sample's audio clip; adds what it is.

    Checks, in order, each failure excluding the sample with its reason: a clip in `media`
    (`no_audio`); a non-empty file (`empty_audio`); a header that a codec reads and whose
    sample rate and channel count are possible (`corrupt_audio`, with the codec's error);
    a WAV file as long as its header says (`truncated_audio`); a length within
    `max_duration` seconds by the header (`audio_too_long`, refused before decoding); the
    whole clip decodes (`corrupt_audio`), to as many samples as a FLAC, WAV or Ogg header
    declares (`truncated_audio`; an MP3 header only estimates its length).

    A kept sample gets `codec` (`flac`, `pcm_s16`, `mp3`, `vorbis`, `opus`...),
    `audio_format` (the container), `sample_rate`, `channels`, `frames` and `duration`
    (seconds, from the decoded samples) and `audio_bytes`.

    Example:
        >>> DecodeAudio().apply(Document("a", "a transcript", "web"))
        Drop(reason='no_audio', detail={'media': []})
    """

    name: ClassVar[str] = "decode_audio"
    adds: ClassVar[tuple[str, ...]] = (
        "codec",
        "audio_format",
        "sample_rate",
        "channels",
        "frames",
        "duration",
        "audio_bytes",
    )

    max_duration: float = Field(
        DEFAULT_MAX_DURATION, gt=0, description="drop longer clips (seconds, by the header)"
    )

    def apply(self, doc: Document) -> Result:
        found = audio_of(doc)
        if found is None:
            return no_audio(doc)
        info = probe(found[1])
        if isinstance(info, Drop):
            return info
        if info.duration > self.max_duration:
            return Drop("audio_too_long", {"duration": info.duration, "max": self.max_duration})
        samples = decode(found[1], info)
        if isinstance(samples, Drop):
            return samples
        if len(samples) / info.sample_rate > self.max_duration:  # an estimated MP3 length
            seconds = round(len(samples) / info.sample_rate, 6)
            return Drop("audio_too_long", {"duration": seconds, "max": self.max_duration})
        describe(doc, info, len(samples), len(found[1]))
        return doc


def decoded_clip(doc: Document) -> tuple[AudioInfo, np.ndarray] | Drop:
    """The document's clip read whole, as its header and samples, or the Drop saying why
    it cannot be (`decode_audio`'s reasons, without its duration bound)."""
    found = audio_of(doc)
    if found is None:
        return no_audio(doc)
    info = probe(found[1])
    if isinstance(info, Drop):
        return info
    samples = decode(found[1], info)
    return samples if isinstance(samples, Drop) else (info, samples)


def describe(doc: Document, info: AudioInfo, frames: int, size: int) -> None:
    """Set the properties `decode_audio` adds, for a clip of `frames` decoded samples."""
    meta = doc.metadata
    meta["codec"], meta["audio_format"] = info.codec, info.container
    meta["sample_rate"], meta["channels"] = info.sample_rate, info.channels
    meta["frames"], meta["duration"] = frames, round(frames / info.sample_rate, 6)
    meta["audio_bytes"] = size
