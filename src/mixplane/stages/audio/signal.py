"""Measures of a decoded clip: loudness, silence and clipping. Pure numpy.

Example:
    >>> tone = np.sin(np.linspace(0, 200 * np.pi, 16000, dtype=np.float32))[:, None]
    >>> round(rms_dbfs(tone), 1), peak_dbfs(tone) > -0.01
    (-3.0, True)
    >>> silence_ratio(np.concatenate([tone, np.zeros_like(tone)]), 16000)
    0.5
"""

from __future__ import annotations

import numpy as np

# What a digital silence measures: the floor of 16-bit audio is about -96 dBFS.
FLOOR_DBFS = -120.0


def to_dbfs(level: float) -> float:
    """An amplitude (1.0 = full scale) in dBFS, at least `FLOOR_DBFS`."""
    return float(max(FLOOR_DBFS, 20 * np.log10(level))) if level > 0 else FLOOR_DBFS


def rms_dbfs(samples: np.ndarray) -> float:
    """The clip's RMS level over all its samples and channels, in dBFS (a full-scale sine
    is -3.01)."""
    return round(to_dbfs(float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))), 3)


def peak_dbfs(samples: np.ndarray) -> float:
    return round(to_dbfs(float(np.max(np.abs(samples)))), 3)


def silence_ratio(
    samples: np.ndarray, sample_rate: int, threshold_dbfs: float = -50.0, window: float = 0.02
) -> float:
    """The share of the clip's `window`-second frames (20 ms) whose RMS over all channels is
    below `threshold_dbfs`; a last partial frame counts as one."""
    size = max(1, round(sample_rate * window))
    frames = -(-len(samples) // size)
    padded = np.zeros((frames * size, samples.shape[1]), np.float64)
    padded[: len(samples)] = samples
    power = np.square(padded).reshape(frames, -1).sum(axis=1)
    counts = np.full(frames, size * samples.shape[1], np.float64)
    counts[-1] = (len(samples) - (frames - 1) * size) * samples.shape[1]
    threshold = (10 ** (threshold_dbfs / 20)) ** 2
    return round(float(np.mean(power / counts < threshold)), 6)


def clipping_ratio(samples: np.ndarray, level: float = 0.999) -> float:
    """The share of samples (any channel) at or beyond `level` of full scale."""
    return round(float(np.mean(np.abs(samples) >= level)), 6)
