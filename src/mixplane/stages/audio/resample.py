"""`resample_audio`: every clip at one sample rate and channel layout, stored as FLAC.

Example pipeline step:

    - resample_audio: {sample_rate: 16000, channels: 1}
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from mixplane.document import Document, Drop
from mixplane.io.audio_codec import decode, encode, probe
from mixplane.media import audio_of, no_audio, set_audio
from mixplane.stages.audio.decode import describe
from mixplane.stages.base import Result, Stage


class ResampleAudio(Stage):
    """Resamples each clip to `sample_rate` with soxr (its `quality` setting; `VHQ` is its
    best) and mixes it to `channels`: down to mono by the mean of the channels, up from mono
    by copying it; other layouts are refused (`channel_layout`). The clip is stored again
    as 16-bit `format` (FLAC by default: lossless and about half the size of WAV), so
    later stages and the shards read one layout. A clip already at the target rate, layout
    and format is left byte for byte as it is.

    Adds `original_sample_rate` and `original_channels`, and sets `sample_rate`,
    `channels`, `frames`, `duration`, `codec`, `audio_format` and `audio_bytes` as
    `decode_audio` does. Clips that do not decode are excluded with `decode_audio`'s reasons.

    Example:
        >>> ResampleAudio(sample_rate=16000).apply(Document("a", "hi", "web"))
        Drop(reason='no_audio', detail={'media': []})
    """

    name: ClassVar[str] = "resample_audio"
    adds: ClassVar[tuple[str, ...]] = (
        "original_sample_rate",
        "original_channels",
        *("sample_rate", "channels", "frames", "duration", "codec", "audio_format"),
        "audio_bytes",
    )

    sample_rate: int = Field(16000, gt=0, le=384000, description="target sample rate (Hz)")
    channels: int = Field(1, ge=1, le=2, description="target channels: 1 (mono) or 2")
    format: Literal["flac", "wav"] = Field("flac", description="how the clip is stored")
    quality: Literal["QQ", "LQ", "MQ", "HQ", "VHQ"] = Field(
        "HQ", description="soxr quality: quick, low, medium, high, very high"
    )

    def apply(self, doc: Document) -> Result:
        found = audio_of(doc)
        if found is None:
            return no_audio(doc)
        ext, data = found
        info = probe(data)
        if isinstance(info, Drop):
            return info
        meta = doc.metadata
        meta["original_sample_rate"], meta["original_channels"] = info.sample_rate, info.channels
        samples = decode(data, info)
        if isinstance(samples, Drop):
            return samples
        same_layout = info.sample_rate == self.sample_rate and info.channels == self.channels
        if same_layout and ext == self.format and info.codec in ("flac", "pcm_s16"):
            describe(doc, info, len(samples), len(data))
            return doc
        mixed = mix_channels(samples, self.channels)
        if isinstance(mixed, Drop):
            return mixed
        out = resample(mixed, info.sample_rate, self.sample_rate, self.quality)
        encoded = encode(out, self.sample_rate, self.format)
        set_audio(doc, self.format, encoded)
        stored = probe(encoded)
        assert not isinstance(stored, Drop), stored  # written just above
        describe(doc, stored, len(out), len(encoded))
        return doc


def mix_channels(samples: np.ndarray, channels: int) -> np.ndarray | Drop:
    """`samples` (frames, channels) with `channels` channels: mean down to mono, mono copied
    up to stereo.

    Example:
        >>> mix_channels(np.array([[1.0, 0.0], [0.5, 0.5]], np.float32), 1).ravel().tolist()
        [0.5, 0.5]
    """
    have = samples.shape[1]
    if have == channels:
        return samples
    if channels == 1:
        return samples.mean(axis=1, keepdims=True, dtype=np.float32)
    if have == 1:
        return np.repeat(samples, channels, axis=1)
    return Drop("channel_layout", {"channels": have, "target": channels})


def resample(samples: np.ndarray, rate: int, target: int, quality: str = "HQ") -> np.ndarray:
    """`samples` (frames, channels) from `rate` to `target` Hz with soxr.

    Example:
        >>> resample(np.zeros((44100, 1), np.float32), 44100, 16000).shape
        (16000, 1)
    """
    if rate == target:
        return samples
    import soxr

    out = soxr.resample(samples, rate, target, quality=quality)
    return np.asarray(out, dtype=np.float32).reshape(-1, samples.shape[1])
