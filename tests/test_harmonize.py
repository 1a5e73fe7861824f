"""Every Parquet part of an output folder ends up with one schema, readable by any reader."""

from __future__ import annotations

from pathlib import Path

import datasets
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import write_jsonl
from test_pipeline import part_hashes

import mixplane.process.harmonize as harmonize_module
from mixplane import run_pipeline
from mixplane.manifest import file_digest, read_json


def sparse_inputs(raw: Path) -> list[str]:
    """Three files whose records carry different optional properties, as three inputs (so
    three tasks: small files of one input would share one)."""
    write_jsonl(
        raw / "a.jsonl", [{"id": f"a{i}", "text": "alpha beta", "tag": None} for i in range(4)]
    )
    write_jsonl(raw / "b.jsonl", [{"id": f"b{i}", "text": "gamma", "score": 0.5} for i in range(4)])
    write_jsonl(
        raw / "c.jsonl", [{"id": f"c{i}", "text": "delta", "tag": "x", "n": i} for i in range(4)]
    )
    return [str(raw / name) for name in ("a.jsonl", "b.jsonl", "c.jsonl")]


def test_parts_share_one_schema_that_every_reader_opens(tmp_path: Path):
    raw = sparse_inputs(tmp_path / "raw")
    out = tmp_path / "out"
    result = run_pipeline({"input": raw, "output": str(out)})
    schemas = [pq.read_schema(path) for path in sorted(out.glob("part-*.parquet"))]
    assert len(schemas) == 3 and all(s.equals(schemas[0]) for s in schemas)
    assert schemas[0].names == ["id", "text", "source", "tag", "score", "n"]
    assert schemas[0].field("tag").type == pa.string()
    table = pq.read_table(out)
    assert table.num_rows == 12 and table.column("tag").null_count == 8
    files = [str(p) for p in sorted(out.glob("part-*.parquet"))]
    loaded = datasets.load_dataset("parquet", data_files=files, split="train")
    assert loaded.num_rows == 12 and loaded.features["score"].dtype == "float64"
    assert duckdb.sql(f"SELECT count(n) FROM read_parquet({files})").fetchall() == [(4,)]
    # The manifest's hashes are those of the rewritten files; markers record the schema.
    for entry in read_json(result.manifest)["outputs"]:
        assert (entry["size"], entry["hash"]) == file_digest(str(out / entry["path"]))
    markers = [read_json(str(p)) for p in sorted((out / "_tasks").glob("*.json"))]
    assert len({m["schema"] for m in markers}) == 1  # all three parts were rewritten
    assert not (out / "_work").exists()
    # A rerun changes nothing.
    before = part_hashes(out)
    again = run_pipeline({"input": raw, "output": str(out)})
    assert again.stats["skipped_tasks"] == 3 and part_hashes(out) == before


def test_a_crash_between_marker_and_move_is_finished_by_the_rerun(tmp_path, monkeypatch):
    raw = sparse_inputs(tmp_path / "raw")
    clean = tmp_path / "clean"
    run_pipeline({"input": raw, "output": str(clean)})
    moves = []
    real_move = harmonize_module._finish_move

    def crash_on_second_move(staged, final, options):
        moves.append(final)
        if len(moves) == 2:
            raise KeyboardInterrupt("killed")
        real_move(staged, final, options)

    monkeypatch.setattr(harmonize_module, "_finish_move", crash_on_second_move)
    crashed = tmp_path / "crashed"
    with pytest.raises(KeyboardInterrupt):
        run_pipeline({"input": raw, "output": str(crashed)})
    monkeypatch.setattr(harmonize_module, "_finish_move", real_move)
    run_pipeline({"input": raw, "output": str(crashed)})
    assert part_hashes(crashed) == part_hashes(clean)
    manifest = read_json(str(crashed / "_manifest.json"))
    for entry in manifest["outputs"]:
        assert (entry["size"], entry["hash"]) == file_digest(str(crashed / entry["path"]))


def test_columns_with_conflicting_types_leave_the_parts_as_written(tmp_path: Path):
    raw = tmp_path / "raw"
    write_jsonl(raw / "a.jsonl", [{"id": "a", "text": "one", "value": 1}])
    write_jsonl(raw / "b.jsonl", [{"id": "b", "text": "two", "value": "high"}])
    out = tmp_path / "out"
    run_pipeline({"input": [str(raw / "a.jsonl"), str(raw / "b.jsonl")], "output": str(out)})
    types = [pq.read_schema(p).field("value").type for p in sorted(out.glob("part-*.parquet"))]
    assert types == [pa.int64(), pa.string()]
    count = duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}/part-*', union_by_name=true)")
    assert count.fetchall() == [(2,)]
