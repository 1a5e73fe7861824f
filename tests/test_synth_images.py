"""The synthetic image-caption corpus: reproducible bytes, truth that matches the files,
planted copies that really are near (pHash), broken files that really are broken, and ids
that the real readers give."""

from __future__ import annotations

import functools
import io
import json
import random
import re
import tarfile
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import webdataset as wds
from PIL import Image, ImageOps
from typer.testing import CliRunner

from mixplane import run_pipeline
from mixplane.cli import app
from mixplane.errors import InputError
from mixplane.stages.image.phash import phash
from mixplane.synth import evaluate_image_dedup, generate_image_corpus
from mixplane.synth.images.captions import describe
from mixplane.synth.images.scene import Scene, Shape

SAMPLES = 300
SEED = 5
BAD_KINDS = {"corrupt", "truncated", "empty", "tiny", "extreme_aspect", "bomb"}
READABLE = ("original", "near_duplicate", "exact_duplicate", *sorted(BAD_KINDS))
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, object, list[dict]]:
    out = tmp_path_factory.mktemp("synth-images") / "corpus"
    summary = generate_image_corpus(str(out), SAMPLES, SEED)
    rows = pq.read_table(out / "truth" / "images.parquet").to_pylist()
    return out, summary, rows


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@functools.cache
def _members(path: Path) -> dict[str, bytes]:
    """Every complete member of a tar, in order (stops quietly where a tar is cut)."""
    members = {}
    with tarfile.open(path) as tar:
        try:
            for member in tar:
                members[member.name] = tar.extractfile(member).read()
        except tarfile.ReadError:
            pass
    return members


def _image_bytes(out: Path, row: dict) -> bytes:
    if row["file"].endswith(".tar"):
        for name, data in _members(out / row["file"]).items():
            key, ext = name.split(".", 1)
            if key == row["key"] and ext not in ("json", "txt"):
                return data
        raise AssertionError(f"no image for {row['key']} in {row['file']}")
    return (out / row["file"]).read_bytes()


def test_same_seed_gives_byte_identical_files(tmp_path: Path):
    generate_image_corpus(str(tmp_path / "a"), 90, 3)
    generate_image_corpus(str(tmp_path / "b"), 90, 3)
    generate_image_corpus(str(tmp_path / "c"), 90, 4)
    tree = _tree(tmp_path / "a")
    assert tree == _tree(tmp_path / "b")
    assert not any(Path(name).name.startswith(".") for name in tree), "temporary files left"
    other = _tree(tmp_path / "c")
    assert other["raw/webdataset/shard-00000.tar"] != tree["raw/webdataset/shard-00000.tar"]
    assert other["truth/images.parquet"] != tree["truth/images.parquet"]


def test_existing_output_needs_overwrite(corpus):
    out, _, _ = corpus
    with pytest.raises(InputError, match="overwrite"):
        generate_image_corpus(str(out), 10, SEED)


def test_counts_match_the_request_and_the_summary(corpus):
    out, summary, rows = corpus
    assert len(rows) == summary.samples == SAMPLES
    assert len({row["sample_id"] for row in rows}) == SAMPLES
    assert Counter(row["kind"] for row in rows) == summary.kinds
    assert set(summary.kinds) >= BAD_KINDS
    assert {"original", "near_duplicate", "exact_duplicate", "truncated_member"} <= set(
        summary.kinds
    )
    assert {"lost_in_truncation", "failed_download", "missing_url"} <= set(summary.kinds)
    assert set(summary.copy_kinds) == {"exact", "reencode", "resize", "crop", "colour"}
    assert summary.exif_rotated["samples"] > 0
    assert {"jpeg", "png", "webp"} <= set(summary.image_formats)
    saved = json.loads((out / "truth" / "images_summary.json").read_text())
    assert saved == json.loads(json.dumps(summary.to_dict()))
    pairs = [json.loads(line) for line in (out / "truth" / "image_duplicates.jsonl").open()]
    copies = [r for r in rows if r["kind"] in ("near_duplicate", "exact_duplicate")]
    assert len(pairs) == len(copies) == summary.duplicates["pairs"]
    originals = [pair["a"] for pair in pairs]
    assert len(set(originals)) == len(originals), "an original is copied at most once"
    by_id = {row["sample_id"]: row for row in rows}
    assert all(by_id[a]["kind"] == "original" for a in originals)


def test_every_tar_member_is_in_the_truth(corpus):
    out, summary, rows = corpus
    by_file: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in rows:
        by_file[row["file"]][row["key"]] = row
    shards = summary.sources["webdataset"]["files"]
    assert len(shards) >= 2
    for shard in shards[:-1]:
        members = _members(out / shard)
        keys = Counter(name.split(".", 1)[0] for name in members)
        assert set(keys) == set(by_file[shard])
        for key, row in by_file[shard].items():
            meta = json.loads(members[f"{key}.json"])
            assert meta["sample_id"] == row["sample_id"]
            assert row["doc_id"] == f"{Path(shard).name}/{key}"
            if row["caption"] is None:
                assert f"{key}.txt" not in members and "caption" not in meta
            else:
                assert members[f"{key}.txt"].decode() == meta["caption"] == row["caption"]
    # The last shard is cut inside one member: complete samples, one partial, the rest lost.
    last = shards[-1]
    with pytest.raises(tarfile.ReadError), tarfile.open(out / last) as tar:
        tar.getmembers()
    kinds = Counter(row["kind"] for row in by_file[last].values())
    assert kinds["truncated_member"] == 1 and kinds["lost_in_truncation"] >= 1
    complete = {name.split(".", 1)[0] for name in _members(out / last)}
    readable = {k for k, r in by_file[last].items() if r["kind"] == "original"}
    assert readable and readable <= complete
    assert summary.truncated_shard["readable"] == len(readable)


def test_img2dataset_layout(corpus):
    out, _, rows = corpus
    folder = out / "raw" / "img2dataset"
    table = pq.read_table(folder / "00000.parquet").to_pylist()
    truth = {row["key"]: row for row in rows if row["source"] == "img2dataset"}
    assert {row["key"] for row in table} == set(truth)
    members = _members(folder / "00000.tar")
    in_tar = {name.split(".", 1)[0] for name in members}
    failed = {row["key"] for row in table if row["status"] == "failed_to_download"}
    assert failed and failed == {k for k, r in truth.items() if r["kind"] == "failed_download"}
    assert in_tar == set(truth) - failed
    stats = json.loads((folder / "00000_stats.json").read_text())
    assert stats["count"] == len(table) and stats["successes"] == len(in_tar)
    key = sorted(in_tar)[0]
    meta = json.loads(members[f"{key}.json"])
    assert meta["status"] == "success" and meta["sha256"] == truth[key]["sha256"]
    assert (meta["width"], meta["height"]) == (truth[key]["width"], truth[key]["height"])


def test_folder_and_url_layouts(corpus):
    out, _, rows = corpus
    for row in (r for r in rows if r["source"] == "folder"):
        image = out / row["file"]
        assert image.exists() and row["doc_id"] == image.name
        sidecars = [image.with_suffix(ext) for ext in (".txt", ".json")]
        if row["caption"] is not None:
            assert any(p.exists() for p in sidecars)
        else:
            assert not sidecars[0].exists()
    records = [json.loads(line) for line in (out / "raw/urls/urls.jsonl").open()]
    truth = {row["sample_id"]: row for row in rows if row["source"] == "urls"}
    assert {r["id"] for r in records} == set(truth)
    for record in records:
        assert record["url"].startswith("http://127.0.0.1:8765/images/")
        served = out / "raw/urls" / record["url"].split("8765/", 1)[1]
        assert served.exists() == (truth[record["id"]]["kind"] != "missing_url")


def test_bad_files_are_bad_and_good_files_match_their_truth(corpus):
    out, _, rows = corpus
    for row in rows:
        if row["kind"] not in READABLE:
            continue
        data = _image_bytes(out, row)
        kind = row["kind"]
        if kind == "empty":
            assert data == b""
        elif kind == "corrupt":
            with pytest.raises(Image.UnidentifiedImageError):
                Image.open(io.BytesIO(data))
        elif kind == "truncated":
            with pytest.raises(OSError):
                Image.open(io.BytesIO(data)).load()
        elif kind == "bomb":
            assert len(data) < 200_000
            with pytest.raises(Image.DecompressionBombError):
                Image.open(io.BytesIO(data))
        else:
            image = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
            assert image.size == (row["width"], row["height"]), row["sample_id"]
            if kind == "tiny":
                assert min(image.size) < 32
            elif kind == "extreme_aspect":
                assert max(image.size) / min(image.size) >= 8


def test_exif_orientation_is_recorded(corpus):
    out, _, rows = corpus
    rotated = [row for row in rows if row["exif_orientation"]]
    assert rotated
    for row in rotated:
        stored = Image.open(io.BytesIO(_image_bytes(out, row)))
        assert stored.getexif()[0x0112] == row["exif_orientation"]
        assert stored.size == (row["stored_width"], row["stored_height"])
        turned = row["exif_orientation"] in (6, 8)
        assert stored.size == (
            (row["height"], row["width"]) if turned else (row["width"], row["height"])
        )


def test_planted_copies_are_perceptually_near_and_originals_far(corpus):
    out, _, rows = corpus
    hashes = {}
    for row in rows:
        if row["kind"] in ("original", "near_duplicate", "exact_duplicate"):
            image = ImageOps.exif_transpose(Image.open(io.BytesIO(_image_bytes(out, row))))
            hashes[row["sample_id"]] = phash(image)
    distance = {
        row["sample_id"]: (hashes[row["sample_id"]] ^ hashes[row["copy_of"]]).bit_count()
        for row in rows
        if row["copy_of"]
    }
    assert len(distance) >= 30
    assert max(distance.values()) <= 10, sorted(distance.values())[-5:]
    originals = [hashes[row["sample_id"]] for row in rows if row["kind"] == "original"]
    close = sum(
        (a ^ b).bit_count() <= 10 for i, a in enumerate(originals) for b in originals[i + 1 :]
    )
    assert close <= len(originals) // 100


def test_captions_are_in_several_languages_with_short_and_pii_ones(corpus):
    _, summary, rows = corpus
    assert {"en", "de", "fr", "es"} <= set(summary.languages)
    assert summary.languages["en"] < sum(summary.languages.values()) * 0.7
    by_kind = defaultdict(list)
    for row in rows:
        by_kind[row["caption_kind"]].append(row)
    assert all(1 <= len(r["caption"].split()) <= 2 for r in by_kind["short"]) and by_kind["short"]
    assert all(r["caption"] is None for r in by_kind["missing"]) and by_kind["missing"]
    assert by_kind["pii"] and all(r["email"] in r["caption"] for r in by_kind["pii"])
    assert all(not EMAIL.search(r["caption"]) for r in by_kind["ok"])
    lengths = [len(r["caption"].split()) for r in by_kind["ok"]]
    assert min(lengths) <= 8 and max(lengths) >= 25


def test_captions_describe_the_scene_with_grammar():
    scene = Scene(320, 240, ("gradient", "green", "white"), 0.0, 1, (3, 3), 0.5)
    scene.shapes = [
        Shape("circle", "red", (0, 0, 10, 10), 0.0),
        Shape("circle", "red", (20, 20, 30, 30), 0.0),
        Shape("ellipse", "blue", (40, 40, 60, 50), 0.0),
    ]
    expected = {
        "en": ("two red circles and a blue ellipse", "on a green to white gradient"),
        "de": ("zwei rote Kreise und eine blaue Ellipse", "Farbverlauf von Grün zu Weiß"),
        "fr": ("deux cercles rouges et une ellipse bleue", "fond dégradé vert et blanc"),
        "es": ("dos círculos rojos y una elipse azul", "degradado de verde a blanco"),
    }
    for code, parts in expected.items():
        caption = describe(scene, code, random.Random(0)).lower()
        assert all(part.lower() in caption for part in parts), (code, caption)


def test_the_readers_give_the_truths_ids(corpus, tmp_path: Path):
    out, _, rows = corpus
    for source in ("webdataset", "img2dataset"):
        result = run_pipeline(
            {"input": str(out / "raw" / source), "output": str(tmp_path / source)}
        )
        kept = set()
        for part in sorted((tmp_path / source).glob("part-*.parquet")):
            kept |= set(pq.read_table(part, columns=["id"])["id"].to_pylist())
        truth = {row["doc_id"]: row["kind"] for row in rows if row["source"] == source}
        expected = {doc for doc, kind in truth.items() if kind in READABLE}
        assert kept == expected, source
        assert result.stats["quarantined"] == (source == "webdataset")


def test_python_webdataset_reads_the_intact_shards(corpus):
    out, summary, rows = corpus
    shards = [str(out / name) for name in summary.sources["webdataset"]["files"][:-1]]
    samples = list(wds.WebDataset(shards, shardshuffle=False))
    keys = {
        row["key"] for row in rows if row["file"] in summary.sources["webdataset"]["files"][:-1]
    }
    assert {s["__key__"] for s in samples} == keys
    assert all("json" in s for s in samples)


def test_evaluate_image_dedup_scores_removals(corpus):
    out, _, rows = corpus
    truth = str(out / "truth")
    copies = {r["sample_id"] for r in rows if r["copy_of"]}
    images = ("original", "near_duplicate", "exact_duplicate")
    everyone = {r["sample_id"] for r in rows if r["kind"] in images}
    perfect = evaluate_image_dedup(truth, everyone - copies, copies)
    assert perfect["recall"] == 1.0 and perfect["false_removals"] == 0
    assert perfect["pairs"] == len(copies)
    nothing = evaluate_image_dedup(truth, everyone, [])
    assert nothing["recall"] == 0.0 and nothing["false_removal_rate"] == 0.0
    # Document ids and SOURCE/doc_id forms join too; an original removed by mistake counts.
    doc = {r["sample_id"]: r for r in rows}
    as_docs = [f"{doc[s]['source']}/{doc[s]['doc_id']}" for s in sorted(everyone - copies)]
    copied = {r["copy_of"] for r in rows if r["copy_of"]}
    lone = next(
        r["sample_id"] for r in rows if r["kind"] == "original" and r["sample_id"] not in copied
    )
    report = evaluate_image_dedup(
        str(out), [d for d in as_docs if not d.endswith(doc[lone]["doc_id"])], [*copies, lone]
    )
    assert report["recall"] == 1.0 and report["false_removals"] == 1
    assert report["unmatched_ids"] == 0


def test_cli_writes_an_image_corpus(tmp_path: Path):
    runner = CliRunner()
    result = runner.invoke(app, ["synth", str(tmp_path / "c"), "--images", "-n", "40", "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["samples"] == 40 and (tmp_path / "c/truth/images.parquet").exists()
    bad = runner.invoke(app, ["synth", str(tmp_path / "d"), "--images", "--faults"])
    assert bad.exit_code != 0
