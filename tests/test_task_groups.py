"""Small input files are grouped into tasks: many one-record files give a few parts, the
same bytes for any number of workers, and reruns resume by task, also after files were
added to the inputs."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pipeline import part_hashes

from mixplane import run_pipeline
from mixplane.errors import MostlyQuarantinedError
from mixplane.lineage import document_origin, trace
from mixplane.process.tasks import GROUP_FILES, InputFile, plan_tasks


def one_record_files(raw: Path, count: int, prefix: str = "f") -> None:
    for i in range(count):
        write_jsonl(raw / f"{prefix}{i:04d}.jsonl", [{"id": f"{prefix}{i}", "text": f"note {i}"}])


def test_many_one_record_files_give_a_few_parts_identical_for_any_worker_count(tmp_path: Path):
    raw = tmp_path / "raw" / "notes"
    one_record_files(raw, GROUP_FILES + 44)
    one = run_pipeline({"input": str(raw), "output": str(tmp_path / "one")})
    run_pipeline({"input": str(raw), "output": str(tmp_path / "two"), "workers": 2})
    assert (one.stats["tasks"], one.stats["kept"]) == (2, GROUP_FILES + 44)
    parts = sorted(p.name for p in (tmp_path / "one").glob("part-*.parquet"))
    assert parts == ["part-00000.parquet", "part-00001.parquet"]
    assert pq.read_metadata(tmp_path / "one" / parts[0]).num_rows == GROUP_FILES
    assert part_hashes(tmp_path / "one") == part_hashes(tmp_path / "two")
    ids = pq.read_table(tmp_path / "one", columns=["id"]).column("id").to_pylist()
    assert ids == [f"f{i}" for i in range(GROUP_FILES + 44)]  # in file order


def test_a_rerun_skips_finished_groups_and_redoes_those_whose_files_changed(tmp_path: Path):
    raw, out = tmp_path / "raw" / "notes", tmp_path / "out"
    one_record_files(raw, 12)
    size = (raw / "f0000.jsonl").stat().st_size  # 31 bytes; up to 32 for the others
    config = {"input": str(raw), "output": str(out), "task_size_mb": 4.5 * size / (1 << 20)}
    first = run_pipeline(config)
    assert first.stats["tasks"] == 3  # four files a task
    again = run_pipeline(config)
    assert again.skipped_tasks == 3
    # A file sorting first shifts every group after it: those tasks are redone, not
    # skipped by their numbers (task 0 now starts with the new file).
    one_record_files(raw, 1, prefix="a")
    changed = run_pipeline(config)
    assert (changed.stats["tasks"], changed.skipped_tasks, changed.stats["kept"]) == (4, 0, 13)
    run_pipeline(config | {"output": str(tmp_path / "clean")})
    assert part_hashes(out) == part_hashes(tmp_path / "clean")


def test_lineage_names_the_file_of_a_grouped_task_a_document_came_from(tmp_path: Path):
    raw = tmp_path / "raw" / "notes"
    one_record_files(raw, 5)
    write_jsonl(raw / "f0002b.jsonl", [{"text": "a note without an id"}])
    result = run_pipeline({"input": str(raw), "output": str(tmp_path / "out")})
    assert result.stats["tasks"] == 1
    steps = trace(str(tmp_path / "out"))
    (own_id,) = document_origin(steps, "f3")  # an id of its own: looked for in the files
    assert own_id["input"] == {"url": str(raw / "f0003.jsonl"), "start": 0, "end": None}
    (named,) = document_origin(steps, "f0002b.jsonl@0")  # an id its reader made
    assert named["input"] == {"url": str(raw / "f0002b.jsonl"), "start": 0, "end": None}
    assert own_id["part"] == named["part"] == str(tmp_path / "out" / "part-00000.parquet")


def test_a_bad_file_among_good_ones_of_its_task_is_still_named(tmp_path: Path):
    raw = tmp_path / "raw" / "notes"
    one_record_files(raw, 10)
    write_jsonl(raw / "f0005b.jsonl", [{"id": f"b{i}", "body": "x"} for i in range(20)])
    with pytest.raises(MostlyQuarantinedError) as caught:
        run_pipeline({"input": str(raw), "output": str(tmp_path / "out")})
    assert caught.value.result.stats["tasks"] == 1
    assert str(caught.value).startswith(f"{raw}/f0005b.jsonl: 20 of 20 records quarantined")


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.integers(0, 400), min_size=1, max_size=60),
    st.integers(1, 1000),
    st.lists(st.integers(0, 2), min_size=60, max_size=60),
)
def test_plans_cover_every_byte_once_in_order(sizes, task_bytes, inputs):
    """Grouping is a pure function of the files: each byte of each file is in one task, in
    file order; a task holds files of one input, within the size and file limits."""
    files = [
        InputFile(f"f{i:03d}.jsonl", f"f{i:03d}.jsonl", "jsonl", size, inputs[i])
        for i, size in enumerate(sizes)
    ]
    tasks = plan_tasks(files, task_bytes)
    assert tasks == plan_tasks(list(reversed(files)), task_bytes)
    assert [t.index for t in tasks] == list(range(len(tasks)))
    covered = []
    for task in tasks:
        assert {files[int(s.url[1:4])].input_index for s in task.shards} == {task.input_index}
        if len(task.shards) > 1:
            assert len(task.shards) <= GROUP_FILES and task.size <= task_bytes
        for shard in task.shards:
            size = files[int(shard.url[1:4])].size
            covered.append((shard.url, shard.start, size if shard.end is None else shard.end))
    # Files in order, each from its first byte to its last in consecutive pieces.
    order = sorted(files, key=lambda f: (f.input_index, f.url))
    expected = [f.url for f in order]
    assert list(dict.fromkeys(url for url, _, _ in covered)) == expected
    for file in order:
        pieces = [(start, end) for url, start, end in covered if url == file.url]
        assert pieces[0][0] == 0 and pieces[-1][1] == file.size
        assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:], strict=False))
