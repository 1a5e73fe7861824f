"""Turning stored clips into batch arrays: decoded, mixed to mono, resampled, zero-padded.

A clip is decoded whole (libsndfile, else FFmpeg: `io.audio_codec`), its channels averaged,
resampled with soxr when its rate is not the loader's, and cut to the length the plan
counted for it (its metadata's; they agree for clips mixplane processed). A batch's clips
are zero-padded to its longest (rounded up to `pad_multiple`), with a mask over the frames
that hold audio.

Example:
    >>> from mixplane.io.audio_codec import encode
    >>> tone = np.sin(np.arange(8000, dtype=np.float32) / 5)[:, None]
    >>> clip = ClipDecoder(16000)(encode(tone, 8000, "flac"), "example", 16000)
    >>> clip.shape, clip.dtype
    ((16000,), dtype('float32'))
    >>> audio, mask, lengths = pad_clips([np.ones(3, np.float32), np.ones(5, np.float32)], 4)
    >>> audio.shape, mask.sum(axis=1).tolist(), lengths.tolist()
    ((2, 8), [3, 5], [3, 5])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mixplane.errors import InputError
from mixplane.media import AUDIO_EXTENSIONS

# A batch's audio (B, T) and lengths (B,) -> arrays to add to the batch (e.g. log-mel features).
Features = Callable[[np.ndarray, np.ndarray], Mapping[str, Any]]


class BadAudioError(InputError):
    """A stored clip that cannot be decoded (it passed processing, so its bytes changed)."""


class ClipDecoder:
    """Encoded clip bytes -> float32 mono samples at `sample_rate`."""

    def __init__(self, sample_rate: int, quality: str = "HQ"):
        self.sample_rate = int(sample_rate)
        self.quality = quality

    def __call__(self, data: bytes, where: str, frames: int) -> np.ndarray:
        """The clip, mono at `sample_rate`, at most `frames` long."""
        from mixplane.document import Drop
        from mixplane.io.audio_codec import decode, probe

        info = probe(data)
        samples = info if isinstance(info, Drop) else decode(data, info)
        if isinstance(samples, Drop):
            detail = ", ".join(f"{k}: {v}" for k, v in sorted((samples.detail or {}).items()))
            raise BadAudioError(
                f"{where}: cannot decode the clip ({samples.reason}{'; ' if detail else ''}"
                f"{detail})"
            )
        assert not isinstance(info, Drop)
        mono = samples.mean(axis=1, dtype=np.float32) if samples.shape[1] > 1 else samples[:, 0]
        if info.sample_rate != self.sample_rate:
            import soxr

            mono = soxr.resample(mono, info.sample_rate, self.sample_rate, self.quality)
        return np.ascontiguousarray(mono[:frames], dtype=np.float32)


def audio_bytes(record: Mapping[str, Any], where: str) -> bytes:
    """The sample's audio member (the first audio extension present)."""
    for ext in AUDIO_EXTENSIONS:
        data = record.get(ext)
        if data is not None:
            return bytes(data)
    members = sorted(k for k in record if not k.startswith("__"))
    raise BadAudioError(f"{where}: no audio member (members: {members})")


def pad_clips(
    clips: Sequence[np.ndarray], pad_multiple: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`audio` float32 (B, T) zero-padded to the longest clip rounded up to `pad_multiple`,
    `attention_mask` bool (B, T) over the clips' frames, `lengths` int64 (B,)."""
    lengths = np.array([len(clip) for clip in clips], dtype=np.int64)
    longest = int(lengths.max()) if len(lengths) else 0
    width = -(-longest // pad_multiple) * pad_multiple
    audio = np.zeros((len(clips), width), dtype=np.float32)
    for row, clip in enumerate(clips):
        audio[row, : len(clip)] = clip
    mask = np.arange(width)[None, :] < lengths[:, None]
    return audio, mask, lengths
