"""The engine's support for global stages: segments, merges, crash-safety and determinism.

The global stage here is defined by the test (keep the longest document per source), so the
engine is checked apart from deduplication.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pyarrow.parquet as pq
import pytest
from conftest import write_jsonl
from hypothesis import given
from hypothesis import strategies as st

from mixplane.document import Document, Drop
from mixplane.io.atomic import write_bytes
from mixplane.manifest import read_json
from mixplane.process.pipeline import run_pipeline
from mixplane.process.segment_plan import plan_segments
from mixplane.stages.base import Stage
from mixplane.stages.global_stage import GlobalStage, MergeRun, WorkArea


class Crash(BaseException):
    """Escapes the per-document error handling, like a killed worker would."""


def _log(path: str, line: str) -> None:
    if path:
        with open(path, "a") as handle:
            handle.write(line + "\n")


class LongestPerSource(GlobalStage):
    """Keeps, per source, only the longest document (ties: smallest id)."""

    name: ClassVar[str] = "longest_per_source"
    log: str = ""
    crash_flag: str = ""

    def collector(self, work: WorkArea, task: int):
        return _Lengths(work, task, self.log)

    def merge(self, work: WorkArea, tasks: list[int], run: MergeRun) -> dict[str, Any]:
        if self.crash_flag and Path(self.crash_flag).exists():
            raise Crash("merge")
        _log(self.log, "merge")
        best: dict[str, tuple] = {}
        for task in tasks:
            for row, (doc_id, source, length) in enumerate(
                read_json(work.url(f"lengths-{task}.json"))
            ):
                candidate = (-length, doc_id, task, row)
                best[source] = min(best.get(source, candidate), candidate)
        for task in tasks:
            keep = {row: doc_id for _, doc_id, t, row in best.values() if t == task}
            winners = {source: value[1] for source, value in best.items()}
            payload = {"keep": sorted(keep), "winners": winners}
            write_bytes(work.url(f"keep-{task}.json"), orjson.dumps(payload))
        return {"sources": len(best)}

    def decider(self, work: WorkArea, task: int):
        _log(self.log, f"decide {task}")
        return _Keep(read_json(work.url(f"keep-{task}.json")))


class _Lengths:
    def __init__(self, work: WorkArea, task: int, log: str):
        self.work, self.task, self.log, self.rows = work, task, log, []

    def add(self, docs: list[Document]) -> None:
        self.rows += [(doc.id, doc.source, len(doc.text)) for doc in docs]

    def close(self) -> dict[str, Any]:
        write_bytes(self.work.url(f"lengths-{self.task}.json"), orjson.dumps(self.rows))
        _log(self.log, f"collect {self.task}")
        return {"documents": len(self.rows)}


class _Keep:
    def __init__(self, decisions: dict):
        self.keep, self.winners, self.row = set(decisions["keep"]), decisions["winners"], 0

    def decide(self, docs: list[Document]) -> list:
        results = []
        for doc in docs:
            keep = self.row in self.keep
            self.row += 1
            results.append(doc if keep else Drop("shorter", {"longest": self.winners[doc.source]}))
        return results


class CrashOn(Stage):
    """Raises `Crash` on one document while a flag file exists."""

    name: ClassVar[str] = "crash_on"
    doc_id: str
    flag: str

    def apply(self, doc: Document) -> Document | Drop:
        if doc.id == self.doc_id and Path(self.flag).exists():
            raise Crash(doc.id)
        return doc


class DropOdd(Stage):
    """An ordinary stage: drops documents whose id ends in an odd digit."""

    name: ClassVar[str] = "drop_odd"

    def apply(self, doc: Document) -> Document | Drop:
        return Drop("odd") if int(doc.id[-1]) % 2 else doc


def corpus(root: Path) -> Path:
    for source in ("red", "blue", "green"):
        for part in range(2):
            records = [
                {"id": f"{source}-{part}{i}", "text": "word " * ((i * 7 + part * 3) % 11 + 1)}
                for i in range(10)
            ]
            write_jsonl(root / "raw" / source / f"{part}.jsonl", records)
    return root / "raw"


def config(raw: Path, out: Path, stages: list, **extra) -> dict:
    """A task per file: each (0.6 kB) is within 0.001 MB, and no two together."""
    files = {"input": str(raw / "*" / "*.jsonl"), "output": str(out), "task_size_mb": 0.001}
    return files | {"stages": stages} | extra


def outputs(out: Path) -> dict[str, bytes]:
    files = [*out.glob("part-*"), *out.glob("_excluded/*"), *out.glob("_quarantine/*")]
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(files)}


@given(st.lists(st.booleans(), min_size=1, max_size=9).filter(any))
def test_segments_cover_every_stage_and_replay_what_their_source_skipped(flags):
    segments = plan_segments(flags)
    assert len(segments) == sum(flags) + 1
    order = []
    for segment in segments:
        if segment.opens is not None:
            order.append(segment.opens)
        order += segment.stages
        assert segment.collects == (segment.stages[-1] + 1 if segment.stages else None) or (
            segment.collects is None or flags[segment.collects]
        )
        saving = [s.index for s in segments[: segment.index] if s.saves]
        assert segment.source == (saving[-1] if saving else -1)
        between = segments[segment.source + 1 : segment.index]
        assert segment.replays == tuple(s.opens for s in between if s.opens is not None)
        assert segment.saves == (bool(segment.stages) and not segment.final)
    assert order == list(range(len(flags)))


def test_segments_balance_and_gather_every_exclusion_in_one_file_per_task(tmp_path: Path):
    raw = corpus(tmp_path)
    stages = [
        "test_global_stage:DropOdd",
        "test_global_stage:LongestPerSource",
        "dedup_exact",
        "custom_stages:Shout",
    ]
    one = run_pipeline(config(raw, tmp_path / "one", stages)).stats
    two = run_pipeline(config(raw, tmp_path / "two", stages, workers=2)).stats
    assert outputs(tmp_path / "one") == outputs(tmp_path / "two")
    # The three longest documents (one per source) have the same text: one survives.
    assert one["documents_in"] == 60 and one["kept"] == 1
    assert one["excluded_by"]["drop_odd"] == {"odd": 30}
    assert one["excluded_by"]["longest_per_source"] == {"shorter": 27}
    assert one["excluded_by"]["dedup_exact"] == {"duplicate": 2}
    assert one["merges"]["longest_per_source"] == {"sources": 3, "seconds": pytest.approx(0, abs=5)}
    for key in ("documents_in", "kept", "excluded", "excluded_by"):
        assert one[key] == two[key]
    for task in range(6):
        rows = pq.read_table(tmp_path / "one" / "_excluded" / f"part-{task:05d}.parquet")
        stages_seen = rows["stage"].to_pylist()
        order = ["drop_odd", "longest_per_source", "dedup_exact"]
        assert stages_seen == sorted(stages_seen, key=order.index)
        marker = json.loads((tmp_path / "one" / "_tasks" / f"task-{task:05d}.json").read_text())
        stats = marker["stats"]
        assert stats["documents_in"] == stats["kept"] + stats["excluded"] + stats["quarantined"]
        assert marker["outputs"][1]["records"] == rows.num_rows
    kept = [
        row
        for p in sorted((tmp_path / "one").glob("part-*"))
        for row in pq.read_table(p).to_pylist()
    ]
    assert [row["id"] for row in kept] == ["blue-06"] and kept[0]["text"].endswith("!")


def test_a_crash_in_a_merge_resumes_without_collecting_again(tmp_path: Path):
    raw = corpus(tmp_path)
    log, flag = tmp_path / "log.txt", tmp_path / "crash"
    stage = {"test_global_stage:LongestPerSource": {"log": str(log), "crash_flag": str(flag)}}
    reference = run_pipeline(config(raw, tmp_path / "ref", [stage]))
    log.unlink()
    flag.touch()
    with pytest.raises(Crash):
        run_pipeline(config(raw, tmp_path / "out", [stage]))
    assert log.read_text().split("\n").count("merge") == 0
    flag.unlink()
    resumed = run_pipeline(config(raw, tmp_path / "out", [stage]))
    events = log.read_text().split()
    assert events.count("collect") == 6 and events.count("merge") == 1
    assert outputs(tmp_path / "out") == outputs(tmp_path / "ref")
    assert resumed.stats["kept"] == reference.stats["kept"] == 3
    assert not (tmp_path / "out" / "_work").exists()


@pytest.mark.parametrize(
    ("where", "collects", "decides"), [("before", 2 + 4, 6), ("after", 6, 3 + 4)]
)
def test_a_crash_in_a_segment_redoes_only_unfinished_tasks(
    tmp_path: Path, where: str, collects: int, decides: int
):
    raw = corpus(tmp_path)
    log, flag = tmp_path / "log.txt", tmp_path / "crash"
    # green-06 is the longest green document, so it also reaches stages after the merge.
    crash = {"test_global_stage:CrashOn": {"doc_id": "green-06", "flag": str(flag)}}
    stages = [
        "test_global_stage:DropOdd",
        {"test_global_stage:LongestPerSource": {"log": str(log)}},
    ]
    stages.insert(1 if where == "before" else 2, crash)
    run_pipeline(config(raw, tmp_path / "ref", stages))
    log.unlink()
    flag.touch()
    with pytest.raises(Crash):
        run_pipeline(config(raw, tmp_path / "out", stages))
    final = sorted(p.name for p in (tmp_path / "out" / "_tasks").glob("*.json"))
    assert final == ([] if where == "before" else ["task-00000.json", "task-00001.json"])
    flag.unlink()
    result = run_pipeline(config(raw, tmp_path / "out", stages))
    events = log.read_text().splitlines()
    assert events.count("merge") == 1
    assert len([e for e in events if e.startswith("collect")]) == collects
    assert len([e for e in events if e.startswith("decide")]) == decides
    # Tasks that reused completed work: those that finished the first segment before the
    # crash, and (after the merge) also those that finished the final one.
    reused = (
        {"segment 1/2": 2, "segment 2/2": 0}
        if where == "before"
        else {
            "segment 1/2": 6,
            "segment 2/2": 2,
        }
    )
    assert result.stats["skipped_by_segment"] == reused
    assert result.skipped_tasks == result.stats["skipped_tasks"] == reused["segment 1/2"]
    assert outputs(tmp_path / "out") == outputs(tmp_path / "ref")


def test_a_global_stage_cannot_run_outside_a_pipeline():
    with pytest.raises(TypeError, match="whole corpus"):
        LongestPerSource().apply(Document("a", "text", "s"))


def test_progress_hooks_announce_every_phase(tmp_path: Path):
    from conftest import make_records, write_jsonl

    from mixplane import Pipeline, PipelineConfig

    raw = tmp_path / "raw"
    for i in range(3):
        write_jsonl(raw / f"f{i}.jsonl", make_records(20, f"f{i}") + make_records(5, "dup"))
    config = PipelineConfig.parse(
        {"input": str(raw), "output": str(tmp_path / "o"), "stages": ["dedup_exact"]}
        | {"task_size_mb": 0.005}  # a task per file (3.3 kB)
    )
    phases, done = [], []
    Pipeline(config).run(
        on_phase=lambda name, tasks: phases.append((name, tasks)),
        on_done=lambda result: done.append(result["task"]),
    )
    assert phases == [("segment 1/2", 3), ("merging dedup_exact", None), ("segment 2/2", 3)]
    assert sorted(done) == [0, 0, 1, 1, 2, 2]
