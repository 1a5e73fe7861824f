"""An acoustic fingerprint: the set of spectral-peak landmarks of a clip. Pure numpy.

The clip is mixed to mono and resampled to 8 kHz (so rate and layout do not matter), cut
into 64 ms frames every 8 ms (Hann window), and the peaks of its log spectrogram are kept:
points that are the maximum of their neighbourhood (±8 frames, ±6 bins) and within 40 dB
of the clip's loudest point (so gain does not matter), silence giving none. Each peak is paired with
the next `fan_out` peaks up to `max_dt` frames later, and a pair is hashed from its two
frequencies and the time between them (coarsened by 3 bins and 3 frames), never from its
absolute time: trimming a clip removes only the landmarks near its ends, and re-encoding
moves few peaks. Two clips are compared by the Jaccard similarity of their landmark sets,
which MinHash estimates (`dedup_audio`).

This is the landmark scheme of Wang's "An Industrial-Strength Audio Search Algorithm"
(ISMIR 2003) with parameters chosen on speech; it finds copies of the same recording, not
the same words spoken twice.

Example:
    >>> rng = np.random.default_rng(0)
    >>> clip = rng.standard_normal(16000).astype(np.float32)[:, None] * 0.1
    >>> marks = landmarks(to_analysis_rate(clip, 16000))
    >>> louder = landmarks(to_analysis_rate(clip * 2, 16000))
    >>> len(marks) > 100, bool(np.array_equal(marks, louder))
    (True, True)
    >>> len(landmarks(np.zeros(8000, np.float32)))
    0
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from mixplane.stages.audio.resample import resample

ANALYSIS_RATE = 8000
WINDOW = 512  # samples: 64 ms
HOP = 64  # samples: 8 ms
PEAK_FRAMES, PEAK_BINS = 8, 6  # the neighbourhood a peak is the maximum of, each side
FLOOR_DB = 40.0
# Spectral magnitudes below this (a tone near -100 dBFS) are silence: no peaks there.
SILENCE_DB = -60.0
FAN_OUT = 8
MAX_DT = 60  # frames
BIN_STEP, FRAME_STEP = 3, 3  # coarsening of frequencies and time differences in a hash
_SPAN = 4 * FAN_OUT  # later peaks looked at for each peak's pairs


def to_analysis_rate(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """`samples` (frames, channels) as mono at `ANALYSIS_RATE`, one dimension."""
    mono = samples.mean(axis=1, keepdims=True, dtype=np.float32)
    return resample(mono, sample_rate, ANALYSIS_RATE, "HQ")[:, 0]


def spectrogram(signal: np.ndarray) -> np.ndarray:
    """Log magnitude (dB), shape (frames, bins)."""
    frames = sliding_window_view(signal, WINDOW)[::HOP] * np.hanning(WINDOW).astype(np.float32)
    return 20 * np.log10(np.abs(np.fft.rfft(frames, axis=1)) + 1e-6)


def peaks(spectrum: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Frames and bins of the spectrogram's local maxima, by frame then bin."""
    padded = np.pad(
        spectrum, ((PEAK_FRAMES, PEAK_FRAMES), (PEAK_BINS, PEAK_BINS)), constant_values=-np.inf
    )
    window = (2 * PEAK_FRAMES + 1, 2 * PEAK_BINS + 1)
    highest = sliding_window_view(padded, window).max(axis=(2, 3))
    floor = max(spectrum.max() - FLOOR_DB, SILENCE_DB)
    found = (spectrum == highest) & (spectrum > floor)
    return np.nonzero(found)  # row-major: sorted by frame, then bin


def landmarks(signal: np.ndarray) -> np.ndarray:
    """The sorted, unique 64-bit landmark hashes of a mono signal at `ANALYSIS_RATE`
    (empty when it is shorter than one frame)."""
    if len(signal) < WINDOW:
        return np.zeros(0, dtype=np.uint64)
    times, bins = peaks(spectrogram(signal))
    times, bins = times.astype(np.int64), bins.astype(np.int64)
    taken = np.zeros(len(times), dtype=np.int64)
    found = []
    for step in range(1, _SPAN + 1):
        anchor = np.arange(len(times) - step)
        dt = times[anchor + step] - times[anchor]
        valid = (dt >= 1) & (dt <= MAX_DT) & (taken[anchor] < FAN_OUT)
        chosen = anchor[valid]
        taken[chosen] += 1
        found.append(
            ((bins[chosen] // BIN_STEP) << 24)
            | ((bins[chosen + step] // BIN_STEP) << 12)
            | (dt[valid] // FRAME_STEP)
        )
    return np.unique(np.concatenate(found).astype(np.uint64))
