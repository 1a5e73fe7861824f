"""Every selected clip's length, read once from the shards' metadata, and weights over
seconds turned into weights over clips.

A clip's length is counted in frames at the loader's `sample_rate`: the stored `frames` when
the clip is at that rate, else what resampling gives (soxr returns round(frames x rate /
stored rate)), else `duration` x rate when no frame count was recorded; cut to `max_frames`.
Only the columns `frames`, `sample_rate` and `duration` of each shard's `.meta.parquet` are
read.

Weights over seconds: a component's share of seconds `s_c` with clips of mean length `m_c`
seconds is a share of clips `w_c ∝ s_c / m_c` (normalized): an epoch of N positions then
holds N x w_c clips of component c, about N x w_c x m_c seconds, which is ∝ s_c. Exact for
the means; the realized shares over a stretch of the stream differ by the spread of the
clips' lengths drawn.

Example:
    >>> sample_weights([0.5, 0.5], [2.0, 8.0]).tolist()
    [0.8, 0.2]
    >>> resampled_frames(np.array([16001, 7]), np.array([48000, 44100]), 16000).tolist()
    [5334, 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mixplane.errors import ConfigError, InputError
from mixplane.io.atomic import join_url
from mixplane.io.urls import url_filesystem
from mixplane.store.images.format import META

COLUMNS = ("frames", "sample_rate", "duration")


def resampled_frames(frames: np.ndarray, rates: np.ndarray, sample_rate: int) -> np.ndarray:
    """Frames after resampling clips of `frames` at `rates` to `sample_rate` (soxr's
    count: round half up of frames x sample_rate / rate)."""
    frames = np.asarray(frames, dtype=np.int64)
    rates = np.asarray(rates, dtype=np.int64)
    scaled = (2 * frames * sample_rate + rates) // (2 * rates)
    return np.where(rates == sample_rate, frames, scaled)


def shard_frames(
    folder: str, stem: str, sample_rate: int, storage_options: dict[str, Any]
) -> np.ndarray:
    """The length of each clip of one shard at `sample_rate`, from its metadata."""
    import pyarrow.parquet as pq

    url = join_url(folder, stem + META)
    try:
        fs, path = url_filesystem(url, storage_options)
        with fs.open(path, "rb") as handle:
            schema = pq.read_schema(handle)
            handle.seek(0)
            missing = [c for c in COLUMNS if c not in schema.names]
            if missing:
                raise InputError(
                    f"{url}: no {', '.join(missing)} column; this is not an audio shard's "
                    "metadata (write audio shards with output_media: audio)"
                )
            table = pq.read_table(handle, columns=list(COLUMNS))
    except (OSError, ValueError) as error:
        raise InputError(f"{url}: cannot read the clips' lengths ({error})") from None
    frames = table.column("frames").to_numpy(zero_copy_only=False)
    rates = table.column("sample_rate").to_numpy(zero_copy_only=False)
    seconds = table.column("duration").to_numpy(zero_copy_only=False)
    known = ~(np.isnan(frames.astype(np.float64)) | np.isnan(rates.astype(np.float64)))
    known &= np.nan_to_num(rates.astype(np.float64)) > 0
    out = np.empty(len(table), dtype=np.int64)
    out[known] = resampled_frames(frames[known], rates[known], sample_rate)
    timed = ~known & ~np.isnan(seconds.astype(np.float64))
    out[timed] = np.round(seconds[timed].astype(np.float64) * sample_rate).astype(np.int64)
    unknown = np.flatnonzero(~known & ~timed)
    if unknown.size:
        raise InputError(
            f"{url}: sample {int(unknown[0])} has neither frames and sample_rate nor duration "
            "in its metadata; the loader needs every clip's length"
        )
    return out


def clip_frames(
    shards: Sequence[tuple[str, str]],
    shard: Sequence[np.ndarray],
    sample: Sequence[np.ndarray],
    sample_rate: int,
    storage_options: dict[str, Any],
) -> list[np.ndarray]:
    """Per component, each selected clip's length at `sample_rate` (components select
    `sample[c]` of shards `shard[c]`, numbers into `shards`)."""
    used = np.unique(np.concatenate([np.asarray(s, np.int64) for s in shard] or [[]]))
    per_shard = {int(n): shard_frames(*shards[int(n)], sample_rate, storage_options) for n in used}
    offsets = np.zeros(len(shards) + 1, dtype=np.int64)
    for n, frames in per_shard.items():
        offsets[n + 1] = len(frames)
    offsets = np.cumsum(offsets)
    flat = np.zeros(int(offsets[-1]), dtype=np.int64)
    for n, frames in per_shard.items():
        flat[offsets[n] : offsets[n + 1]] = frames
    return [
        flat[offsets[np.asarray(s)] + np.asarray(i)] for s, i in zip(shard, sample, strict=True)
    ]


def sample_weights(seconds_shares: Sequence[float], mean_seconds: Sequence[float]) -> np.ndarray:
    """Shares of clips that give components `seconds_shares` of the seconds, their clips
    lasting `mean_seconds` on average (see the module's note)."""
    shares = np.asarray(seconds_shares, dtype=np.float64)
    means = np.asarray(mean_seconds, dtype=np.float64)
    weighted = shares > 0
    if np.any(weighted & ~(means > 0)):
        empty = np.flatnonzero(weighted & ~(means > 0)).tolist()
        raise ConfigError(f"components {empty} are weighed by seconds but hold no audio")
    raw = np.zeros_like(shares)
    raw[weighted] = shares[weighted] / means[weighted]
    return raw / raw.sum()
