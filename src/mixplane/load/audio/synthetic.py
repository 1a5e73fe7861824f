"""Synthetic audio-text datasets: real audio shards and manifests with generated tones.

For loader tests and benchmarks (no speech synthesizer needed: `mixplane synth --audio`
writes speech). Shards are written by the store's `AudioShardWriter` and the manifest has
the fields a processing run with `output_format: webdataset` and `output_media: audio`
writes, so the catalog registers these folders as `audio_text` versions. Each clip is a
FLAC tone (a frequency per clip, a little noise) whose transcript names the frequency;
clip lengths are log-normal between `seconds` bounds.

Example:
    >>> write_audio_dataset("/tmp/tones", samples=40, seconds=(0.5, 2.0))  # doctest: +SKIP
    >>> write_audio_catalog("/tmp/work", {"tones": {"samples": 40}})  # doctest: +SKIP
    '/tmp/work/catalog.duckdb'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from mixplane.document import Document
from mixplane.manifest import write_manifest
from mixplane.store.audio import AudioShardWriter

LANGUAGES = ("en", "de")


def clip_seconds(rng: np.random.Generator, n: int, low: float, high: float) -> np.ndarray:
    """`n` log-normal lengths, median the geometric mean of the bounds, within them (the
    bounds sit two standard deviations out)."""
    mean = (np.log(low) + np.log(high)) / 2
    sigma = (np.log(high) - np.log(low)) / 4
    return np.clip(np.exp(rng.normal(mean, sigma, n)), low, high)


def tone(rng: np.random.Generator, frames: int, sample_rate: int, channels: int) -> np.ndarray:
    """A tone with a little noise, float32 (frames, channels)."""
    hertz = float(rng.uniform(110, 880))
    t = np.arange(frames, dtype=np.float32) / sample_rate
    wave = 0.4 * np.sin(2 * np.pi * hertz * t) + rng.normal(0, 0.01, frames)
    return np.repeat(wave.astype(np.float32)[:, None], channels, axis=1)


def write_audio_dataset(
    folder: str,
    samples: int,
    seed: int = 0,
    source: str = "synthetic",
    shards: int = 2,
    seconds: tuple[float, float] = (0.2, 2.0),
    sample_rates: Sequence[int] = (8000,),
    channels: Sequence[int] = (1,),
) -> str:
    """Write `samples` FLAC clips with transcripts over `shards` audio shards; returns the
    manifest URL. A clip's rate and channel count are drawn from `sample_rates` and
    `channels`. Properties: `source`, `language` (en and de in turn), and the writer's
    `duration`, `sample_rate`, `channels`, `frames`, `codec`, `audio_format`."""
    from mixplane.io.audio_codec import encode

    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    lengths = clip_seconds(rng, samples, *seconds)
    outputs: list[dict[str, Any]] = []
    per_shard = -(-samples // shards)
    written = 0
    for task in range(shards):
        writer = AudioShardWriter(folder, f"part-{task:05d}")
        for _ in range(min(per_shard, samples - written)):
            rate = int(sample_rates[int(rng.integers(len(sample_rates)))])
            layout = int(channels[int(rng.integers(len(channels)))])
            frames = max(1, round(float(lengths[written]) * rate))
            clip = encode(tone(rng, frames, rate, layout), rate, "flac")
            text = f"clip {written} of {source}"
            metadata = {"language": LANGUAGES[written % 2]}
            doc_id = f"{source}-{written:07d}"
            writer.write(Document(doc_id, text, source, metadata, {"flac": clip}))
            written += 1
        outputs.extend(writer.close())
    config = {
        "output_format": "webdataset",
        "output_media": "audio",
        "synthetic": {"seed": seed, "samples": samples},
    }
    return write_manifest(folder, {"kind": "process", "config": config, "outputs": outputs})


def write_audio_catalog(folder: str, datasets: dict[str, dict[str, Any]]) -> str:
    """Write each dataset (`write_audio_dataset` options, `source` defaulting to its name)
    under `folder/NAME` and register it in `folder/catalog.duckdb`; returns the catalog path.
    """
    from mixplane.catalog import Catalog

    path = os.path.join(folder, "catalog.duckdb")
    catalog = Catalog(path)
    for name, options in datasets.items():
        target = os.path.join(folder, name)
        write_audio_dataset(target, **({"source": name} | options))
        catalog.register(target, name)
    return path
