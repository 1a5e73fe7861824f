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

import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mixplane.errors import InputError
from mixplane.load.images.samples import media_member
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
        found = _read_whole(data)
        if found is None:  # not libsndfile's, or broken: the codec layer says which
            found = _decoded(data, where)
        samples, rate = found
        mono = samples if samples.ndim == 1 else samples.mean(axis=1, dtype=np.float32)
        if rate != self.sample_rate:
            import soxr

            mono = soxr.resample(mono, rate, self.sample_rate, self.quality)
        return np.ascontiguousarray(mono[:frames], dtype=np.float32)


def _read_whole(data: bytes) -> tuple[np.ndarray, int] | None:
    """The clip decoded by libsndfile in one read (mono as one dimension), or None. The
    clip passed `decode_audio` when it was processed, so the block-by-block checks of
    `io.audio_codec.decode` are not repeated on the loader's path: one read is about 40%
    cheaper."""
    import soundfile

    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32")
    except Exception:  # noqa: BLE001 - any failure takes the checked path, which names it
        return None
    return (samples, int(rate)) if len(samples) else None


def _decoded(data: bytes, where: str) -> tuple[np.ndarray, int]:
    """The clip through `io.audio_codec` (FFmpeg for what libsndfile cannot read), or
    `BadAudioError` with the codec's reason."""
    from mixplane.document import Drop
    from mixplane.io.audio_codec import decode, probe

    info = probe(data)
    samples = info if isinstance(info, Drop) else decode(data, info)
    if isinstance(samples, Drop):
        detail = ", ".join(f"{k}: {v}" for k, v in sorted((samples.detail or {}).items()))
        raise BadAudioError(
            f"{where}: cannot decode the clip ({samples.reason}{'; ' if detail else ''}{detail})"
        )
    assert not isinstance(info, Drop)
    return (samples[:, 0] if samples.shape[1] == 1 else samples), info.sample_rate


def audio_bytes(record: Mapping[str, Any], where: str) -> bytes:
    """The sample's audio member (the first audio extension present)."""
    return media_member(record, AUDIO_EXTENSIONS, "audio", where, BadAudioError)


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
