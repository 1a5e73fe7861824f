"""The audio-text loader on real audio shards in a real catalog: every clip once across
ranks, batches within their budget, equal batch counts per rank, padding and masks against
clips decoded on their own, seconds weights, exact resume through DataLoader workers,
elastic resume, determinism, shards named directly, and bad inputs."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile
import soxr

from mixplane.catalog import Catalog
from mixplane.document import Document
from mixplane.errors import ConfigError, InputError
from mixplane.load.audio import AudioTextDataset, BadAudioError
from mixplane.load.audio.synthetic import write_audio_catalog, write_audio_dataset
from mixplane.load.audio.torch import audio_text_loader
from mixplane.load.images.synthetic import write_image_dataset
from mixplane.manifest import write_manifest
from mixplane.store.audio import AudioShardReader, AudioShardWriter

RATE = 8000
SECONDS = 4.0  # batch budget: 32,000 padded frames


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("audio-catalog")
    path = write_audio_catalog(
        str(folder),
        {
            # Mixed rates and channel counts: resampled and mixed to mono by the loader.
            "short": {
                "samples": 60,
                "seconds": (0.2, 1.0),
                "sample_rates": (8000, 16000),
                "channels": (1, 2),
            },
            "long": {"samples": 40, "seconds": (1.0, 3.0), "seed": 1},
        },
    )
    write_image_dataset(str(folder / "photos"), samples=4, shards=1)
    Catalog(path).register(str(folder / "photos"), "photos")
    return path


def spec(catalog: str, **fields) -> dict:
    return {
        "kind": "audio_text",
        "catalog": catalog,
        "seed": 3,
        "components": {
            "short": {"datasets": ["short"], "weight": 0.5},
            "long": {"datasets": ["long"], "weight": 0.5},
        },
    } | fields


def dataset(mixture, rank: int = 0, world: int = 1, **options) -> AudioTextDataset:
    if "batch_size" not in options:
        options.setdefault("batch_seconds", SECONDS)
    options.setdefault("sample_rate", RATE)
    return AudioTextDataset(mixture, rank, world, **options)


def indices(batches) -> list[int]:
    return [int(i) for batch in batches for i in np.asarray(batch["index"])]


def same(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        for key in ("index", "component", "lengths", "audio", "attention_mask"):
            assert np.asarray(a[key]).tobytes() == np.asarray(b[key]).tobytes(), key
        assert list(a["text"]) == list(b["text"])


def test_two_ranks_get_every_clip_once_in_equal_batches_within_budget(catalog):
    mixture = spec(catalog, weighting="natural")
    mixture["components"] = {"all": {"datasets": ["short", "long"]}}
    ranks = [dataset(mixture, rank, 2, window=32) for rank in range(2)]
    expected = len(ranks[0])
    assert expected == ranks[0].batches_per_epoch == len(ranks[1])
    got = [list(r) for r in ranks]
    assert len(got[0]) == len(got[1]) == expected
    delivered = indices(got[0]) + indices(got[1])
    # 100 clips, windows of 32: every one once (each window holds a multiple of 2 clips).
    assert sorted(delivered) == list(range(100))
    for batch in got[0] + got[1]:
        rows, width = batch["audio"].shape
        assert rows * width <= SECONDS * RATE
        assert width == batch["lengths"].max()
    # Bucketing groups similar lengths: far less padding than the stream's order would.
    padded = sum(b["audio"].size for b in got[0] + got[1])
    frames = sum(int(b["lengths"].sum()) for b in got[0] + got[1])
    assert 1 - frames / padded < 0.2
    assert ranks[0].state_dict() == ranks[1].state_dict()  # both at the next epoch
    assert ranks[0].epoch == 1


def test_padding_and_masks_match_clips_decoded_on_their_own(catalog):
    data = dataset(spec(catalog), pad_multiple=64)
    batch = next(iter(data))
    assert batch["audio"].dtype == np.float32 and batch["audio"].shape[1] % 64 == 0
    for row, index in enumerate(batch["index"].tolist()):
        where = data.locate(index)
        record = AudioShardReader(where["folder"], where["shard"]).sample(where["sample"])
        samples, rate = soundfile.read(io.BytesIO(record["flac"]), dtype="float32", always_2d=True)
        mono = samples.mean(axis=1, dtype=np.float32)
        if rate != RATE:
            mono = soxr.resample(mono, rate, RATE, "HQ")
        n = int(batch["lengths"][row])
        assert n == len(mono)
        assert np.array_equal(batch["audio"][row, :n], mono)
        assert not batch["audio"][row, n:].any()
        assert batch["attention_mask"][row].tolist() == [True] * n + [False] * (
            batch["audio"].shape[1] - n
        )
        assert batch["text"][row] == record["txt"].decode()


def test_fixed_batch_size_a_tokenizer_and_a_features_hook(catalog):
    seen = []

    def energy(audio, lengths):
        seen.append((audio.shape, lengths.tolist()))
        return {"energy": (audio**2).sum(axis=1) / lengths}

    data = dataset(
        spec(catalog),
        batch_size=8,
        tokenizer=lambda text: [len(w) for w in text.split()],
        context_length=6,
        features=energy,
    )
    batches = list(data)
    # One window of whole batches: 96 of the 100 positions, in stream order.
    assert indices(batches) == list(range(96))
    batch = batches[0]
    assert batch["audio"].shape[0] == 8 and batch["input_ids"].shape == (8, 6)
    assert batch["text_mask"].sum(axis=1).tolist() == [len(t.split()) for t in batch["text"]]
    assert seen[0] == (batch["audio"].shape, batch["lengths"].tolist())
    assert np.allclose(batch["energy"], (batch["audio"] ** 2).sum(axis=1) / batch["lengths"])


def test_weigh_by_seconds_realizes_the_shares_of_seconds(catalog):
    data = dataset(
        spec(
            catalog,
            weigh_by="seconds",
            components={
                "short": {"datasets": ["short"], "weight": 0.3},
                "long": {"datasets": ["long"], "weight": 0.7},
            },
        )
    )
    seconds = np.zeros(2)
    for _ in range(3):  # three epochs: every clip of the short component thrice
        for batch in data:
            np.add.at(seconds, batch["component"], batch["lengths"] / RATE)
    shares = seconds / seconds.sum()
    assert abs(shares[1] - 0.7) < 0.03, shares
    # By samples, the same weights give the long component far more than 0.7 of the seconds.
    by_samples = dataset(
        spec(
            catalog,
            components={
                "short": {"datasets": ["short"], "weight": 0.3},
                "long": {"datasets": ["long"], "weight": 0.7},
            },
        )
    )
    lengths = by_samples.lengths_of(0, np.arange(by_samples.epoch_length))
    components, _ = by_samples.members(0, np.arange(by_samples.epoch_length))
    assert lengths[components == 1].sum() / lengths.sum() > 0.85


def test_same_seed_same_batches_other_seed_other_order(catalog):
    first, again = list(dataset(spec(catalog))), list(dataset(spec(catalog)))
    same(first, again)
    other = list(dataset(spec(catalog, seed=4)))
    assert indices(other) != indices(first)


def test_resume_with_two_workers_gives_the_same_remaining_batches(catalog):
    data = dataset(spec(catalog), window=24)
    loader = audio_text_loader(data, num_workers=2, persistent_workers=True)
    stream = iter(loader)
    head = [next(stream) for _ in range(3)]
    state = data.state_dict()
    rest = [as_numpy(batch) for batch in stream]
    assert len(head) + len(rest) == len(dataset(spec(catalog), window=24))
    assert isinstance(rest[0]["text"], list) and isinstance(rest[0]["text"][0], str)
    # The persistent workers' copies stand where they started: they take the loaded state.
    data.load_state_dict(state)
    same([as_numpy(batch) for batch in loader], rest)
    resumed = dataset(spec(catalog), window=24)  # in a new process, without workers
    resumed.load_state_dict(state)
    same(list(resumed), rest)


def as_numpy(batch: dict) -> dict:
    return {k: v.numpy() if hasattr(v, "numpy") else v for k, v in batch.items()}


@pytest.mark.parametrize(("before", "after"), [(2, 1), (1, 3)])
def test_elastic_resume_mid_window_repeats_nothing(catalog, before, after):
    mixture = spec(catalog)
    old = [dataset(mixture, r, before, window=48) for r in range(before)]
    streams = [iter(d) for d in old]
    received = []
    for _ in range(2):  # two steps into the first window: a bucketed window is cut
        for s in streams:
            received += indices([next(s)])
    state = old[0].state_dict()
    assert state["step"] == 2 and all(d.state_dict() == state for d in old)
    new = [dataset(mixture, r, after, window=48) for r in range(after)]
    for d in new:
        d.load_state_dict(state)
    rest = [list(d) for d in new]
    assert len({len(r) for r in rest}) == 1  # equal batches per rank
    later = [i for r in rest for i in indices(r)]
    assert not set(later) & set(received) and len(set(later)) == len(later)
    lost = set(range(100)) - set(received) - set(later)
    # Documented: fewer than one unit (world size) of the cut window's remaining clips, and
    # the epoch's tail that does not fill a step of the new layout.
    assert len(lost) < 2 * after, lost


def test_loader_options_audit_and_run_id_take_an_audio_mixture(catalog):
    data = dataset(spec(catalog), audit=False, run_id="tones")
    assert data.spec.audit is False and data.trail is None


def test_audio_shards_named_directly(catalog, tmp_path):
    folder = os.path.join(os.path.dirname(catalog), "long")
    data = AudioTextDataset(folder, batch_seconds=SECONDS, sample_rate=RATE, seed=5)
    assert sorted(indices(data)) == list(range(40))
    state = data.state_dict()
    assert state["epoch"] == 1
    again = AudioTextDataset(
        [os.path.join(folder, "part-00000.tar"), os.path.join(folder, "part-00001.tar")],
        batch_seconds=SECONDS,
        sample_rate=RATE,
        seed=5,
    )
    again.load_state_dict(state)  # the same shards, named another way
    with pytest.raises(InputError, match=r"photos/part-00000.meta.parquet: no frames"):
        AudioTextDataset(os.path.join(os.path.dirname(catalog), "photos"), batch_size=2)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_seconds": float("nan")}, "batch_seconds must be a finite number > 0, got nan"),
        ({"batch_seconds": -2.0}, "batch_seconds must be a finite number > 0, got -2.0"),
        ({"batch_seconds": "4"}, "batch_seconds must be a finite number > 0, got '4'"),
        ({"batch_seconds": True}, "batch_seconds must be a finite number > 0, got True"),
        ({"batch_seconds": 4.0, "batch_size": 8}, "give batch_seconds .* or batch_size"),
        ({"batch_size": 0}, r"batch_size must be a whole number >= 1, got 0"),
        ({"batch_size": 2.5}, r"batch_size must be a whole number >= 1, got 2.5"),
        ({"batch_size": 8, "sample_rate": 0}, "sample_rate must be a whole number >= 1"),
        ({"batch_size": 8, "max_seconds": float("inf")}, "max_seconds must be a finite"),
        ({"batch_size": 8, "features": "mfcc"}, "features must be 'waveform', 'log_mel' or"),
        ({"batch_seconds": 0.001, "pad_multiple": 64}, "less than pad_multiple=64"),
    ],
)
def test_bad_options_are_refused_by_name(catalog, options, message):
    options = {"sample_rate": RATE} | options
    with pytest.raises(ConfigError, match=message):
        AudioTextDataset(spec(catalog), **options)


def test_a_clip_longer_than_the_budget_is_named_unless_cut(catalog):
    with pytest.raises(ConfigError) as raised:
        dataset(spec(catalog), batch_seconds=1.5)
    text = str(raised.value)
    assert re.search(r"dataset long@1, shard .*/long/part-0000\d, sample \d+ \(key ", text)
    assert "raise batch_seconds to at least" in text and "max_seconds" in text
    cut = dataset(spec(catalog), batch_seconds=1.5, max_seconds=1.5)
    assert max(int(b["lengths"].max()) for b in cut) == 1.5 * RATE


def test_mixtures_of_other_kinds_and_other_data_are_refused(catalog):
    text = {"catalog": catalog, "seq_len": 8, "components": {"a": {"weight": 1}}}
    with pytest.raises(ConfigError, match="text mixture .*MixtureDataset"):
        dataset(text)
    images = {"kind": "image_text", "catalog": catalog, "components": {"a": {"weight": 1}}}
    with pytest.raises(ConfigError, match="image_text mixture .*ImageTextDataset"):
        dataset(images)
    photos = spec(catalog, components={"p": {"datasets": ["photos"], "weight": 1}})
    with pytest.raises(ConfigError, match="photos@1 is image_text data, not audio_text"):
        dataset(photos)
    data = dataset(spec(catalog))
    with pytest.raises(ConfigError, match="not an audio loader state"):
        data.load_state_dict({"format": "mixplane-loader", "consumed": 3})
    other = dataset(spec(catalog), sample_rate=16000).state_dict()
    with pytest.raises(ConfigError, match="another sample_rate or max_seconds"):
        data.load_state_dict(other)


def test_a_clip_that_does_not_decode_names_shard_and_key(tmp_path):
    folder = tmp_path / "broken"
    writer = AudioShardWriter(str(folder), "part-00000")
    header = {"codec": "flac", "audio_format": "flac", "sample_rate": RATE, "channels": 1}
    header |= {"frames": 800, "duration": 0.1}
    writer.write(Document("bad", "a word", "web", header, {"flac": b"fLaC not a stream"}))
    config = {"output_format": "webdataset", "output_media": "audio"}
    write_manifest(str(folder), {"kind": "process", "config": config, "outputs": writer.close()})
    data = AudioTextDataset(str(folder), batch_size=1, sample_rate=RATE)
    with pytest.raises(
        BadAudioError,
        match=r"shard .*broken/part-00000, sample 0 \(key "
        r"00000-0000000\): cannot decode the clip \(corrupt_audio",
    ):
        next(iter(data))


def test_the_docs_loading_example_runs_as_written(tmp_path, monkeypatch):
    text = Path(__file__).parents[1].joinpath("docs", "audio.md").read_text()
    section = text.split("## Loading", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "docs/audio.md", "exec"), {})
    assert os.path.exists(tmp_path / "work" / "catalog.duckdb")


def test_synthetic_writer_is_deterministic(tmp_path):
    write_audio_dataset(str(tmp_path / "a"), samples=6, shards=1, seed=2)
    write_audio_dataset(str(tmp_path / "b"), samples=6, shards=1, seed=2)
    for suffix in (".tar", ".idx"):
        a = (tmp_path / "a" / f"part-00000{suffix}").read_bytes()
        assert a == (tmp_path / "b" / f"part-00000{suffix}").read_bytes()
