"""Dedup on the Ray executor gives byte-identical outputs to the local one."""

from __future__ import annotations

from pathlib import Path

from test_dedup_pipeline import near_corpus

from mixplane.process.pipeline import run_pipeline


def test_ray_and_local_runs_write_identical_files(tmp_path: Path):
    near_corpus(tmp_path, seed=5)
    base = {
        "input": str(tmp_path / "raw" / "*" / "*.jsonl"),
        "stages": ["dedup_exact", {"dedup_minhash": {"threshold": 0.8}}],
        "task_size_mb": 0.1,
    }
    local = run_pipeline(base | {"output": str(tmp_path / "local")})
    ray = run_pipeline(base | {"output": str(tmp_path / "ray"), "workers": 2, "executor": "ray"})
    assert local.stats["tasks"] > 1 and local.stats["excluded"] > 0
    root = tmp_path / "local"
    files = sorted(
        p.relative_to(root)
        for p in root.rglob("*")
        if p.is_file() and p.parent.name != "_tasks" and not p.name.startswith("_")
    )
    assert files
    for name in files:
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes()
    for key in ("documents_in", "kept", "excluded", "excluded_by", "merges"):
        if key == "merges":
            for stage in local.stats[key]:
                local.stats[key][stage].pop("seconds")
                ray.stats[key][stage].pop("seconds")
        assert local.stats[key] == ray.stats[key]
