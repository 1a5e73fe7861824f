"""Reading and writing encoded audio: libsndfile (soundfile) first, FFmpeg (PyAV) for what
it cannot open.

libsndfile reads WAV, FLAC, Ogg Vorbis and Opus and MP3 exactly and fast; FFmpeg covers the
rest (AAC, odd containers). Every failure is a `Drop` with a reason, never an exception:
`empty_audio`, `corrupt_audio` (unreadable, or a header claiming impossible values),
`truncated_audio` (fewer samples than the header declares), `audio_too_long` (refused from
the header, before decoding).

Example:
    >>> import numpy as np
    >>> clip = encode(np.zeros((16000, 1), dtype=np.float32), 16000, "flac")
    >>> info = probe(clip)
    >>> info.codec, info.sample_rate, info.channels, info.duration
    ('flac', 16000, 1, 1.0)
    >>> decode(clip, info).shape
    (16000, 1)
"""

from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass

import numpy as np

from mixplane.document import Drop

# Beyond these a header is taken as damaged or hostile, not as audio.
MAX_SAMPLE_RATE = 768_000
MAX_CHANNELS = 64
STREAMED_RIFF_SIZE = 0x7FFF0000
BLOCK_FRAMES = 4096  # decoded at a time: a clip that breaks off keeps what came before
# libsndfile subtypes -> the codec name recorded (others: the subtype lowercased).
_CODECS = {
    "PCM_16": "pcm_s16",
    "PCM_24": "pcm_s24",
    "PCM_32": "pcm_s32",
    "PCM_U8": "pcm_u8",
    "PCM_S8": "pcm_s8",
    "FLOAT": "pcm_f32",
    "DOUBLE": "pcm_f64",
    "VORBIS": "vorbis",
    "OPUS": "opus",
    "MPEG_LAYER_III": "mp3",
}
# Formats `encode` writes: libsndfile format and subtype.
_ENCODINGS = {"flac": ("FLAC", "PCM_16"), "wav": ("WAV", "PCM_16")}


@dataclass(frozen=True)
class AudioInfo:
    """What a clip's header says: codec, container, sample rate, channels, length."""

    codec: str
    container: str
    sample_rate: int
    channels: int
    frames: int  # per channel
    reader: str  # "soundfile" or "ffmpeg": which library opens it

    @property
    def duration(self) -> float:
        return round(self.frames / self.sample_rate, 6)


def probe(data: bytes) -> AudioInfo | Drop:
    """The clip's header, or the Drop saying why it is no readable clip."""
    if not data:
        return Drop("empty_audio", {"bytes": 0})
    info = _probe_soundfile(data)
    if info is None:
        info = _probe_ffmpeg(data)
    if isinstance(info, Drop):
        return info
    if not 0 < info.sample_rate <= MAX_SAMPLE_RATE or not 0 < info.channels <= MAX_CHANNELS:
        detail = {"sample_rate": info.sample_rate, "channels": info.channels}
        return Drop("corrupt_audio", {"error": "header claims impossible values", **detail})
    declared = _declared_wav_bytes(data)
    if declared is not None and declared > len(data):
        return Drop("truncated_audio", {"bytes": len(data), "declared_bytes": declared})
    return info


def decode(data: bytes, info: AudioInfo) -> np.ndarray | Drop:
    """The clip's samples as float32 in [-1, 1], shape (frames, channels)."""
    blocks: list[np.ndarray] = []
    try:
        if info.reader == "soundfile":
            _decode_soundfile(data, blocks)
        else:
            _decode_ffmpeg(data, info.channels, blocks)
    except Exception as error:  # noqa: BLE001 - a codec's error of any kind is a bad clip
        frames = sum(map(len, blocks))
        if 0 < frames < info.frames:  # the stream broke off after good samples
            detail = {"frames": frames, "declared_frames": info.frames}
            return Drop("truncated_audio", {**detail, "error": _message(error)})
        return Drop("corrupt_audio", {"error": _message(error)})
    samples = np.concatenate(blocks) if blocks else np.zeros((0, info.channels), np.float32)
    if info.frames and len(samples) < info.frames and info.codec != "mp3":
        # MP3 headers estimate their length; the others state it.
        return Drop("truncated_audio", {"frames": len(samples), "declared_frames": info.frames})
    if len(samples) == 0:
        return Drop("empty_audio", {"frames": 0})
    return np.ascontiguousarray(samples, dtype=np.float32)


def encode(samples: np.ndarray, sample_rate: int, fmt: str = "flac") -> bytes:
    """`samples` (frames, channels) as a 16-bit FLAC or WAV file."""
    import soundfile

    container, subtype = _ENCODINGS[fmt]
    out = io.BytesIO()
    soundfile.write(out, np.clip(samples, -1.0, 1.0), sample_rate, subtype, format=container)
    return out.getvalue()


def _probe_soundfile(data: bytes) -> AudioInfo | None:
    import soundfile

    try:
        info = soundfile.info(io.BytesIO(data))
    except Exception:  # noqa: BLE001 - not a format libsndfile knows: FFmpeg may
        return None
    codec = "flac" if info.format == "FLAC" else _CODECS.get(info.subtype, info.subtype.lower())
    container = "mp3" if info.format == "MP3" else info.format.lower()
    return AudioInfo(codec, container, info.samplerate, info.channels, info.frames, "soundfile")


def _probe_ffmpeg(data: bytes) -> AudioInfo | Drop:
    import av

    try:
        with av.open(io.BytesIO(data), metadata_errors="ignore") as container:
            if not container.streams.audio:
                return Drop("corrupt_audio", {"error": "no audio stream"})
            stream = container.streams.audio[0]
            rate = stream.codec_context.sample_rate or 0
            seconds = (
                float(stream.duration * stream.time_base)
                if stream.duration is not None and stream.time_base is not None
                else (container.duration or 0) / 1_000_000
            )
            return AudioInfo(
                stream.codec_context.name,
                container.format.name.split(",")[0],
                rate,
                stream.codec_context.channels,
                round(seconds * rate),
                "ffmpeg",
            )
    except Exception as error:  # noqa: BLE001 - FFmpeg's errors name the problem
        return Drop("corrupt_audio", {"error": _message(error)})


def _decode_soundfile(data: bytes, blocks: list[np.ndarray]) -> None:
    """Decode into `blocks`, block by block, so a clip that breaks off keeps what it had."""
    import soundfile

    with soundfile.SoundFile(io.BytesIO(data)) as clip:
        while True:
            block = clip.read(BLOCK_FRAMES, dtype="float32", always_2d=True)
            if not len(block):
                return
            blocks.append(block)


def _decode_ffmpeg(data: bytes, channels: int, blocks: list[np.ndarray]) -> None:
    import av

    with av.open(io.BytesIO(data), metadata_errors="ignore") as container:
        resampler = av.AudioResampler(format="flt", layout=None)
        for frame in container.decode(audio=0):
            for converted in resampler.resample(frame):
                blocks.append(converted.to_ndarray().reshape(-1, channels))


def _declared_wav_bytes(data: bytes) -> int | None:
    """The file size a RIFF/WAVE header declares (libsndfile reads a cut WAV quietly)."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    size = struct.unpack("<I", data[4:8])[0]
    # Writers to a pipe cannot know the size: they put 0 or a value near 2 or 4 GiB
    # (espeak-ng and FFmpeg do), far beyond any clip a sample holds.
    return None if size == 0 or size >= STREAMED_RIFF_SIZE else size + 8


def _message(error: Exception) -> str:
    """The codec's error without the memory address libsndfile puts in it (details must be
    the same on every run)."""
    text = str(error) or type(error).__name__
    return re.sub(r"<_io\.BytesIO object at 0x[0-9a-f]+>", "the clip", text)[:300]
