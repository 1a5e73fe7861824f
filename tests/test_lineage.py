"""Lineage: from token shards through the processed folder back to the raw inputs, verified.

The chain is built with the real steps: `run_pipeline` on raw JSON Lines, a byte-level BPE
trained on the result, and `tokenize_dataset` into shards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mixplane import run_pipeline
from mixplane.errors import InputError
from mixplane.lineage import trace, verify
from mixplane.manifest import file_digest, write_manifest
from mixplane.tokenize import tokenize_dataset, train_tokenizer

TEXTS = [
    "The quick brown fox jumps over the lazy dog, number {i}.",
    "Grüße aus München, Dokument {i}, mit Umlauten: äöü ß.",
    "数据平面 {i}：中文文本与表情 😀🚀",
]


def write_raw(folder: Path) -> list[Path]:
    files = []
    for name, start in (("a.jsonl", 0), ("more/b.jsonl", 60)):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [
            {
                "id": f"{name}-{i}",
                "text": TEXTS[i % 3].format(i=i),
                "lang": ["en", "de", "zh"][i % 3],
            }
            for i in range(start, start + 60)
        ]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        files.append(path)
    return files


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> Path:
    """raw/ -> clean/ (process) -> tokens/ (tokenize), built once for the module."""
    root = tmp_path_factory.mktemp("chain")
    write_raw(root / "raw")
    run_pipeline({"input": str(root / "raw"), "output": str(root / "clean")})
    train_tokenizer(str(root / "clean"), vocab_size=300, out=str(root / "tokenizer.json"))
    tokenize_dataset(
        {
            "input": str(root / "clean"),
            "output": str(root / "tokens"),
            "tokenizer": str(root / "tokenizer.json"),
            "shard_size_mb": 0.002,
        }
    )
    return root


@pytest.fixture
def copy(chain: Path, tmp_path: Path) -> Path:
    """A private copy of the chain (manifests use absolute paths, so rewrite them)."""
    target = tmp_path / "chain"
    shutil.copytree(chain, target)
    for manifest in target.rglob("_manifest.json"):
        manifest.write_text(manifest.read_text().replace(str(chain), str(target)))
    return target


def test_trace_walks_from_tokens_to_raw_inputs(chain: Path):
    steps = trace(str(chain / "tokens"))
    assert [step.kind for step in steps] == ["tokenize", "process"]
    assert steps[0].folder == str(chain / "tokens")
    assert steps[0].parents == [str(chain / "clean" / "_manifest.json")]
    assert steps[1].parents == []
    folders = {step.folder for step in steps}
    assert steps[0].raw_inputs(folders) == []
    raw = steps[1].raw_inputs(folders)
    assert sorted(item["url"] for item in raw) == [
        str(chain / "raw" / "a.jsonl"),
        str(chain / "raw" / "more" / "b.jsonl"),
    ]
    for item in raw:
        assert (item["size"], item["fingerprint"]) == file_digest(item["url"])
    assert steps[1].manifest["config"]["output"] == str(chain / "clean")


def test_verify_checks_every_recorded_file_once(chain: Path):
    steps = trace(str(chain / "tokens"))
    checks = verify(steps)
    assert all(check.ok for check in checks), [c.to_json() for c in checks if not c.ok]
    urls = [check.url for check in checks]
    assert len(urls) == len(set(urls))
    shards = sorted(p.name for p in (chain / "tokens").glob("shard-*"))
    assert len(shards) >= 6  # several shards, three files each
    for name in shards:
        assert str(chain / "tokens" / name) in urls
    assert str(chain / "clean" / "part-00000.parquet") in urls
    assert str(chain / "raw" / "more" / "b.jsonl") in urls


def test_a_flipped_byte_in_a_shard_is_named(copy: Path, cli):
    shard = sorted((copy / "tokens").glob("shard-*.bin"))[1]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    failures = [check for check in verify(trace(str(copy / "tokens"))) if not check.ok]
    assert [check.url for check in failures] == [str(shard)]
    assert failures[0].problem == "content hash differs from the recorded one"

    code, _, err = cli("lineage", str(copy / "tokens"), "--verify")
    assert code == 2
    assert shard.name in err and "verification failed for 1 of" in " ".join(err.split())


def test_missing_files_and_parents_are_reported(copy: Path, cli):
    (copy / "raw" / "a.jsonl").unlink()
    checks = verify(trace(str(copy / "tokens")))
    missing = [check for check in checks if not check.ok]
    assert [(c.url, c.problem) for c in missing] == [(str(copy / "raw" / "a.jsonl"), "missing")]

    (copy / "clean" / "_manifest.json").unlink()
    steps = trace(str(copy / "tokens"))
    assert len(steps) == 1
    assert steps[0].missing_parents == [str(copy / "clean" / "_manifest.json")]
    code, out, _ = cli("lineage", str(copy / "tokens"))
    assert code == 0
    assert "missing parent manifest" in out


def test_lineage_cli_tree_and_json(chain: Path, cli):
    done = mixplane("lineage", str(chain / "tokens"), "--verify")
    assert done.returncode == 0, done.stderr
    for expected in ("tokenize", "process", "raw inputs: 2 files", "b.jsonl", "files match"):
        assert expected in done.stdout and expected not in done.stderr
    code, out, _ = cli("lineage", str(chain / "tokens"), "--json", "--verify")
    assert code == 0
    report = json.loads(out)
    assert [step["kind"] for step in report["steps"]] == ["tokenize", "process"]
    assert len(report["raw_inputs"]) == 2
    assert report["failures"] == [] and report["verified"] > 10


def test_lineage_starts_from_any_step_and_needs_a_manifest(chain: Path, tmp_path: Path, cli):
    assert [s.kind for s in trace(str(chain / "clean" / "_manifest.json"))] == ["process"]
    with pytest.raises(InputError, match="_manifest.json: missing"):
        trace(str(tmp_path))
    code, _, err = cli("lineage", str(tmp_path))
    assert code == 2 and err.startswith("error:")


def mixplane(*args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mixplane", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_hand_written_manifests_relative_parents_and_unreadable_inputs(tmp_path: Path):
    (tmp_path / "first").mkdir()
    (tmp_path / "first" / "out.bin").write_bytes(b"abc")
    size, digest = file_digest(str(tmp_path / "first" / "out.bin"))
    write_manifest(
        str(tmp_path / "first"),
        {
            "kind": "custom",
            "inputs": [
                {"url": "nosuch://bucket/raw.jsonl", "size": 1, "fingerprint": "xxh3_128:0"}
            ],
            "outputs": [{"path": "out.bin", "size": size, "hash": digest}],
        },
    )
    (tmp_path / "second").mkdir()
    write_manifest(
        str(tmp_path / "second"),
        {"kind": "custom", "parents": ["../first", {"url": str(tmp_path / "first")}]},
    )
    steps = trace(str(tmp_path / "second"))
    assert [step.folder for step in steps] == [str(tmp_path / "second"), str(tmp_path / "first")]
    assert steps[0].parents == [str(tmp_path / "first" / "_manifest.json")] * 2
    checks = {check.url: check for check in verify(steps)}
    assert checks[str(tmp_path / "first" / "out.bin")].ok
    unreadable = checks["nosuch://bucket/raw.jsonl"]
    assert not unreadable.ok and unreadable.problem.startswith("unreadable (")
