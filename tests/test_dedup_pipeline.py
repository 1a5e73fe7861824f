"""Exact and near-duplicate removal through real pipeline runs on small corpora."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import s3fs
from conftest import write_jsonl

from mixplane.document import Document
from mixplane.errors import ConfigError
from mixplane.io.flaky_proxy import FlakyProxy
from mixplane.process.pipeline import run_pipeline
from mixplane.stages.dedup import runs as run_files
from mixplane.stages.dedup import stage as stage_module
from mixplane.stages.dedup.near import MinHashDedup
from mixplane.stages.dedup.runs import key_range, signature_rows, sort_keys, write_run

FIXTURES = Path(__file__).parent / "fixtures" / "debian_copyright"
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    return ["".join(rng.choices(LETTERS, k=rng.randint(3, 9))) for _ in range(size)]


def essay(rng: random.Random, words: list[str], length: int) -> str:
    return " ".join(rng.choices(words, k=length))


def edit(rng: random.Random, text: str, share: float, words: list[str]) -> str:
    tokens = text.split()
    for position in rng.sample(range(len(tokens)), max(1, int(len(tokens) * share))):
        tokens[position] = rng.choice(words)
    return " ".join(tokens)


def read_rows(folder: Path, pattern: str) -> list[dict]:
    rows = []
    for path in sorted(folder.glob(pattern)):
        rows += pq.read_table(path).to_pylist()
    return rows


def excluded(out: Path) -> dict[str, dict]:
    return {row["id"]: row | {"detail": json.loads(row["detail"])}
            for row in read_rows(out, "_excluded/*.parquet")}  # fmt: skip


def kept(out: Path) -> dict[str, dict]:
    return {row["id"]: row for row in read_rows(out, "part-*.parquet")}


def run(raw: Path, out: Path, stages: list, **extra) -> dict:
    config = {"input": str(raw / "*" / "*.jsonl"), "output": str(out), "stages": stages}
    return run_pipeline(config | extra).stats


def test_exact_duplicates_across_files_and_tasks(tmp_path: Path):
    rng = random.Random(1)
    words = vocabulary(rng)
    originals = [essay(rng, words, 60) for _ in range(30)]
    spaced = [text.replace(" ", "  ").upper() + "\n" for text in originals]
    write_jsonl(
        tmp_path / "raw/news/a.jsonl",
        [{"id": f"n{i:02d}", "text": t} for i, t in enumerate(originals)],
    )
    write_jsonl(
        tmp_path / "raw/blog/b.jsonl",
        [{"id": f"b{i:02d}", "text": t} for i, t in enumerate(spaced[:20])],
    )
    write_jsonl(tmp_path / "raw/wiki/c.jsonl",
                [{"id": f"w{i:02d}", "text": t} for i, t in enumerate(originals[10:])])  # fmt: skip
    out = tmp_path / "out"
    stats = run(tmp_path / "raw", out, [{"dedup_exact": {"prefer_sources": ["wiki"]}}],
                task_size_mb=0.004)  # fmt: skip
    assert stats["tasks"] > 3
    assert stats["documents_in"] == 70 and stats["kept"] == 30
    dropped = excluded(out)
    assert len(dropped) == 40 and {r["reason"] for r in dropped.values()} == {"duplicate"}
    # Texts 10..29 exist in the preferred source: its copies survive; the rest keep the
    # smallest id ("b" before "n").
    for i in range(30):
        survivor = f"w{i - 10:02d}" if i >= 10 else f"b{i:02d}"
        assert survivor in kept(out)
        for copy in (f"n{i:02d}", f"b{i:02d}", f"w{i - 10:02d}"):
            if copy != survivor and copy in dropped:
                assert dropped[copy]["detail"]["duplicate_of"] == survivor
    assert not (out / "_work").exists()


def test_exact_normalisation_options(tmp_path: Path):
    records = [
        {"id": "a", "text": "Hello, world!"},
        {"id": "b", "text": "hello world"},
        {"id": "c", "text": "HELLO,   WORLD!"},
    ]
    write_jsonl(tmp_path / "raw/s/a.jsonl", records)
    strict = run(tmp_path / "raw", tmp_path / "o1", [{"dedup_exact": {"ignore_case": False}}])
    assert strict["kept"] == 3
    default = run(tmp_path / "raw", tmp_path / "o2", ["dedup_exact"])
    assert default["kept"] == 2 and excluded(tmp_path / "o2")["c"]["detail"]["duplicate_of"] == "a"
    loose = run(tmp_path / "raw", tmp_path / "o3", [{"dedup_exact": {"ignore_punctuation": True}}])
    assert loose["kept"] == 1


COLLECTED = re.compile(r"-(dedup_\w+)/collect/task-\d+\.run$")


def near_corpus(root: Path, seed: int = 2) -> dict[str, list[str]]:
    """Families of near-duplicates (about 3% of words edited) spread over three files."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    families: dict[str, list[str]] = {}
    files: dict[str, list[dict]] = {"x": [], "y": [], "z": []}
    for family in range(40):
        base = essay(rng, words, rng.randint(150, 400))
        members = 1 + family % 4
        names = []
        for member in range(members):
            text = base if member == 0 else edit(rng, base, 0.01, words)
            name = f"f{family:02d}-{member}"
            files["xyz"[(family + member) % 3]].append({"id": name, "text": text})
            names.append(name)
        families[names[0]] = names
    for name, records in files.items():
        write_jsonl(root / "raw" / name / f"{name}.jsonl", records)
    return families


def test_near_duplicates_are_clustered_across_files_with_identical_output_for_1_and_2_workers(
    tmp_path: Path,
):
    families = near_corpus(tmp_path)
    stages = ["dedup_minhash"]
    one = run(tmp_path / "raw", tmp_path / "one", stages, task_size_mb=0.05)
    run(tmp_path / "raw", tmp_path / "two", stages, task_size_mb=0.05, workers=2)
    assert one["tasks"] > 3
    for name in ("part-*.parquet", "_excluded/*.parquet", "_tasks/*.json"):
        left = sorted((tmp_path / "one").glob(name))
        right = sorted((tmp_path / "two").glob(name))
        assert [p.name for p in left] == [p.name for p in right] and left
        for a, b in zip(left, right, strict=True):
            if name.startswith("_tasks"):
                assert _without_seconds(a) == _without_seconds(b)
            else:
                assert a.read_bytes() == b.read_bytes(), a.name
    survivors = kept(tmp_path / "one")
    dropped = excluded(tmp_path / "one")
    assert len(survivors) == len(families)
    for first, names in families.items():
        assert survivors[first]["dup_cluster_size"] == len(names)
        assert survivors[first]["dup_cluster_id"] == first
        for other in names[1:]:
            assert dropped[other]["detail"]["duplicate_of"] == first
            assert dropped[other]["stage"] == "dedup_minhash"
    assert one["merges"]["dedup_minhash"]["duplicates"] == len(dropped)


def test_a_threshold_is_the_similarity_pairs_are_joined_from(tmp_path: Path):
    """`threshold: 0.8` joins a candidate pair whose signatures agree on 0.8 of their
    values, and not one agreeing on less (the 12 x 9 curve's midpoint is 0.759)."""
    stage = MinHashDedup(threshold=0.8)
    rng, words = random.Random(4), vocabulary(random.Random(4))
    chosen: dict[str, tuple[str, str]] = {}
    while len(chosen) < 2:
        original = essay(rng, words, 400)
        copy = edit(rng, original, rng.uniform(0.02, 0.06), words)
        keys, _, signature = stage.fingerprint([Document("a", original, "s"),
                                                Document("b", copy, "s")])  # fmt: skip
        if not (keys[0] == keys[1]).any():
            continue  # LSH does not make them candidates
        agreement = float((signature[0] == signature[1]).mean())
        if 0.765 <= agreement < 0.79:
            chosen.setdefault("below", (original, copy))
        elif agreement >= 0.81:
            chosen.setdefault("above", (original, copy))
    records = [{"id": f"{name}-{i}", "text": text}
               for name, pair in chosen.items() for i, text in enumerate(pair)]  # fmt: skip
    write_jsonl(tmp_path / "raw" / "s" / "a.jsonl", records)
    run(tmp_path / "raw", tmp_path / "out", [{"dedup_minhash": {"threshold": 0.8}}])
    assert set(kept(tmp_path / "out")) == {"below-0", "below-1", "above-0"}
    assert excluded(tmp_path / "out")["above-1"]["detail"]["duplicate_of"] == "above-0"


def _without_seconds(path: Path) -> dict:
    marker = json.loads(path.read_text())
    marker["stats"].pop("seconds")
    return marker


def test_chinese_near_duplicates_use_character_ngrams(tmp_path: Path):
    rng = random.Random(3)
    characters = [chr(c) for c in range(0x4E00, 0x4E00 + 400)]
    base = "".join(rng.choices(characters, k=300))
    chars = list(base)
    for position in rng.sample(range(len(chars)), 3):
        chars[position] = rng.choice(characters)
    near = "".join(chars)
    shuffled = "".join(rng.sample(chars, len(chars)))  # same characters, other n-grams
    records = [
        {"id": "zh-1", "text": base},
        {"id": "zh-2", "text": near},
        {"id": "zh-3", "text": shuffled},
    ]
    write_jsonl(tmp_path / "raw/zh/a.jsonl", records)
    run(tmp_path / "raw", tmp_path / "out", ["dedup_minhash"])
    assert set(kept(tmp_path / "out")) == {"zh-1", "zh-3"}
    assert excluded(tmp_path / "out")["zh-2"]["detail"]["duplicate_of"] == "zh-1"


def test_incremental_index_removes_duplicates_of_an_earlier_run(tmp_path: Path):
    rng = random.Random(4)
    words = vocabulary(rng)
    first = [essay(rng, words, 200) for _ in range(20)]
    write_jsonl(tmp_path / "one/s/a.jsonl", [{"id": f"old{i}", "text": t}
                                             for i, t in enumerate(first)])  # fmt: skip
    second = [
        {"id": "copy", "text": first[0]},
        {"id": "near", "text": edit(rng, first[1], 0.01, words)},
        {"id": "new", "text": essay(rng, words, 200)},
    ]
    second.append({"id": "new-copy", "text": second[2]["text"]})
    write_jsonl(tmp_path / "two/s/b.jsonl", second)
    stages = [
        {"dedup_exact": {"index": str(tmp_path / "idx-exact")}},
        {"dedup_minhash": {"index": str(tmp_path / "idx-near")}},
    ]
    run(tmp_path / "one", tmp_path / "out1", stages)
    stats = run(tmp_path / "two", tmp_path / "out2", stages)
    dropped = excluded(tmp_path / "out2")
    assert dropped["copy"]["reason"] == "duplicate_in_index"
    assert dropped["copy"]["stage"] == "dedup_exact"
    assert dropped["copy"]["detail"]["duplicate_of"] == "old0"
    assert dropped["near"]["reason"] == "duplicate_in_index"
    assert dropped["near"]["detail"]["duplicate_of"] == "old1"
    assert dropped["new-copy"]["reason"] == "duplicate"
    assert set(kept(tmp_path / "out2")) == {"new"}
    assert stats["merges"]["dedup_minhash"]["index_documents"] == 20
    index = json.loads((tmp_path / "idx-near" / "index.json").read_text())
    assert [g["documents"] for g in index["generations"]] == [20, 1]
    # Repeating the second run (its output lost) ignores its own generation: same result.
    shutil.rmtree(tmp_path / "out2")
    assert run(tmp_path / "two", tmp_path / "out2", stages)["kept"] == 1
    index = json.loads((tmp_path / "idx-near" / "index.json").read_text())
    assert [g["documents"] for g in index["generations"]] == [20, 1]


def test_an_index_built_with_other_parameters_is_refused(tmp_path: Path):
    write_jsonl(tmp_path / "raw/s/a.jsonl", [{"id": "a", "text": "some words here"}])
    index = str(tmp_path / "idx")
    run(tmp_path / "raw", tmp_path / "o1", [{"dedup_minhash": {"index": index}}])
    with pytest.raises(ConfigError, match=r"idx/index.json.*ngram: index 5, stage 3"):
        run(tmp_path / "raw", tmp_path / "o2", [{"dedup_minhash": {"index": index, "ngram": 3}}])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"threshold": 0.8, "bands": 10}, "either threshold or bands"),
        ({"threshold": 1.5}, "threshold"),
        ({"ngram": 0}, "ngram"),
        ({"bandz": 3}, "unknown option 'bandz'"),
    ],
)
def test_bad_options_are_clear_config_errors(tmp_path: Path, options: dict, message: str):
    write_jsonl(tmp_path / "raw/s/a.jsonl", [{"id": "a", "text": "x"}])
    with pytest.raises(ConfigError, match=message):
        run(tmp_path / "raw", tmp_path / "o", [{"dedup_minhash": options}])


def test_debian_license_texts_form_the_expected_clusters(tmp_path: Path):
    config = {
        "input": {"path": str(FIXTURES / "*.txt"), "format": "text", "source": "debian"},
        "output": str(tmp_path / "out"),
        "stages": ["dedup_minhash"],
    }
    run_pipeline(config)
    clusters: dict[str, set[str]] = {}
    for doc_id, row in excluded(tmp_path / "out").items():
        clusters.setdefault(row["detail"]["duplicate_of"], set()).add(doc_id)
    assert clusters == {
        "libacl1.txt": {"libattr1.txt"},
        "unzip.txt": {"zip.txt"},
        "libice-dev.txt": {"xauth.txt"},
    }
    sizes = {doc_id: row["dup_cluster_size"] for doc_id, row in kept(tmp_path / "out").items()}
    assert sizes == {"libacl1.txt": 2, "unzip.txt": 2, "libice-dev.txt": 2, "gzip.txt": 1,
                     "grep.txt": 1, "make.txt": 1, "patch.txt": 1, "wget.txt": 1}  # fmt: skip


def test_metadata_survives_and_the_stages_compose_with_ordinary_ones(tmp_path: Path):
    records = [
        {"id": "a", "text": "same text " * 20, "lang": "en", "score": 1},
        {"id": "b", "text": "same text " * 20, "lang": "en", "score": 2},
        {"id": "c", "text": "other text " * 20, "lang": "de", "score": 3},
    ]
    write_jsonl(tmp_path / "raw/s/a.jsonl", records)
    stages = ["custom_stages:Shout", "dedup_exact", "dedup_minhash", "custom_stages:Shout"]
    stats = run(tmp_path / "raw", tmp_path / "out", stages)
    rows = kept(tmp_path / "out")
    assert set(rows) == {"a", "c"} and rows["c"]["score"] == 3 and rows["a"]["shouted"]
    assert rows["a"]["text"].endswith("!!")
    assert stats["excluded_by"] == {"dedup_exact": {"duplicate": 1}}
    table = pa.concat_tables([pq.read_table(p) for p in (tmp_path / "out").glob("part-*")])
    assert {"dup_cluster_id", "dup_cluster_size"} <= set(table.column_names)


@pytest.mark.parametrize("read", ["whole", "ranges"])
def test_dedup_writes_to_object_storage_like_to_disk(s3_bucket, tmp_path: Path, monkeypatch, read):
    """The same bytes as on disk. A merge whose runs fit in what a process keeps downloads
    each run once (a second time to copy it into the index); a larger one (here: made to
    count as larger) reads each band and key slice of a run by ranges, so a run crosses the
    network about once, not once per slice."""
    bucket, options = s3_bucket
    near_corpus(tmp_path, seed=6)
    monkeypatch.setattr(stage_module, "KEYS_PER_UNIT", 16)  # several key slices a band
    if read == "ranges":
        monkeypatch.setattr(run_files, "REMOTE_CACHE_BYTES", 0)
    proxy = FlakyProxy(options["endpoint_url"])
    proxied = options | {"endpoint_url": proxy.start()}
    config = {
        "input": str(tmp_path / "raw" / "*" / "*.jsonl"),
        "stages": ["dedup_exact", {"dedup_minhash": {"index": f"s3://{bucket}/index"}}],
        "storage_options": proxied,
        "task_size_mb": 0.1,
    }
    try:
        remote = run_pipeline(config | {"output": f"s3://{bucket}/out"})
    finally:
        proxy.stop()
    local_config = config | {"output": str(tmp_path / "out"), "storage_options": options}
    local_config["stages"] = ["dedup_exact", {"dedup_minhash": {"index": str(tmp_path / "idx")}}]
    local = run_pipeline(local_config)
    assert remote.stats["excluded_by"] == local.stats["excluded_by"]
    assert remote.stats["excluded_by"]["dedup_minhash"]["duplicate"] > 0
    fs = s3fs.S3FileSystem(**options)
    fs.get(f"{bucket}/out", str(tmp_path / "downloaded"), recursive=True)
    for path in sorted((tmp_path / "out").glob("part-*")):
        assert path.read_bytes() == (tmp_path / "downloaded" / path.name).read_bytes()
    assert not fs.exists(f"{bucket}/out/_work")
    assert fs.exists(f"{bucket}/index/index.json")
    runs = {path: sizes for path, sizes in proxy.served.items() if COLLECTED.search(path)}
    assert len(runs) == 6  # three tasks' runs of each stage
    for path, sizes in runs.items():
        merged = remote.stats["merges"][COLLECTED.search(path)[1]]
        assert merged["units"] >= 4 and merged["read_by_ranges"] == (read == "ranges"), merged
        header, whole = sizes[0], proxy.stored[path]
        copied = [whole] if "minhash" in path else []  # its copy into the index reads it whole
        if read == "whole":
            assert sizes == [header, whole, *copied], (path, sizes)
        else:
            reads = sizes[1 : len(sizes) - len(copied)]  # after the header: fences, slices, rows
            assert max(reads) < whole and sum(reads) < 1.5 * whole, (path, sizes)
            assert len(reads) > merged["units"], (path, sizes)


def test_ranged_reads_of_a_run_on_object_storage_are_the_local_slices(s3_bucket, tmp_path):
    """Every band and key slice (coarser and finer than the fences) and any rows' signatures
    read by ranges equal the local run's; a run written before fences existed is read whole."""
    bucket, options = s3_bucket
    rng = np.random.default_rng(4)
    documents = 300
    keys = rng.integers(0, 1 << 62, (documents, 3, 2), dtype=np.uint64) << np.uint64(2)
    keys[::7] = keys[1::7][: len(keys[::7])]  # shared keys, as duplicates have
    signatures = rng.integers(0, 1 << 32, (documents, 5), dtype=np.uint64).astype(np.uint32)
    keyed = np.ones(documents, dtype=bool)
    ids = [f"d{i}" for i in range(documents)]
    local = write_run(str(tmp_path / "run"), keys, keyed, ids, ids, signatures, {})
    remote = write_run(f"s3://{bucket}/run", keys, keyed, ids, ids, signatures, options)
    sorted_keys, rows = sort_keys(keys, keyed)
    old_format = f"s3://{bucket}/old"
    header = orjson.dumps(
        {"format": "mixplane-dedup-run", "shapes": {
            "keys": sorted_keys.shape, "rows": rows.shape, "sigs": signatures.shape}}
    ).ljust(run_files.HEADER)  # fmt: skip
    body = header + sorted_keys.tobytes() + rows.tobytes() + signatures.tobytes()
    s3fs.S3FileSystem(**options).pipe(f"{bucket}/old.run", body)
    old = run_files.Run(old_format, documents, documents)
    # Finer than the fences: the parts at and around fence edges, and a few others.
    fine = sorted({0, 1, 2, 3, 4, 255, 256, 257, 510, 511, *rng.integers(0, 512, 6).tolist()})
    for parts, chosen_parts in ((1, [0]), (4, range(4)), (512, fine)):
        for band in range(3):
            for part in chosen_parts:
                low = part * ((1 << 64) // parts)
                high = (1 << 64) if part == parts - 1 else (part + 1) * ((1 << 64) // parts)
                want = key_range(local, band, low, high, {})
                for run in (remote, old):
                    got = key_range(run, band, low, high, options, scope="s", ranged=True)
                    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    chosen = np.array([5, 3, 3, 299, 0, 150, 151, 152])
    want = signature_rows(local, chosen, {})
    assert np.array_equal(want, signatures[chosen])
    for run in (remote, old):
        assert np.array_equal(signature_rows(run, chosen, options, "s", ranged=True), want)
