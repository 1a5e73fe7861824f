"""The demo runs the whole journey end to end on a small corpus."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mixplane.demo import run_demo


def test_demo_runs_every_step(demo_run):
    """The session's demo run (the one the service tests serve): 1,500 documents, 25
    batches of 8 sequences."""
    work, steps, report = demo_run
    assert steps == ["synth", "process", "tokenizer", "tokenize", "catalog", "mix", "report"]
    process = report["process"]
    assert process["documents_in"] == 1500
    assert process["documents_in"] == process["kept"] + process["excluded"] + process["quarantined"]
    assert "dedup_exact" in process["excluded_by"]
    assert report["tokenize"]["documents"] == process["kept"]
    assert report["catalog"]["dataset"] == "demo@1"
    assert report["catalog"]["queries"]["German documents"]["documents"] > 0
    mix = report["mix"]
    assert mix["batches"] == 25 and mix["sequences"] == 25 * 8
    for component in mix["components"].values():
        assert (
            abs(
                component["realized"] * mix["sequences"] - component["requested"] * mix["sequences"]
            )
            <= 1
        )
    assert (work / "pipeline.yaml").exists() and (work / "mixture.yaml").exists()
    written = report["report"]
    assert written["documents"] == process["kept"]
    assert f"{process['kept']:,}" in (work / "report.html").read_text()
    assert len((work / "attribution.csv").read_text().splitlines()) == process["kept"] + 1


def test_demo_image_journey(tmp_path: Path):
    """The image-text half: every sample accounted for, duplicates found as planted, the
    shards registered and queried, the mixture streamed at its weights."""
    steps = []
    report = run_demo(
        tmp_path,
        docs=300,
        workers=2,
        batches=5,
        on_step=lambda n, _: steps.append(n),
        images=400,
        audio=0,
    )
    assert steps[-4:] == ["image_synth", "image_process", "image_catalog", "image_mix"]
    assert report["image_synth"]["samples"] == 400
    process = report["image_process"]
    # Never in any input: samples after the cut of the truncated shard, and img2dataset's
    # failed downloads (a row in its Parquet, no image in its tar). The rest is all counted.
    kinds = report["image_synth"]["kinds"]
    unread = kinds.get("lost_in_truncation", 0) + kinds.get("failed_download", 0)
    assert process["documents_in"] + unread == 400
    assert process["documents_in"] == process["kept"] + process["excluded"] + process["quarantined"]
    assert process["quarantined_by"]["read"] == {"truncated tar": 1}
    for reason in ("corrupt_image", "empty_image", "image_too_small", "image_too_large"):
        assert process["excluded_by"]["decode_image"][reason] > 0
    assert process["dedup"]["recall"] >= 0.95
    assert process["dedup"]["false_removal_rate"] < 0.01
    catalog = report["image_catalog"]
    assert catalog["dataset"] == "images@1"
    assert all(q["samples"] > 0 for q in catalog["queries"].values())
    mix = report["image_mix"]
    assert tuple(mix["batch_shape"]) == (16, 3, 224, 224)
    for component in mix["components"].values():
        assert abs(component["realized"] - component["requested"]) <= 1 / 16
    assert (tmp_path / "images" / "pipeline.yaml").exists()
    assert (tmp_path / "images" / "mixture.yaml").exists()


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="make audio-tools")
def test_demo_audio_journey(tmp_path: Path):
    """The audio-text part: every clip accounted for, copies found as planted, the shards
    registered and queried, the mixture streamed by duration at its weights in seconds."""
    from mixplane.demo_audio import run_audio_demo

    steps = []
    report = run_audio_demo(tmp_path, clips=80, batches=6, on_step=lambda n, _: steps.append(n))
    assert steps == ["audio_synth", "audio_process", "audio_catalog", "audio_mix"]
    process = report["audio_process"]
    assert process["documents_in"] == report["audio_synth"]["clips"] == 80
    assert process["documents_in"] == process["kept"] + process["excluded"]
    assert process["dedup"]["recall"] == 1.0 and process["dedup"]["false_removals"] == 0
    catalog = report["audio_catalog"]
    assert catalog["dataset"] == "speech@1"
    assert all(q["clips"] > 0 for q in catalog["queries"].values())
    mix = report["audio_mix"]
    assert mix["batches"] == 6 and mix["padding"] < 0.10
    assert (tmp_path / "audio" / "mixture.yaml").exists()
