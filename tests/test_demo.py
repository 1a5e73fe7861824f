"""The demo runs the whole journey end to end on a small corpus."""

from __future__ import annotations

from pathlib import Path

from mixplane.demo import run_demo


def test_demo_runs_every_step(tmp_path: Path):
    steps = []
    report = run_demo(
        tmp_path, docs=600, workers=2, batches=25, on_step=lambda n, _: steps.append(n)
    )
    assert steps == ["synth", "process", "tokenizer", "tokenize", "catalog", "mix"]
    process = report["process"]
    assert process["documents_in"] == 600
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
    assert (tmp_path / "pipeline.yaml").exists() and (tmp_path / "mixture.yaml").exists()
