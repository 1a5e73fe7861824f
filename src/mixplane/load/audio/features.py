"""Log-mel spectrograms of padded audio batches, in numpy, as speech models take them.

`LogMel` is a `features` callable for `AudioTextDataset`: `features(audio, lengths)` with
audio float32 (B, T) (clips zero-padded to T samples) and lengths int64 (B,) returns
`{"features": float32 (B, frames, n_mels), "feature_mask": bool (B, frames)}`.

What it computes, per clip, is what `torchaudio.transforms.MelSpectrogram` computes with its
defaults (`center=True`, `pad_mode="reflect"`, periodic Hann window, `power=2.0`,
`mel_scale="htk"`, `norm=None`) followed by `log(max(x, floor))`:

- frames: `1 + (T + 2 * (n_fft // 2) - n_fft) // hop_length` for the batch, of which a clip
  of L samples has `1 + (L + 2 * (n_fft // 2) - n_fft) // hop_length`; frame f is centred on
  sample `f * hop_length`, and the clip is extended by `n_fft // 2` samples at each end by
  reflection of its own samples (at its length, not at the batch's): what follows a clip
  in its row is never read, and a clip's features are the same bytes whatever it is
  batched with. A clip shorter than that reflects repeatedly (numpy's
  `np.pad(..., "reflect")`), where torch raises;
- window: periodic Hann of `win_length`, centred in `n_fft`;
- power spectrum |rfft|^2 through a bank of `n_mels` triangular filters, equally spaced
  on the HTK mel scale (mel = 2595 log10(1 + hz / 700)) from `f_min` to `f_max`, not
  area-normalized;
- natural log with a floor, so silence gives `log(floor)`, never -inf or NaN.

Frames past a clip's length are False in `feature_mask` and 0.0 in `features`, and are not
computed: the work grows with the clips' lengths, not with the batch's padded length. Each
clip's frames are transformed a cache-sized chunk at a time: strided frames, one
`np.fft.rfft` (float64), one float32 matrix product with the filter bank.

Example:
    >>> import numpy as np
    >>> logmel = LogMel()
    >>> audio = np.zeros((2, 16000), dtype=np.float32)
    >>> out = logmel(audio, np.array([16000, 8000]))
    >>> out["features"].shape, out["feature_mask"].sum(axis=1).tolist()
    ((2, 101, 80), [101, 51])
"""

from __future__ import annotations

import numpy as np

# Frames are transformed this many at a time (400 KB of float64 at n_fft 400): every pass
# over them stays in the CPU's cache, which is twice as fast as whole rows at once.
_CHUNK_FRAMES = 128


class LogMel:
    """Padded audio (B, T) float32 and lengths (B,) -> log-mel features (B, frames, n_mels)
    with a mask of the frames within each clip. See the module docstring for the exact
    computation."""

    def __init__(
        self,
        sample_rate: int = 16000,
        n_fft: int = 400,
        hop_length: int = 160,
        win_length: int | None = None,
        n_mels: int = 80,
        f_min: float = 0.0,
        f_max: float | None = None,
        floor: float = 1e-10,
    ):
        win_length = n_fft if win_length is None else win_length
        f_max = sample_rate / 2 if f_max is None else f_max
        if min(sample_rate, n_fft, hop_length, n_mels) < 1:
            raise ValueError(
                "LogMel: sample_rate, n_fft, hop_length and n_mels must be >= 1, got "
                f"{sample_rate}, {n_fft}, {hop_length}, {n_mels}"
            )
        if not 1 <= win_length <= n_fft:
            raise ValueError(f"LogMel: win_length must be in [1, n_fft={n_fft}], got {win_length}")
        if not 0 <= f_min < f_max <= sample_rate / 2:
            raise ValueError(
                f"LogMel: need 0 <= f_min < f_max <= sample_rate / 2 = {sample_rate / 2}, "
                f"got f_min={f_min}, f_max={f_max}"
            )
        if not floor > 0:
            raise ValueError(f"LogMel: floor must be > 0, got {floor}")
        self.sample_rate = int(sample_rate)
        self.n_fft = int(n_fft)
        self.hop_length = int(hop_length)
        self.win_length = int(win_length)
        self.n_mels = int(n_mels)
        self.f_min = float(f_min)
        self.f_max = float(f_max)
        self.floor = float(floor)
        self.window = hann_window(self.win_length, self.n_fft)
        self.filters = mel_filters(self.sample_rate, self.n_fft, self.n_mels, f_min, f_max)

    def frames(self, samples: np.ndarray | int) -> np.ndarray | int:
        """How many frames `samples` samples make (elementwise for an array)."""
        return 1 + (samples + 2 * (self.n_fft // 2) - self.n_fft) // self.hop_length

    def __call__(self, audio: np.ndarray, lengths: np.ndarray) -> dict[str, np.ndarray]:
        """`{"features": float32 (B, frames, n_mels), "feature_mask": bool (B, frames)}`."""
        lengths = _checked(audio, lengths)
        rows, width = audio.shape
        count = int(self.frames(width))
        valid = self.frames(lengths)
        mask = np.arange(count)[None, :] < valid[:, None]
        out = np.zeros((rows, count, self.n_mels), dtype=np.float32)
        extended = _reflect_extended(audio, lengths, self.n_fft // 2)
        windows = np.lib.stride_tricks.sliding_window_view(extended, self.n_fft, axis=1)
        windows = windows[:, :: self.hop_length]
        floor = np.float32(self.floor)
        for row in range(rows):  # only a clip's own frames: padding costs nothing
            for start in range(0, int(valid[row]), _CHUNK_FRAMES):
                stop = min(int(valid[row]), start + _CHUNK_FRAMES)
                # float64 transforms: numpy's pocketfft is several times faster on them than
                # on float32, and the power spectrum keeps its small bins exact enough to log.
                spectrum = np.fft.rfft(windows[row, start:stop] * self.window, axis=-1)
                power = np.square(spectrum.real)
                power += np.square(spectrum.imag)
                mel = np.matmul(power.astype(np.float32), self.filters, out=out[row, start:stop])
                np.log(np.maximum(mel, floor, out=mel), out=mel)
        return {"features": out, "feature_mask": mask}

    def __repr__(self) -> str:
        return (
            f"LogMel(sample_rate={self.sample_rate}, n_fft={self.n_fft}, "
            f"hop_length={self.hop_length}, win_length={self.win_length}, n_mels={self.n_mels}, "
            f"f_min={self.f_min}, f_max={self.f_max}, floor={self.floor})"
        )


def hann_window(win_length: int, n_fft: int) -> np.ndarray:
    """The periodic Hann window of `win_length` (0.5 - 0.5 cos(2 pi n / win_length)),
    zero-padded on both sides to `n_fft` samples, float64."""
    window = np.zeros(n_fft, dtype=np.float64)
    left = (n_fft - win_length) // 2
    n = np.arange(win_length)
    window[left : left + win_length] = 0.5 - 0.5 * np.cos(2 * np.pi * n / win_length)
    return window


def mel_filters(
    sample_rate: int, n_fft: int, n_mels: int, f_min: float, f_max: float
) -> np.ndarray:
    """Triangular filters (n_fft // 2 + 1, n_mels), float32: filter m rises from 0 at edge m
    to 1 at edge m + 1 and falls to 0 at edge m + 2, the n_mels + 2 edges equally spaced on
    the HTK mel scale from f_min to f_max; each rfft bin k sits at k * sample_rate / n_fft."""
    edges = _hz(np.linspace(_mel(f_min), _mel(f_max), n_mels + 2))
    bins = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)
    lower, centre, upper = edges[:-2], edges[1:-1], edges[2:]
    rising = (bins[:, None] - lower) / (centre - lower)
    falling = (upper - bins[:, None]) / (upper - centre)
    return np.maximum(0.0, np.minimum(rising, falling)).astype(np.float32)


def _mel(hz: float | np.ndarray) -> float | np.ndarray:
    return 2595.0 * np.log10(1.0 + np.asarray(hz, dtype=np.float64) / 700.0)


def _hz(mel: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def _reflect_extended(audio: np.ndarray, lengths: np.ndarray, pad: int) -> np.ndarray:
    """(rows, T + 2 pad): each clip with `pad` samples before it and after its own length
    reflected from its samples (edge not repeated; repeatedly for a clip shorter than pad)."""
    rows, width = audio.shape
    extended = np.zeros((rows, width + 2 * pad), dtype=np.float32)
    extended[:, pad : pad + width] = audio
    if pad == 0:
        return extended
    offsets = np.arange(pad)
    left = _reflect(offsets[None, :] - pad, lengths[:, None])
    right = _reflect(lengths[:, None] + offsets[None, :], lengths[:, None])
    extended[:, :pad] = np.take_along_axis(audio, left, axis=1)
    row = np.arange(rows)[:, None]
    extended[row, pad + lengths[:, None] + offsets[None, :]] = audio[row, right]
    return extended


def _reflect(index: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Positions outside [0, length) folded back in by reflection about the end samples."""
    period = np.maximum(2 * (length - 1), 1)
    folded = index % period
    return np.where(folded >= length, period - folded, folded) * (length > 1)


def _checked(audio: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """`lengths` as int64 after checking both arrays; raises TypeError or ValueError saying
    what is wrong."""
    if not isinstance(audio, np.ndarray) or audio.dtype != np.float32:
        got = audio.dtype if isinstance(audio, np.ndarray) else type(audio).__name__
        raise TypeError(f"LogMel: audio must be a float32 numpy array, got {got}")
    if audio.ndim != 2:
        raise ValueError(f"LogMel: audio must be (batch, samples), got shape {audio.shape}")
    if not isinstance(lengths, np.ndarray) or not np.issubdtype(lengths.dtype, np.integer):
        got = lengths.dtype if isinstance(lengths, np.ndarray) else type(lengths).__name__
        raise TypeError(f"LogMel: lengths must be an integer numpy array, got {got}")
    if lengths.shape != (audio.shape[0],):
        raise ValueError(
            f"LogMel: lengths must be ({audio.shape[0]},) for audio {audio.shape}, "
            f"got {lengths.shape}"
        )
    outside = np.flatnonzero((lengths < 1) | (lengths > audio.shape[1]))
    if outside.size:
        row = int(outside[0])
        raise ValueError(
            f"LogMel: lengths must be in [1, {audio.shape[1]}], row {row} has {lengths[row]}"
        )
    bad = np.flatnonzero(~np.isfinite(audio).all(axis=1))
    if bad.size:
        raise ValueError(f"LogMel: audio row {int(bad[0])} holds NaN or infinite samples")
    return lengths.astype(np.int64, copy=False)
