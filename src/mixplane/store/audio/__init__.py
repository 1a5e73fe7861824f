"""Audio shards: the image shards' container (a WebDataset-compatible tar, a sample index,
per-sample metadata Parquet; see `store.images.format`) holding one audio clip per sample.

A sample is `KEY.flac` (or the clip's own format), `KEY.txt` (the transcript or caption)
and `KEY.json`; the metadata Parquet starts with `duration`, `sample_rate`, `channels`,
`frames`, `codec`, `audio_format` and `audio_bytes`. The image shards' reader reads them.

Example:
    >>> from mixplane.store.audio import AudioShardWriter, AudioShardReader
    >>> AudioShardReader("out", "part-00000").sample(0)["txt"]  # doctest: +SKIP
    b'hello world'
"""

from mixplane.store.audio.writer import AUDIO, AudioShardWriter
from mixplane.store.images.reader import ImageShardReader as AudioShardReader

__all__ = ["AUDIO", "AudioShardReader", "AudioShardWriter"]
