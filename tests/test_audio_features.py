"""LogMel against a direct per-frame DFT written here, clip by clip; its masks, shapes and
errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.load.audio.features import LogMel

TOLERANCE = 1e-4  # in natural-log units; float32 output against a float64 reference


def slow_log_mel(clip, sample_rate=16000, n_fft=400, hop=160, win=400, n_mels=80,
                 f_min=0.0, f_max=None, floor=1e-10):  # fmt: skip
    """One clip, frame by frame: reflect-pad n_fft // 2 each side, periodic Hann window,
    DFT by its definition, |X|^2, HTK triangular filters built bin by bin, log."""
    f_max = sample_rate / 2 if f_max is None else f_max
    pad = n_fft // 2
    signal = np.pad(clip.astype(np.float64), (pad, pad), mode="reflect")
    window = np.zeros(n_fft)
    left = (n_fft - win) // 2
    for n in range(win):
        window[left + n] = 0.5 - 0.5 * math.cos(2 * math.pi * n / win)
    bins = n_fft // 2 + 1
    k = np.arange(bins)[:, None]
    n = np.arange(n_fft)[None, :]
    dft = np.exp(-2j * math.pi * k * n / n_fft)

    def mel(hz):
        return 2595 * math.log10(1 + hz / 700)

    def hz(m):
        return 700 * (10 ** (m / 2595) - 1)

    low, high = mel(f_min), mel(f_max)
    edges = [hz(low + (high - low) * i / (n_mels + 1)) for i in range(n_mels + 2)]
    filters = np.zeros((n_mels, bins))
    for m in range(n_mels):
        for b in range(bins):
            f = b * sample_rate / n_fft
            if edges[m] <= f <= edges[m + 1]:
                filters[m, b] = (f - edges[m]) / (edges[m + 1] - edges[m])
            elif edges[m + 1] < f <= edges[m + 2]:
                filters[m, b] = (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1])
    frames = 1 + (len(signal) - n_fft) // hop
    out = np.zeros((frames, n_mels))
    for t in range(frames):
        spectrum = dft @ (signal[t * hop : t * hop + n_fft] * window)
        power = spectrum.real**2 + spectrum.imag**2
        out[t] = np.log(np.maximum(filters @ power, floor))
    return out


def speechlike(rng, samples, rate=16000):
    """A few harmonics with a moving pitch plus noise, at speech levels."""
    t = np.arange(samples) / rate
    pitch = 120 + 40 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    clip = sum(np.sin(h * phase) / h for h in range(1, 6)) * 0.2
    return (clip + 0.01 * rng.standard_normal(samples)).astype(np.float32)


def padded(clips, extra=0, fill=0.0):
    width = max(len(c) for c in clips) + extra
    audio = np.full((len(clips), width), fill, dtype=np.float32)
    for row, clip in enumerate(clips):
        audio[row, : len(clip)] = clip
    return audio, np.array([len(c) for c in clips], dtype=np.int64)


def test_matches_the_direct_dft_clip_by_clip():
    rng = np.random.default_rng(3)
    # 1 and 150 samples are shorter than n_fft // 2: reflected repeatedly, as np.pad does.
    clips = [speechlike(rng, n) for n in (8000, 4321, 1600, 400, 150, 1)]
    audio, lengths = padded(clips)
    out = LogMel()(audio, lengths)
    for row, clip in enumerate(clips):
        expected = slow_log_mel(clip)
        frames = len(expected)
        assert out["feature_mask"][row].sum() == frames == 1 + len(clip) // 160
        got = out["features"][row, :frames]
        assert np.abs(got - expected).max() < TOLERANCE, row


def test_other_parameters_match_the_direct_dft():
    rng = np.random.default_rng(4)
    clips = [speechlike(rng, n, 22050) for n in (5000, 3000)]
    params = dict(n_fft=512, hop=128, win=300, n_mels=40, f_min=50.0, f_max=7600.0)
    logmel = LogMel(22050, 512, 128, 300, 40, 50.0, 7600.0)
    out = logmel(*padded(clips))
    for row, clip in enumerate(clips):
        expected = slow_log_mel(clip, 22050, **params)
        got = out["features"][row, : len(expected)]
        assert np.abs(got - expected).max() < TOLERANCE


def test_a_tone_peaks_in_the_filter_centred_on_it():
    t = np.arange(16000) / 16000
    tone = np.sin(2 * np.pi * 1000 * t).astype(np.float32)[None, :]
    features = LogMel()(tone, np.array([16000]))["features"][0]
    edges = 700 * (10 ** (np.linspace(0, 2595 * np.log10(1 + 8000 / 700), 82) / 2595) - 1)
    nearest = int(np.argmin(np.abs(edges[1:-1] - 1000)))
    assert set(np.argmax(features[2:-2], axis=1)) == {nearest}


def test_features_do_not_depend_on_batch_mates_or_what_follows_a_clip():
    rng = np.random.default_rng(5)
    clip, mate = speechlike(rng, 3000), speechlike(rng, 9000)
    alone = LogMel()(*padded([clip]))
    frames = alone["features"].shape[1]
    zeros = LogMel()(*padded([clip, mate]))
    audio, lengths = padded([clip, mate], extra=77, fill=0.5)
    filled = LogMel()(audio, lengths)
    # What follows the clip in its row is never read, and each clip is computed on its own:
    # the same bytes whatever it is batched with.
    assert np.array_equal(filled["features"], zeros["features"])
    assert np.array_equal(filled["features"][0, :frames], alone["features"][0])
    assert not filled["feature_mask"][0, frames:].any()
    assert (filled["features"][0, frames:] == 0).all()  # masked frames hold 0.0


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 2000), min_size=1, max_size=5),
    extra=st.integers(0, 400),
    hop=st.integers(1, 300),
    n_fft=st.integers(2, 64),
)
def test_shapes_and_masks(lengths, extra, hop, n_fft):
    width = max(lengths) + extra
    audio = np.random.default_rng(len(lengths)).standard_normal((len(lengths), width))
    logmel = LogMel(n_fft=n_fft, hop_length=hop, n_mels=8, sample_rate=8000)
    out = logmel(audio.astype(np.float32), np.array(lengths))
    frames = 1 + (width + 2 * (n_fft // 2) - n_fft) // hop
    assert out["features"].shape == (len(lengths), frames, 8)
    assert out["features"].dtype == np.float32 and out["feature_mask"].dtype == bool
    for row, length in enumerate(lengths):
        valid = 1 + (length + 2 * (n_fft // 2) - n_fft) // hop
        assert out["feature_mask"][row].tolist() == [f < valid for f in range(frames)]
    assert np.isfinite(out["features"]).all()


def test_silence_gives_the_floor_not_nan():
    out = LogMel(floor=1e-10)(np.zeros((2, 4000), np.float32), np.array([4000, 1000]))
    features, mask = out["features"], out["feature_mask"]
    assert np.isfinite(features).all()
    assert np.allclose(features[mask], np.log(np.float32(1e-10)))


def test_same_input_same_bytes_and_input_untouched():
    rng = np.random.default_rng(6)
    audio, lengths = padded([speechlike(rng, 5000), speechlike(rng, 2500)])
    before = audio.copy()
    logmel = LogMel()
    first, second = logmel(audio, lengths), logmel(audio, lengths)
    assert first["features"].tobytes() == second["features"].tobytes()
    assert np.array_equal(first["feature_mask"], second["feature_mask"])
    assert np.array_equal(audio, before)


def test_empty_batch():
    out = LogMel()(np.zeros((0, 1600), np.float32), np.zeros(0, np.int64))
    assert out["features"].shape == (0, 11, 80) and out["feature_mask"].shape == (0, 11)


@pytest.mark.parametrize(
    ("audio", "lengths", "error", "message"),
    [
        (np.zeros((2, 100), np.float64), np.array([100, 50]), TypeError, "float32 numpy array"),
        ([[0.0] * 100], np.array([100]), TypeError, "got list"),
        (np.zeros(100, np.float32), np.array([100]), ValueError, "shape (100,)"),
        (np.zeros((1, 2, 100), np.float32), np.array([100]), ValueError, "(batch, samples)"),
        (np.zeros((2, 100), np.float32), np.array([100.0, 50.0]), TypeError, "integer"),
        (np.zeros((2, 100), np.float32), [100, 50], TypeError, "got list"),
        (np.zeros((2, 100), np.float32), np.array([100]), ValueError, "must be (2,)"),
        (np.zeros((2, 100), np.float32), np.array([100, 0]), ValueError, "row 1 has 0"),
        (np.zeros((2, 100), np.float32), np.array([101, 5]), ValueError, "row 0 has 101"),
    ],
)
def test_wrong_types_and_shapes_raise(audio, lengths, error, message):
    with pytest.raises(error, match="LogMel") as caught:
        LogMel()(audio, lengths)
    assert message in str(caught.value)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_samples_raise_naming_the_row(bad):
    audio = np.zeros((3, 800), np.float32)
    audio[2, 10] = bad
    with pytest.raises(ValueError, match="audio row 2 holds NaN or infinite samples"):
        LogMel()(audio, np.array([800, 800, 800]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_fft": 0}, "must be >= 1"),
        ({"hop_length": 0}, "must be >= 1"),
        ({"win_length": 401}, "win_length must be in [1, n_fft=400]"),
        ({"f_max": 9000.0}, "f_max <= sample_rate / 2"),
        ({"f_min": 100.0, "f_max": 50.0}, "f_min < f_max"),
        ({"floor": 0.0}, "floor must be > 0"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    with pytest.raises(ValueError) as caught:
        LogMel(**kwargs)
    assert message in str(caught.value)


def test_the_docs_log_mel_example_runs_as_written(tmp_path, monkeypatch):
    text = Path(__file__).parents[1].joinpath("docs", "audio.md").read_text()
    section = text.split("### Log-mel features", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "docs/audio.md", "exec"), {})
    assert (tmp_path / "speech" / "part-00000.tar").exists()


def test_a_dataset_with_log_mel_features_carries_them_for_its_own_audio(tmp_path):
    from mixplane.load.audio import AudioTextDataset
    from mixplane.load.audio.synthetic import write_audio_dataset

    write_audio_dataset(str(tmp_path / "speech"), samples=6, shards=1)
    dataset = AudioTextDataset(str(tmp_path / "speech"), batch_size=3, features="log_mel")
    batches = list(dataset)
    assert len(batches) == 2
    for batch in batches:
        expected = LogMel()(batch["audio"], batch["lengths"])
        assert np.array_equal(batch["features"], expected["features"])
        assert np.array_equal(batch["feature_mask"], expected["feature_mask"])
        assert batch["feature_mask"].any(axis=1).all()


def test_log_mel_works_at_the_loaders_sample_rate_and_a_mismatch_is_refused(tmp_path):
    from mixplane.errors import ConfigError
    from mixplane.load.audio import AudioTextDataset
    from mixplane.load.audio.synthetic import write_audio_dataset

    write_audio_dataset(str(tmp_path / "speech"), samples=4, shards=1)
    folder = str(tmp_path / "speech")
    dataset = AudioTextDataset(folder, batch_size=2, sample_rate=8000, features="log_mel")
    batch = next(iter(dataset))
    expected = LogMel(sample_rate=8000)(batch["audio"], batch["lengths"])
    assert np.array_equal(batch["features"], expected["features"])
    with pytest.raises(ConfigError, match="works at sample_rate 16000.*decodes clips at 8000"):
        AudioTextDataset(folder, batch_size=2, sample_rate=8000, features=LogMel())
