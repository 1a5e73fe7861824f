"""The audio stages on real clips: espeak-ng speech through libsndfile and FFmpeg."""

from __future__ import annotations

import io
import shutil
import struct

import numpy as np
import pyarrow.parquet as pq
import pytest
import soundfile

from mixplane.document import Document, Drop
from mixplane.io.audio_codec import decode, encode, probe
from mixplane.media import audio_of
from mixplane.stages.audio.decode import DecodeAudio
from mixplane.stages.audio.quality import AudioQuality
from mixplane.stages.audio.resample import ResampleAudio
from mixplane.stages.audio.signal import clipping_ratio, rms_dbfs, silence_ratio

RATE = 16000
needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="make audio-tools")


def tone(seconds: float = 1.0, rate: int = RATE, level: float = 0.5, channels: int = 1):
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    wave = (level * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[:, None]
    return np.repeat(wave, channels, axis=1)


def noisy(seconds: float = 2.0) -> np.ndarray:
    """A tone with noise: compresses like real sound (a pure tone fits in a few FLAC frames)."""
    noise = np.random.default_rng(0).standard_normal((int(seconds * RATE), 1)) * 0.05
    return (tone(seconds, level=0.3) + noise).astype(np.float32)


def written(samples: np.ndarray, rate: int, fmt: str, subtype: str | None = None) -> bytes:
    out = io.BytesIO()
    soundfile.write(out, samples, rate, subtype, format=fmt)
    return out.getvalue()


def sample(ext: str, data: bytes) -> Document:
    return Document("a", "a transcript", "web", media={ext: data, "txt": b"a transcript"})


@pytest.mark.parametrize(
    ("fmt", "subtype", "ext", "codec"),
    [
        ("WAV", "PCM_16", "wav", "pcm_s16"),
        ("FLAC", None, "flac", "flac"),
        ("OGG", "VORBIS", "ogg", "vorbis"),
        ("OGG", "OPUS", "opus", "opus"),
        ("MP3", "MPEG_LAYER_III", "mp3", "mp3"),
    ],
)
def test_decode_describes_every_codec(fmt, subtype, ext, codec):
    rate = 48000 if subtype == "OPUS" else 44100
    doc = DecodeAudio().apply(sample(ext, written(tone(2.0, rate, channels=2), rate, fmt, subtype)))
    assert not isinstance(doc, Drop), doc
    meta = doc.metadata
    assert (meta["codec"], meta["sample_rate"], meta["channels"]) == (codec, rate, 2)
    assert meta["duration"] == pytest.approx(2.0, abs=0.06)  # lossy codecs pad a frame


def test_ffmpeg_reads_what_libsndfile_cannot():
    import av

    out = io.BytesIO()
    with av.open(out, "w", format="adts") as container:  # AAC, which libsndfile lacks
        stream = container.add_stream("aac", rate=RATE)
        frame = av.AudioFrame.from_ndarray(tone(1.0).T.copy(), format="fltp", layout="mono")
        frame.sample_rate = RATE
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    info = probe(out.getvalue())
    assert (info.reader, info.codec, info.sample_rate) == ("ffmpeg", "aac", RATE)
    assert len(decode(out.getvalue(), info)) == pytest.approx(RATE, abs=2048)


def zero_channels(wav: bytes) -> bytes:
    return wav[:22] + struct.pack("<H", 0) + wav[24:]


def cut(data: bytes) -> bytes:
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty_audio"),
        (b"caption text under an audio name\n" * 8, "corrupt_audio"),
        (cut(written(tone(), RATE, "WAV")), "truncated_audio"),
        (cut(written(noisy(), RATE, "FLAC")), "truncated_audio"),
        (zero_channels(written(tone(), RATE, "WAV")), "corrupt_audio"),
        (written(tone(3.0), RATE, "FLAC"), "audio_too_long"),
    ],
    ids=["empty", "text", "cut-wav", "cut-flac", "zero-channels", "too-long"],
)  # fmt: skip
def test_bad_clips_are_excluded_with_their_reason(data, reason):
    result = DecodeAudio(max_duration=2.0).apply(sample("flac", data))
    assert isinstance(result, Drop) and result.reason == reason, result
    assert " at 0x" not in str(result.detail)  # the same detail on every run


def test_a_header_claiming_a_huge_rate_is_refused_before_decoding():
    data = bytearray(written(tone(), RATE, "WAV"))
    data[24:28] = struct.pack("<I", 4_000_000_000)
    result = DecodeAudio().apply(sample("wav", bytes(data)))
    assert isinstance(result, Drop) and result.reason == "corrupt_audio"


def test_a_sample_without_audio_names_its_media():
    doc = Document("a", "x", "web", media={"jpg": b"\xff\xd8"})
    assert DecodeAudio().apply(doc) == Drop("no_audio", {"media": ["jpg"]})


def test_resample_makes_mono_flac_at_the_target_rate_and_keeps_the_sound():
    doc = sample("wav", written(tone(1.5, 44100, channels=2), 44100, "WAV"))
    doc = ResampleAudio(sample_rate=RATE, channels=1).apply(doc)
    ext, data = audio_of(doc)
    assert ext == "flac" and sorted(doc.media) == ["flac", "txt"]
    samples, rate = soundfile.read(io.BytesIO(data), always_2d=True)
    assert (rate, samples.shape) == (RATE, (int(1.5 * RATE), 1))
    meta = doc.metadata
    assert (meta["original_sample_rate"], meta["original_channels"]) == (44100, 2)
    assert meta["duration"] == 1.5 and meta["codec"] == "flac"
    # The same 440 Hz tone at the same level, within 16-bit rounding and the filter's edges.
    assert rms_dbfs(samples[800:-800]) == pytest.approx(rms_dbfs(tone(1.0)), abs=0.05)
    spectrum = np.abs(np.fft.rfft(samples[:, 0]))
    assert np.argmax(spectrum) * RATE / len(samples) == pytest.approx(440, abs=1)


def test_resample_leaves_a_clip_already_in_shape_byte_for_byte():
    data = encode(tone(), RATE, "flac")
    doc = ResampleAudio(sample_rate=RATE).apply(sample("flac", data))
    assert audio_of(doc) == ("flac", data)


def test_resampling_is_deterministic():
    data = written(tone(1.0, 22050), 22050, "OGG", "VORBIS")
    first, second = (ResampleAudio().apply(sample("ogg", data)) for _ in range(2))
    assert audio_of(first) == audio_of(second)


def test_signal_measures():
    quiet = tone(1.0, level=0.01)
    assert rms_dbfs(quiet) == pytest.approx(20 * np.log10(0.01 / np.sqrt(2)), abs=0.01)
    half_silent = np.concatenate([tone(0.5), np.zeros((8000, 1), np.float32)])
    assert silence_ratio(half_silent, RATE) == 0.5
    clipped = np.clip(tone(1.0, level=2.0), -1, 1)
    assert 0.5 < clipping_ratio(clipped) < 0.9


@pytest.mark.parametrize(
    ("samples", "options", "reason"),
    [
        (tone(0.2), {}, "audio_too_short"),
        (tone(3.0), {"max_duration": 2.0}, "audio_too_long"),
        (np.zeros((RATE, 1), np.float32), {}, "mostly_silent"),
        (np.clip(tone(1.0, level=2.0), -1, 1), {}, "clipping"),
        (tone(1.0, level=0.001), {"max_silence_ratio": None, "min_rms_dbfs": -40}, "too_quiet"),
    ],
)
def test_quality_bounds_drop_with_their_reason(samples, options, reason):
    result = AudioQuality(**options).apply(sample("flac", encode(samples, RATE)))
    assert isinstance(result, Drop) and result.reason == reason, result


@needs_espeak
def test_the_synthetic_corpus_through_the_stages_accounts_for_every_clip(tmp_path):
    from mixplane.process.pipeline import run_pipeline
    from mixplane.synth.audio import generate_audio_corpus, read_audio_truth

    summary = generate_audio_corpus(str(tmp_path / "corpus"), 60, seed=3, per_shard=25)
    again = generate_audio_corpus(str(tmp_path / "again"), 60, seed=3, per_shard=25)
    assert summary.kinds == again.kinds and sum(summary.kinds.values()) == 60
    truth = read_audio_truth(str(tmp_path / "corpus"))
    for name in ("shard-00000.tar", "shard-00001.tar", "shard-00002.tar"):
        parts = [tmp_path / copy / "raw" / "webdataset" / name for copy in ("corpus", "again")]
        assert parts[0].read_bytes() == parts[1].read_bytes()
    stages = [
        {"decode_audio": {}},
        {"resample_audio": {"sample_rate": 16000}},
        {"audio_quality": {"min_duration": 0.3}},
    ]
    out = tmp_path / "out"
    config = {"input": str(tmp_path / "corpus" / "raw" / "webdataset"), "output": str(out)}
    result = run_pipeline({**config, "stages": stages})
    kept = pq.read_table(out, columns=["id", "sample_rate", "channels", "duration"]).to_pylist()
    excluded = pq.read_table(out / "_excluded", columns=["id", "reason"]).to_pylist()
    assert result.stats["documents_in"] == len(truth) == len(kept) + len(excluded)
    bad = truth[truth.kind == "bad"]
    assert {row["id"]: row["reason"] for row in excluded} == dict(
        zip(bad.doc_id, bad.expected_reason, strict=True)
    )
    assert {(row["sample_rate"], row["channels"]) for row in kept} == {(16000, 1)}
    assert all(row["duration"] > 0.3 for row in kept)


@needs_espeak
def test_the_readme_audio_pipeline_runs_as_written(tmp_path, monkeypatch, cli):
    import yaml
    from readme_blocks import readme_block, run_commands

    from mixplane.process.pipeline import run_pipeline
    from mixplane.synth.audio import generate_audio_corpus, read_audio_truth

    generate_audio_corpus(str(tmp_path / "synth"), 20, seed=5, per_shard=10)
    speech = tmp_path / "raw" / "speech"
    speech.mkdir(parents=True)
    for index in range(2):  # the README's shard names
        source = tmp_path / "synth" / "raw" / "webdataset" / f"shard-{index:05d}.tar"
        source.rename(speech / f"{index:05d}.tar")
    monkeypatch.chdir(tmp_path)
    result = run_pipeline(yaml.safe_load(readme_block("yaml", "resample_audio")))
    truth = read_audio_truth(str(tmp_path / "synth"))
    metas = sorted(str(path) for path in (tmp_path / "clean-speech").glob("*.meta.parquet"))
    kept = pq.ParquetDataset(metas).read(columns=["language", "sample_rate", "duration"])
    assert result.stats["documents_in"] == len(truth) == 20
    assert set(kept.column("sample_rate").to_pylist()) == {16000}
    assert result.stats["excluded"] >= (truth.kind == "bad").sum()
    _, counted = run_commands(cli, readme_block("bash", "mixplane catalog register clean-speech"))
    rows = kept.to_pylist()
    german = [r for r in rows if 1 <= r["duration"] <= 15 and r["language"] == "de"]
    assert f"{len(german):,} documents" in counted.replace("\n", " ")

    # The mixture and the loop, as written: an epoch of as many clips as were kept, each
    # one of them (weighed by seconds, a component may be read more or less than once).
    (tmp_path / "speech-mixture.yaml").write_text(readme_block("yaml", "kind: audio_text"))
    received = []
    names = {"rank": 0, "world_size": 1, "train_step": received.append}
    exec(readme_block("python", 'AudioTextDataset("speech-mixture.yaml"'), names)
    lengths = [int(n) for batch in received for n in batch["lengths"]]
    assert len(lengths) == len(rows)
    assert set(lengths) <= {round(r["duration"] * 16000) for r in rows}
    for batch in received:
        assert batch["audio"].numel() <= 320 * 16000
        assert batch["features"].shape[0] == batch["audio"].shape[0]
    assert names["checkpoint"]["data"] == names["dataset"].state_dict()


@needs_espeak
def test_dedup_audio_removes_the_planted_copies_and_nothing_else(tmp_path):
    from mixplane.process.pipeline import run_pipeline
    from mixplane.synth.audio import generate_audio_corpus, read_audio_truth

    generate_audio_corpus(str(tmp_path / "corpus"), 70, seed=11, per_shard=35)
    truth = read_audio_truth(str(tmp_path / "corpus"))
    stages = [{"decode_audio": {}}, {"audio_quality": {}}, {"dedup_audio": {}}]
    config = {"input": str(tmp_path / "corpus" / "raw" / "webdataset"), "stages": stages}
    for run, workers in (("one", 1), ("two", 2)):
        run_pipeline({**config, "output": str(tmp_path / run), "workers": workers})
    excluded = pq.read_table(tmp_path / "one" / "_excluded").to_pandas()
    removed = excluded[excluded.reason == "duplicate"]
    # Each planted group (an original and its copies) keeps exactly one clip.
    group = {doc: doc for doc in truth.doc_id}
    by_sample = dict(zip(truth.sample_id, truth.doc_id, strict=True))
    copies = truth[truth.kind == "duplicate"]
    for doc, original in zip(copies.doc_id, copies.duplicate_of, strict=True):
        group[doc] = by_sample[original]
    assert len(copies) >= 6
    assert set(removed.id) <= set(copies.doc_id) | set(by_sample[s] for s in copies.duplicate_of)
    kept_groups = [group[doc] for doc in truth.doc_id if doc not in set(excluded.id)]
    assert len(kept_groups) == len(set(kept_groups))
    assert len(removed) == len(copies)
    kept = [pq.read_table(tmp_path / run).sort_by("id") for run in ("one", "two")]
    assert kept[0].equals(kept[1])  # the same whatever the number of workers


def test_an_audio_folder_reads_clips_with_transcript_sidecars(tmp_path):
    from mixplane.process.pipeline import run_pipeline

    folder = tmp_path / "speech"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "one.flac").write_bytes(encode(noisy(1.0), RATE))
    (folder / "a" / "one.txt").write_text("the first clip")
    (folder / "two.WAV").write_bytes(encode(noisy(1.5), RATE, "wav"))
    (folder / "two.json").write_text('{"caption": "the second clip", "speaker": "s2"}')
    (folder / "notes.txt").write_text("not a clip: no audio beside it")
    (folder / "cover.jpg").write_bytes(b"\xff\xd8\xff")
    config = {
        "input": {"path": str(folder), "format": "audio_folder"},
        "output": str(tmp_path / "o"),
    }
    result = run_pipeline({**config, "stages": [{"decode_audio": {}}]})
    rows = pq.read_table(tmp_path / "o").sort_by("id").to_pylist()
    assert result.stats["documents_in"] == 2
    assert [(r["id"], r["text"], r["duration"]) for r in rows] == [
        ("a/one.flac", "the first clip", 1.0),
        ("two.WAV", "the second clip", 1.5),
    ]
    assert rows[1]["speaker"] == "s2" and rows[0]["source"] == "speech"


def test_clips_in_records_by_bytes_path_or_struct(tmp_path):
    import pyarrow as pa

    from mixplane.process.pipeline import run_pipeline

    raw = tmp_path / "raw"
    (raw / "clips").mkdir(parents=True)
    (raw / "clips" / "a.flac").write_bytes(encode(noisy(1.0), RATE))
    (raw / "speech.jsonl").write_text(
        '{"id": "j1", "sentence": "from a path", "audio": "clips/a.flac"}\n'
        '{"id": "j2", "sentence": "a missing file", "audio": "clips/gone.wav"}\n'
    )
    wav = encode(noisy(0.5), RATE, "wav")
    audio = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = pa.table(
        {
            "id": ["p1", "p2", "p3"],
            "sentence": ["raw bytes", "a struct", "a struct by path"],
            "audio": pa.array(
                [
                    {"bytes": wav, "path": None},
                    {"bytes": encode(noisy(0.75), RATE), "path": "x.flac"},
                    {"bytes": None, "path": str(raw / "clips" / "a.flac")},
                ],
                type=audio,
            ),
        }
    )
    pq.write_table(table, raw / "speech.parquet")
    inputs = [
        {"path": str(raw / "speech.jsonl"), "audio_key": "audio", "text_key": "sentence"},
        {"path": str(raw / "speech.parquet"), "audio_key": "audio", "text_key": "sentence"},
    ]
    out = tmp_path / "out"
    result = run_pipeline({"input": inputs, "output": str(out), "stages": [{"decode_audio": {}}]})
    rows = pq.read_table(out, columns=["id", "text", "duration", "codec"]).sort_by("id")
    assert rows.to_pylist() == [
        {"id": "j1", "text": "from a path", "duration": 1.0, "codec": "flac"},
        {"id": "p1", "text": "raw bytes", "duration": 0.5, "codec": "pcm_s16"},
        {"id": "p2", "text": "a struct", "duration": 0.75, "codec": "flac"},
        {"id": "p3", "text": "a struct by path", "duration": 1.0, "codec": "flac"},
    ]
    (bad,) = pq.read_table(out / "_quarantine").to_pylist()
    assert bad["location"].endswith("speech.jsonl:2")
    assert "audio field 'audio' names 'clips/gone.wav', which cannot be read" in bad["error"]
    assert result.stats["quarantined"] == 1
