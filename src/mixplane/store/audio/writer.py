"""Writing one audio shard: audio-text documents into `STEM.tar`, `STEM.idx` and
`STEM.meta.parquet`, as image shards are written (`store.images.writer`).

Example:
    >>> writer = AudioShardWriter("out", "part-00000")  # doctest: +SKIP
    >>> writer.write(Document("a", "hello", "web", {}, {"flac": clip}))  # doctest: +SKIP
    >>> [entry["path"] for entry in writer.close()]  # doctest: +SKIP
    ['part-00000.tar', 'part-00000.idx', 'part-00000.meta.parquet']
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from mixplane.media import AUDIO_EXTENSIONS, audio_of
from mixplane.store.images.writer import COMMON, MediaShardWriter, ShardMedia

# What a clip's header tells, filled in when no stage recorded it.
_HEADER_FIELDS = ("codec", "audio_format", "sample_rate", "channels", "frames", "duration")


def _audio_fields(metadata: dict[str, Any], ext: str, clip: bytes) -> dict[str, Any]:
    """The metadata with the stored clip's size, and what its header says when no stage
    recorded it (`decode_audio` and `resample_audio` do; reading a header decodes nothing)."""
    fields = dict(metadata)
    fields["audio_bytes"] = len(clip)
    if any(fields.get(name) is None for name in _HEADER_FIELDS):
        header = _probe(clip)
        for name in _HEADER_FIELDS:
            if fields.get(name) is None and header is not None:
                fields[name] = header[name]
    if fields.get("audio_format") is None:
        fields["audio_format"] = ext
    return fields


def _probe(clip: bytes) -> dict[str, Any] | None:
    """The clip's header fields, None when no codec reads it (or no audio extra is
    installed: the fields then stay empty rather than failing the run)."""
    try:
        from mixplane.io.audio_codec import probe
    except ImportError:
        return None
    info = probe(clip)
    if not hasattr(info, "frames"):
        return None  # a Drop: not a clip any codec reads
    return {
        "codec": info.codec,
        "audio_format": info.container,
        "sample_rate": info.sample_rate,
        "channels": info.channels,
        "frames": info.frames,
        "duration": info.duration,
    }


AUDIO = ShardMedia(
    name="audio",
    extensions=AUDIO_EXTENSIONS,
    find=audio_of,
    fixed=pa.schema(
        [
            *COMMON,
            ("duration", pa.float64()),
            ("sample_rate", pa.int64()),
            ("channels", pa.int64()),
            ("frames", pa.int64()),
            ("codec", pa.string()),
            ("audio_format", pa.string()),
            ("audio_bytes", pa.int64()),
        ]
    ),
    describe=_audio_fields,
    member_names={},
)


class AudioShardWriter(MediaShardWriter):
    """Streams audio-text documents (a clip in `media`, the transcript as text) into one
    audio shard `folder_url/STEM.*`; see `MediaShardWriter`."""

    media = AUDIO
