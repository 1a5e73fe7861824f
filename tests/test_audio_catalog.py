"""Audio-text shards: a processing run writes them, the catalog registers and queries them."""

from __future__ import annotations

import io
import shutil

import orjson
import pyarrow.parquet as pq
import pytest
import soundfile

from mixplane.catalog import Catalog
from mixplane.document import Document
from mixplane.errors import ConfigError, MixplaneError
from mixplane.io.audio_codec import encode
from mixplane.process.config import PipelineConfig
from mixplane.process.pipeline import run_pipeline
from mixplane.store.audio import AudioShardReader, AudioShardWriter

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="make audio-tools")

STAGES = [
    {"decode_audio": {}},
    {"resample_audio": {"sample_rate": 16000}},
    {"audio_quality": {"min_duration": 0.3}},
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from mixplane.synth.audio import generate_audio_corpus

    folder = tmp_path_factory.mktemp("speech")
    generate_audio_corpus(str(folder), 40, seed=7, per_shard=20)
    return folder


def process(corpus, out, workers=1):
    return run_pipeline(
        {
            "input": str(corpus / "raw" / "webdataset"),
            "output": str(out),
            "output_format": "webdataset",
            "output_media": "audio",
            "stages": STAGES,
            "workers": workers,
        }
    )


@needs_espeak
def test_audio_shards_account_for_every_clip_and_the_catalog_queries_them(corpus, tmp_path, cli):
    from mixplane.synth.audio import read_audio_truth

    out = tmp_path / "clean"
    stats = process(corpus, out).stats
    truth = read_audio_truth(str(corpus))
    assert stats["documents_in"] == len(truth) == stats["kept"] + stats["excluded"]
    excluded = pq.read_table(out / "_excluded", columns=["id", "reason"]).to_pylist()
    bad = truth[truth.kind == "bad"]
    assert {row["id"]: row["reason"] for row in excluded} == dict(
        zip(bad.doc_id, bad.expected_reason, strict=True)
    )

    # Each kept clip is one range read: a 16 kHz mono FLAC whose length the metadata gives.
    meta = pq.read_table(out / "part-00000.meta.parquet").to_pylist()
    reader = AudioShardReader(str(out), "part-00000")
    assert len(reader) == len(meta) > 0
    for index, row in enumerate(meta):
        sample = reader.sample(index)
        assert sample["txt"].decode() == row["caption"]
        assert orjson.loads(sample["json"])["id"] == row["id"]
        clip, rate = soundfile.read(io.BytesIO(sample["flac"]))
        assert rate == row["sample_rate"] == 16000 and clip.ndim == 1
        assert len(clip) == row["frames"] and row["duration"] == pytest.approx(len(clip) / rate)
        assert (row["codec"], row["audio_format"], row["channels"]) == ("flac", "flac", 1)
        assert row["audio_bytes"] == len(sample["flac"])

    catalog_path = tmp_path / "catalog.duckdb"
    version = Catalog(catalog_path).register(str(out), "speech")
    assert version.kind == "audio_text" == version.summary()["kind"]
    assert version.documents == stats["kept"] and version.tokens == 0
    metas = sorted(str(path) for path in out.glob("*.meta.parquet"))
    kept = pq.ParquetDataset(metas).read(columns=["duration", "language"]).to_pylist()
    expected = sum(1 for row in kept if row["duration"] >= 1.0 and row["language"] == "de")
    assert 0 < expected < len(kept)
    selection = Catalog(catalog_path).select("duration >= 1.0 AND language = 'de'")
    assert selection["speech@1"].documents == expected

    code, shown, _ = cli("catalog", "show", "speech", "-c", str(catalog_path))
    assert code == 0 and "audio clips" in shown and "sample_rate" in shown
    code, shown, _ = cli("catalog", "list", "-c", str(catalog_path))
    assert code == 0 and "audio-text" in shown
    code, shown, _ = cli("query", "language = 'de'", "-c", str(catalog_path), "-s", "1")
    assert code == 0 and "no token files" not in shown


@needs_espeak
def test_audio_shards_do_not_depend_on_the_number_of_workers(corpus, tmp_path):
    process(corpus, tmp_path / "one", workers=1)
    process(corpus, tmp_path / "two", workers=2)
    for name in ("part-00000.tar", "part-00000.idx", "part-00001.meta.parquet"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_a_document_without_a_clip_is_quarantined_by_the_audio_writer(tmp_path):
    writer = AudioShardWriter(str(tmp_path), "part-00000")
    clip = encode(__import__("numpy").zeros((1600, 1), "float32"), 16000, "flac")
    writer.write(Document("a", "hello", "web", {}, {"flac": clip}))
    with pytest.raises(MixplaneError, match="has no audio to write .*flac, wav"):
        writer.write(Document("b", "an image", "web", {}, {"jpg": b"\xff\xd8"}))
    entries = writer.close()
    assert [entry["records"] for entry in entries] == [1, 1, 1]
    row = pq.read_table(tmp_path / "part-00000.meta.parquet").to_pylist()[0]
    # No stage described the clip: its header did.
    assert (row["duration"], row["sample_rate"], row["frames"]) == (0.1, 16000, 1600)


def test_output_media_audio_needs_webdataset_shards():
    with pytest.raises(ConfigError, match="output_media: audio writes media shards"):
        PipelineConfig.parse({"input": "x", "output": "y", "output_media": "audio"})
    plain = PipelineConfig.parse({"input": "x", "output": "y", "output_format": "webdataset"})
    audio = PipelineConfig.parse(
        {"input": "x", "output": "y", "output_format": "webdataset", "output_media": "audio"}
    )
    assert plain.outputs_hash() != audio.outputs_hash()
