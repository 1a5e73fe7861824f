"""The processing engine end to end, on real files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import make_records, write_jsonl

from mixplane import Pipeline, PipelineConfig, run_pipeline
from mixplane.document import Document
from mixplane.errors import ConfigError, InputError
from mixplane.io.urls import open_url
from mixplane.io.writers import DocumentWriter
from mixplane.manifest import file_digest, read_json
from mixplane.process.config import InputConfig
from mixplane.tokenize.inputs import find_input_files


def part_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*.parquet"))
    }


def stages_config(raw: Path, out: Path, **extra) -> dict:
    return {
        "input": [str(raw / "wiki" / "*"), str(raw / "code" / "*.jsonl.zst")],
        "output": str(out),
        "task_size_mb": 0.002,
        "stages": [
            {"custom_stages:Shout": {"banned": "number 1 "}},
            {"custom_stages:Fragile": {"digit": "7"}},
            {"custom_stages.keep_short": {"max_chars": 100}},
        ],
        "max_stage_errors": 100,
        **extra,
    }


def test_stats_balance_and_every_record_has_a_place(small_corpus: Path, tmp_path: Path):
    result = run_pipeline(stages_config(small_corpus, tmp_path / "out"))
    stats = result.stats
    assert stats["documents_in"] == 290 and stats["quarantined"] == 0
    assert stats["documents_in"] == stats["kept"] + stats["excluded"] + stats["errored"]
    out = tmp_path / "out"
    kept = sum(pq.read_metadata(p).num_rows for p in out.glob("part-*.parquet"))
    excluded = pq.read_table(out / "_excluded").to_pylist()
    errored = pq.read_table(out / "_errors").to_pylist()
    assert (kept, len(excluded), len(errored)) == (
        stats["kept"],
        stats["excluded"],
        stats["errored"],
    )
    assert {e["reason"] for e in excluded} == {"banned_word", "rejected"}
    assert stats["excluded_by"]["shout"]["banned_word"] == sum(
        e["reason"] == "banned_word" for e in excluded
    )
    assert all(e["stage"] == "fragile" for e in errored)
    assert all(e["error"].startswith("ValueError: cannot handle") for e in errored)
    assert all(e["id"].endswith("7") for e in errored)
    saved = read_json(str(out / "_stats.json"))
    assert saved["kept"] == stats["kept"]


def test_one_worker_two_workers_and_ray_write_identical_parts(small_corpus: Path, tmp_path: Path):
    one = run_pipeline(stages_config(small_corpus, tmp_path / "one"))
    run_pipeline(stages_config(small_corpus, tmp_path / "two", workers=2))
    run_pipeline(stages_config(small_corpus, tmp_path / "ray", workers=2, executor="ray"))
    assert one.stats["tasks"] > 4
    reference = part_hashes(tmp_path / "one")
    assert len(reference) > one.stats["tasks"]
    assert part_hashes(tmp_path / "two") == reference
    assert part_hashes(tmp_path / "ray") == reference
    manifests = [read_json(str(tmp_path / n / "_manifest.json")) for n in ("one", "two", "ray")]
    assert len({m["config_hash"] for m in manifests}) == 1
    assert manifests[0]["outputs"] == manifests[1]["outputs"] == manifests[2]["outputs"]


def test_manifest_describes_inputs_and_outputs(small_corpus: Path, tmp_path: Path):
    run_pipeline({"input": str(small_corpus / "**" / "*.json*"), "output": str(tmp_path / "o")})
    manifest = read_json(str(tmp_path / "o" / "_manifest.json"))
    assert manifest["tool"] == "mixplane" and manifest["kind"] == "process"
    assert {Path(i["url"]).name for i in manifest["inputs"]} == {
        "a.jsonl",
        "b.jsonl.gz",
        "c.jsonl.zst",
    }
    assert all(
        i["fingerprint"].startswith("xxh3_128:") and i["size"] > 0 for i in manifest["inputs"]
    )
    for output in manifest["outputs"]:
        assert (tmp_path / "o" / output["path"]).stat().st_size == output["size"]
    assert manifest["config"]["output"] == str(tmp_path / "o")


def test_metadata_fields_survive_and_sources_come_from_folders(small_corpus: Path, tmp_path: Path):
    run_pipeline({"input": str(small_corpus / "**" / "*.json*"), "output": str(tmp_path / "o")})
    table = pq.read_table(tmp_path / "o").to_pylist()
    assert {row["source"] for row in table} == {"wiki", "code"}
    assert {row["lang"] for row in table} == {"en", "de", "py"}


def test_custom_stage_from_yaml_by_import_path(small_corpus: Path, tmp_path: Path):
    config = tmp_path / "pipeline.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "input": [str(small_corpus / "wiki" / "a.jsonl")],
                "output": str(tmp_path / "out"),
                "stages": [{"custom_stages:Shout": {"suffix": "?!"}}],
            }
        )
    )
    result = Pipeline.from_yaml(config).run()
    rows = pq.read_table(tmp_path / "out" / "part-00000.parquet").to_pylist()
    assert result.stats["kept"] == 120
    assert rows[0]["text"] == "WA NUMBER 0 SAYS HELLO ?!"
    assert all(row["shouted"] for row in rows)


def test_rerun_skips_completed_tasks_and_redoes_those_with_stage_errors(
    small_corpus: Path, tmp_path: Path
):
    config = stages_config(small_corpus, tmp_path / "out")
    config["stages"][1] = {"custom_stages:Fragile": {"digit": "-17"}}  # wa-17, wb-17, cc-17
    first = run_pipeline(config)
    markers = {p: p.stat().st_mtime_ns for p in (tmp_path / "out" / "_tasks").iterdir()}
    failed = {f"task-{t['task']:05d}.json" for t in first.tasks if t["stats"]["errored"]}
    assert len(failed) == first.stats["errored"] == 3 and first.stats["tasks"] > 6
    second = run_pipeline(config)
    assert second.skipped_tasks == first.stats["tasks"] - len(failed)
    counts = ("documents_in", "kept", "excluded", "errored", "errored_by", "error_examples")
    assert {k: second.stats[k] for k in counts} == {k: first.stats[k] for k in counts}
    redone = {p.name for p, mtime in markers.items() if p.stat().st_mtime_ns != mtime}
    assert redone == failed


def test_jsonl_output(small_corpus: Path, tmp_path: Path):
    result = run_pipeline(
        {
            "input": str(small_corpus / "wiki" / "a.jsonl"),
            "output": str(tmp_path / "o"),
            "output_format": "jsonl",
        }
    )
    with open_url(str(tmp_path / "o" / "part-00000.jsonl.zst")) as stream:
        lines = stream.read().splitlines()
    assert len(lines) == result.stats["kept"] == 120
    assert json.loads(lines[0]) == {
        "id": "wa-0",
        "text": "wa number 0 says hello ",
        "source": "wiki",
        "lang": "en",
    }


@pytest.mark.parametrize("name", ["part-00003.parquet", "part-00003.jsonl.zst"])
def test_a_document_writer_closes_with_the_manifest_entry_of_its_file(tmp_path: Path, name):
    # The pipeline lists what `close` returns as the task's outputs, for every output format.
    writer = DocumentWriter(str(tmp_path / name))
    for record in make_records(5):
        writer.write(Document(record["id"], record["text"], "web", {"lang": record["lang"]}))
    entries = writer.close()
    size, digest = file_digest(str(tmp_path / name))
    assert entries == [{"path": name, "size": size, "hash": digest, "records": 5}]


def test_faulty_inputs_are_quarantined_with_locations(tmp_path: Path):
    raw = tmp_path / "raw" / "web"
    write_jsonl(raw / "good.jsonl", make_records(10))
    (raw / "bad.jsonl").write_bytes(b'{"text": "ok"}\n{oops\n\xff\xfe\n')
    (raw / "empty.jsonl").write_bytes(b"")
    cut = write_jsonl(raw / "cut.jsonl.zst", make_records(3000), "zstd")
    cut.write_bytes(cut.read_bytes()[:2000])
    result = run_pipeline({"input": str(raw), "output": str(tmp_path / "o"), "workers": 2})
    stats = result.stats
    assert stats["documents_in"] == stats["kept"] + stats["quarantined"]
    rows = pq.read_table(tmp_path / "o" / "_quarantine").to_pylist()
    locations = sorted(r["location"] for r in rows)
    assert f"{raw}/bad.jsonl:2" in locations and f"{raw}/bad.jsonl:3" in locations
    assert any(loc.startswith(f"{raw}/cut.jsonl.zst:") for loc in locations)
    assert stats["quarantined_by"]["read"]["invalid JSON"] == 1
    assert stats["quarantined_by"]["read"]["invalid UTF-8"] == 1


def test_broken_parquet_inputs_are_quarantined_and_the_rest_processed(tmp_path: Path):
    """An empty, truncated or non-Parquet `.parquet` file is one quarantined record (as a
    truncated `.gz` is), a row group pyarrow cannot decode another; planning goes on."""
    raw = tmp_path / "raw" / "forum"
    raw.mkdir(parents=True)
    table = pa.table({"id": [f"g{i}" for i in range(30)], "text": [f"post {i}" for i in range(30)]})
    pq.write_table(table, raw / "good.parquet", row_group_size=10, compression="none")
    whole = (raw / "good.parquet").read_bytes()
    (raw / "empty.parquet").write_bytes(b"")
    (raw / "truncated.parquet").write_bytes(whole[: len(whole) // 2])
    (raw / "notes.parquet").write_bytes(b'{"text": "JSON Lines under the wrong name"}\n')
    page = whole.index(b"post 10")  # the second row group's first value
    damaged = bytearray(whole)
    damaged[page - 60 : page + 60] = bytes(120)
    (raw / "damaged.parquet").write_bytes(bytes(damaged))
    result = run_pipeline({"input": str(raw), "output": str(tmp_path / "o")})
    stats = result.stats
    assert (stats["kept"], stats["quarantined"]) == (30 + 20, 4)
    rows = {r["location"]: r for r in pq.read_table(tmp_path / "o" / "_quarantine").to_pylist()}
    assert set(rows) == {
        f"{raw}/empty.parquet",
        f"{raw}/truncated.parquet",
        f"{raw}/notes.parquet",
        f"{raw}/damaged.parquet#row group 1 (rows 10-19)",
    }
    assert rows[f"{raw}/empty.parquet"]["error"].startswith("unreadable Parquet file: ")
    assert rows[f"{raw}/notes.parquet"]["raw"] == b'{"text": "JSON Lines under the wrong name"}\n'
    assert rows[f"{raw}/damaged.parquet#row group 1 (rows 10-19)"]["error"].startswith(
        "unreadable Parquet row group of 10 rows: "
    )
    assert all("\n" not in row["error"] for row in rows.values())
    assert stats["quarantined_by"]["read"] == {
        "unreadable Parquet file": 3,
        "unreadable Parquet row group": 1,
    }
    # Tokenizing reads such a folder whole: it refuses with one line naming the file.
    with pytest.raises(InputError, match=f"^{raw}/empty.parquet: unreadable Parquet file: "):
        find_input_files([InputConfig(path=str(raw))], {})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"stages": ["no_such_stage"]}, "unknown stage 'no_such_stage'"),
        ({"stages": [{"custom_stages:Shout": {"sufix": "!"}}]}, "unknown option 'sufix'.*suffix"),
        ({"stages": [{"custom_stages:Shout": {"suffix": 3}}]}, "option 'suffix'"),
        ({"workerz": 2}, "unknown key 'workerz'.*workers"),
        ({"executor": "spark"}, "executor"),
        ({"stages": ["nomodule_here:Thing"]}, "cannot import stage"),
    ],
)
def test_bad_configs_fail_before_any_work(tmp_path: Path, change: dict, message: str):
    config = {"input": str(tmp_path / "missing.jsonl"), "output": str(tmp_path / "o"), **change}
    with pytest.raises(ConfigError, match=message):
        Pipeline(PipelineConfig.parse(config))
    assert not (tmp_path / "o").exists()


def test_stage_limited_to_sources_passes_others_through(small_corpus: Path, tmp_path: Path):
    config = {
        "input": [str(small_corpus / "wiki" / "*"), str(small_corpus / "code" / "*")],
        "output": str(tmp_path / "o"),
        "stages": [{"custom_stages:Shout": {"sources": ["code"], "suffix": "?"}}],
    }
    parsed = PipelineConfig.parse(config)
    assert parsed.stages[0].sources == ["code"] and "sources" not in parsed.stages[0].options
    run_pipeline(parsed)
    rows = pq.read_table(tmp_path / "o").to_pylist()
    assert all(r["text"].endswith("?") == (r["source"] == "code") for r in rows)
    assert sum(r["source"] == "code" for r in rows) == 90


def test_global_stages_take_no_sources(tmp_path: Path):
    config = {
        "input": str(tmp_path / "x.jsonl"),
        "output": str(tmp_path / "o"),
        "stages": [{"dedup_exact": {"sources": ["web"]}}],
    }
    with pytest.raises(ConfigError, match="takes no 'sources'"):
        Pipeline(PipelineConfig.parse(config))


def shout_only(sources: list[str]) -> list[dict]:
    return [{"custom_stages:Shout": {"sources": sources}}]


def test_a_stage_limited_to_an_unknown_source_is_refused_before_any_work(
    small_corpus: Path, tmp_path: Path
):
    # No input names its source: they are the folders' names, wiki and code.
    config = {
        "input": [str(small_corpus / "wiki" / "*"), str(small_corpus / "code" / "*")],
        "output": str(tmp_path / "o"),
        "stages": shout_only(["code", "wbe"]),
    }
    with pytest.raises(ConfigError, match=r"Shout' is limited to source 'wbe'.*: code, wiki\."):
        run_pipeline(config)
    assert not (tmp_path / "o").exists()


def test_declared_sources_are_checked_from_the_config_alone(tmp_path: Path):
    config = {
        "input": [{"path": str(tmp_path / "missing" / "*.jsonl"), "source": "web"}],
        "output": str(tmp_path / "o"),
        "stages": shout_only(["wbe"]),
    }
    with pytest.raises(ConfigError, match="source 'wbe', which no input has.*: web\\."):
        Pipeline(PipelineConfig.parse(config))


def test_sources_named_by_records_or_datasets_are_accepted(tmp_path: Path):
    import datasets
    import pyarrow as pa

    write_jsonl(tmp_path / "raw" / "posts.jsonl", [{"text": "hi", "source": "forum"}])
    named = {"input": str(tmp_path / "raw"), "output": str(tmp_path / "a")}
    result = run_pipeline(named | {"stages": shout_only(["forum"])})
    assert pq.read_table(tmp_path / "a").to_pylist()[0]["text"] == "HI!"
    assert result.stats["kept"] == 1

    table = tmp_path / "tables" / "t.parquet"
    table.parent.mkdir()
    pq.write_table(pa.table({"text": ["a"]}), table)
    plain = {"input": str(table), "output": str(tmp_path / "b"), "stages": shout_only(["forum"])}
    with pytest.raises(ConfigError, match="source 'forum'.*: tables\\."):
        run_pipeline(plain)
    pq.write_table(pa.table({"text": ["a"], "source": ["forum"]}), table)
    assert run_pipeline(plain).stats["kept"] == 1

    # A saved DatasetDict's records come from the dataset's folder, not the split's.
    train = datasets.Dataset.from_dict({"text": ["a", "b"]})
    datasets.DatasetDict({"train": train}).save_to_disk(str(tmp_path / "imdb"))
    saved = {"input": str(tmp_path / "imdb"), "output": str(tmp_path / "c")}
    assert run_pipeline(saved | {"stages": shout_only(["imdb"])}).stats["kept"] == 2
    with pytest.raises(ConfigError, match="source 'train'.*: imdb\\."):
        run_pipeline(saved | {"stages": shout_only(["train"])})


def test_quarantine_keeps_ids_and_lines_balance_with_blank_ones(tmp_path: Path):
    lines, blank, unreadable = [], 0, []
    for i in range(400):
        if i % 7 == 0 or i % 11 == 0:
            lines.append(b"\n" if i % 7 == 0 else b"  \r\n")
            blank += 1
        elif i % 13 == 0:
            lines.append(json.dumps({"id": f"q{i}", "title": "no text"}).encode() + b"\n")
            unreadable.append(f"q{i}")
        else:
            lines.append(json.dumps({"id": f"d{i}", "text": f"text {i}"}).encode() + b"\n")
    raw = tmp_path / "raw" / "web"
    raw.mkdir(parents=True)
    (raw / "a.jsonl").write_bytes(b"".join(lines))
    out = tmp_path / "out"
    # Byte-range tasks: every blank line is counted by exactly one of them.
    result = run_pipeline({"input": str(raw), "output": str(out), "task_size_mb": 0.002})
    stats = result.stats
    assert stats["tasks"] > 3 and stats["skipped_blank"] == blank
    parts = stats["kept"] + stats["excluded"] + stats["quarantined"] + stats["skipped_blank"]
    assert parts == len(lines)
    assert json.loads((out / "_stats.json").read_text())["skipped_blank"] == blank
    rows = pq.read_table(out / "_quarantine").to_pylist()
    assert sorted(row["id"] for row in rows) == sorted(unreadable)


@pytest.mark.parametrize("task_size_mb", [256, 0.01])
def test_a_record_over_max_record_bytes_is_quarantined_and_the_rest_processed(
    tmp_path: Path, task_size_mb: float
):
    records = make_records(300)
    records.insert(150, {"id": "huge", "text": "word " * 40_000})  # 200 kB on one line
    raw = write_jsonl(tmp_path / "raw" / "web" / "a.jsonl", records)
    huge = len(json.dumps(records[150])) + 1
    config = {
        "input": str(raw),
        "output": str(tmp_path / "o"),
        "max_record_bytes": 10_000,
        "task_size_mb": task_size_mb,  # small: the huge line spans many tasks
    }
    result = run_pipeline(config)
    stats = result.stats
    assert (stats["documents_in"], stats["kept"], stats["quarantined"]) == (301, 300, 1)
    assert stats["quarantined_by"] == {"read": {"record exceeds max_record_bytes": 1}}
    (row,) = pq.read_table(tmp_path / "o" / "_quarantine").to_pylist()
    assert row["error"].startswith(f"record of {huge} bytes exceeds max_record_bytes=10000")
    assert row["location"].startswith(str(raw)) and row["raw"].startswith(b'{"id": "huge"')
    kept = pq.read_table(tmp_path / "o").to_pylist()
    assert [r["id"] for r in kept] == [r["id"] for r in records if r["id"] != "huge"]


def test_max_record_bytes_must_be_positive(tmp_path: Path):
    with pytest.raises(ConfigError, match="max_record_bytes"):
        PipelineConfig.parse({"input": "x.jsonl", "output": "o", "max_record_bytes": 0})
