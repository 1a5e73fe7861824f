"""Image deduplication through real pipeline runs: near and exact duplicates on the
perceptual hash, survivors by source preference, a persistent index, workers."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from conftest import write_jsonl
from PIL import Image, ImageEnhance
from test_image_stages import encoded, natural

from mixplane.document import Document
from mixplane.process.pipeline import run_pipeline
from mixplane.stages.dedup.image import ImageDedup, band_keys
from mixplane.stages.image.decode import DecodeImage


def variant(image: Image.Image, kind: str) -> Image.Image:
    w, h = image.size
    if kind == "low_quality":
        return Image.open(io.BytesIO(encoded(image, quality=30)))
    if kind == "resized":
        return image.resize((w * 3 // 4, h * 3 // 4), Image.Resampling.BILINEAR)
    if kind == "cropped":
        return image.crop((1, 1, w - 1, h - 1))
    return ImageEnhance.Color(ImageEnhance.Brightness(image).enhance(1.1)).enhance(0.8)


KINDS = ("low_quality", "resized", "cropped", "colour")


def write_parquet(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("image", pa.binary())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def corpus(root: Path, originals: int = 60, copies: int = 30, seed: int = 0) -> dict[str, str]:
    """Originals and planted near-duplicates in two sources; returns copy id -> original id."""
    rng = random.Random(seed)
    images = [natural(seed * 1000 + n) for n in range(originals)]
    rows = [{"id": f"o{n:03d}", "text": f"picture {n}", "image": encoded(image, quality=90)}
            for n, image in enumerate(images)]  # fmt: skip
    planted = {}
    for n in range(copies):
        of = rng.randrange(originals)
        copy = variant(images[of], KINDS[n % len(KINDS)])
        rows.append({"id": f"p{n:03d}", "text": "copy", "image": encoded(copy, quality=90)})
        planted[f"p{n:03d}"] = f"o{of:03d}"
    rng.shuffle(rows)
    write_parquet(root / "web" / "a.parquet", rows[::2])
    write_parquet(root / "curated" / "b.parquet", rows[1::2])
    return planted


def run(raw: Path, out: Path, stages: list, **extra) -> dict:
    source = {"path": str(raw / "*" / "*.parquet"), "image_key": "image"}
    return run_pipeline({"input": source, "output": str(out), "stages": stages} | extra).stats


def table(out: Path, pattern: str) -> dict[str, dict]:
    rows = [row for path in sorted(out.glob(pattern)) for row in pq.read_table(path).to_pylist()]
    return {row["id"]: row for row in rows}


def excluded(out: Path) -> dict[str, dict]:
    rows = table(out, "_excluded/*.parquet")
    return {key: row | {"detail": json.loads(row["detail"] or "null")} for key, row in rows.items()}


STAGES = [{"decode_image": {}}, {"dedup_image": {}}]


def test_planted_near_duplicates_are_removed_and_clusters_described(tmp_path: Path):
    planted = corpus(tmp_path / "raw")
    stats = run(tmp_path / "raw", tmp_path / "out", STAGES)
    dropped, kept = excluded(tmp_path / "out"), table(tmp_path / "out", "part-*.parquet")
    assert stats["documents_in"] == len(kept) + len(dropped) == 90
    groups: dict[str, set[str]] = {}
    for copy, original in planted.items():
        groups.setdefault(original, {original}).add(copy)
    for members in groups.values():
        survivors = members & set(kept)
        assert len(survivors) == 1, members
        (survivor,) = survivors
        assert kept[survivor]["dup_cluster_size"] >= len(members)
        for member in members - survivors:
            assert dropped[member]["reason"] == "duplicate"
            assert dropped[member]["detail"]["duplicate_of"] == survivor
    originals_alone = {f"o{n:03d}" for n in range(60)} - set(groups)
    assert originals_alone <= set(kept)
    assert all(kept[i]["dup_cluster_size"] == 1 and kept[i]["dup_cluster_id"] == i
               for i in originals_alone)  # fmt: skip
    assert all(len(row["phash"]) == 16 for row in kept.values())


def test_preferred_sources_survive_and_output_is_the_same_for_1_and_2_workers(tmp_path: Path):
    corpus(tmp_path / "raw")
    stages = [{"decode_image": {}}, {"dedup_image": {"prefer_sources": ["curated"]}}]
    run(tmp_path / "raw", tmp_path / "one", stages, workers=1)
    run(tmp_path / "raw", tmp_path / "two", stages, workers=2, task_size_mb=0.05)
    one, two = table(tmp_path / "one", "part-*.parquet"), table(tmp_path / "two", "part-*.parquet")
    assert one == two
    dropped = excluded(tmp_path / "one")
    for row in dropped.values():
        survivor = one[row["detail"]["duplicate_of"]]
        assert survivor["source"] == "curated" or row["source"] == "web"


def test_exact_mode_removes_only_equal_hashes(tmp_path: Path):
    image = natural(5)
    rows = [
        {"id": "a", "text": "x", "image": encoded(image, quality=90)},
        {"id": "b", "text": "x", "image": encoded(image, quality=90)},  # the same bytes
        {"id": "c", "text": "x", "image": encoded(image, "PNG")},  # the same pixels
        {"id": "d", "text": "x", "image": encoded(variant(image, "cropped"), quality=90)},
        {"id": "e", "text": "x", "image": encoded(natural(6), quality=90)},
    ]
    write_parquet(tmp_path / "raw" / "web" / "a.parquet", rows)
    phashes = {r["id"]: DecodeImage().apply(Document(r["id"], "", "s", media={"jpg": r["image"]}))
               .metadata["phash"] for r in rows}  # fmt: skip
    assert phashes["a"] == phashes["b"] and phashes["d"] != phashes["a"]
    run(
        tmp_path / "raw",
        tmp_path / "out",
        [{"decode_image": {}}, {"dedup_image": {"threshold": 0}}],
    )
    dropped = excluded(tmp_path / "out")
    expected = {"b"} | ({"c"} if phashes["c"] == phashes["a"] else set())
    assert set(dropped) == expected
    assert all(row["detail"]["duplicate_of"] == "a" for row in dropped.values())
    assert ImageDedup(threshold=0).band_count() == 1


def rows_of(prefix: str, images: list[Image.Image]) -> list[dict]:
    return [
        {"id": f"{prefix}{n}", "text": "x", "image": encoded(im)} for n, im in enumerate(images)
    ]


def test_an_index_removes_duplicates_of_an_earlier_run(tmp_path: Path):
    first = [natural(n) for n in range(10)]
    write_parquet(tmp_path / "one" / "web" / "a.parquet", rows_of("a", first))
    later = [variant(first[2], "resized"), natural(50), variant(first[7], "colour")]
    write_parquet(tmp_path / "two" / "web" / "b.parquet", rows_of("b", later))
    stages = [{"decode_image": {}}, {"dedup_image": {"index": str(tmp_path / "index")}}]
    run(tmp_path / "one", tmp_path / "out1", stages)
    assert excluded(tmp_path / "out1") == {}
    run(tmp_path / "two", tmp_path / "out2", stages)
    dropped = excluded(tmp_path / "out2")
    assert {k: (v["reason"], v["detail"]["duplicate_of"]) for k, v in dropped.items()} == {
        "b0": ("duplicate_in_index", "a2"),
        "b2": ("duplicate_in_index", "a7"),
    }


def test_documents_without_a_readable_image_are_not_compared():
    stage = ImageDedup()
    good = encoded(natural(3))
    docs = [
        Document("t", "just text", "s"),
        Document("x", "", "s", media={"jpg": b"broken"}),
        Document("g", "", "s", media={"jpg": good}),
        DecodeImage().apply(Document("h", "", "s", media={"jpg": good})),
    ]
    keys, keyed, bits = stage.fingerprint(docs)
    assert keyed.tolist() == [False, False, True, True]
    assert (keys[2] == keys[3]).all() and (bits[2] == bits[3]).all()  # stored phash == computed
    assert keys.shape == (4, 8, 1) and bits.shape == (4, 64)


def test_hashes_within_the_threshold_share_a_band_when_bands_exceed_it():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2, (500, 64)).astype(np.uint32)
    flipped = base.copy()
    for row in flipped:
        row[rng.choice(64, 10, replace=False)] ^= 1
    keys = band_keys(np.concatenate((base, flipped)), 11)
    shared = (keys[:500, :, 0] == keys[500:, :, 0]).any(axis=1)
    assert shared.all()


def test_no_removal_points_at_an_image_farther_than_the_threshold(tmp_path: Path):
    """Hashes planted as chains (each step 5-9 bits, the ends often 14-18 apart) and
    blank-hub stars (photos 6-9 bits from the flat image's hash, far from each other):
    connected components would remove images for survivors beyond the threshold."""
    rng = np.random.default_rng(7)
    blank = 1 << 63  # a flat image's hash: the DC bit only

    def flipped(value: int, bits: int) -> int:
        for bit in rng.choice(64, bits, replace=False).tolist():
            value ^= 1 << bit
        return value

    hashes: dict[str, int] = {}
    for chain in range(30):
        value = int(rng.integers(0, 2**63)) | int(rng.integers(0, 2)) << 63
        for step in range(int(rng.integers(2, 6))):
            hashes[f"c{chain:02d}-{step}"] = value
            value = flipped(value, int(rng.integers(5, 10)))
    for hub in range(3):
        hashes[f"b{hub}-blank"] = blank
        for spoke in range(4):
            hashes[f"b{hub}-{spoke}"] = flipped(blank, int(rng.integers(6, 10)))
    records = [{"id": k, "text": "a picture", "phash": f"{v:016x}"} for k, v in hashes.items()]
    write_jsonl(tmp_path / "raw" / "web" / "a.jsonl", records)
    threshold = 10
    stats = run_pipeline(
        {
            "input": str(tmp_path / "raw" / "web" / "a.jsonl"),
            "output": str(tmp_path / "out"),
            "stages": [{"dedup_image": {"threshold": threshold, "bands": 11}}],
        }
    ).stats
    assert stats["excluded"] > 20

    def distance(a: str, b: str) -> int:
        return (hashes[a] ^ hashes[b]).bit_count()

    dropped = excluded(tmp_path / "out")
    far = {k: distance(k, r["detail"]["duplicate_of"]) for k, r in dropped.items()}
    assert max(far.values()) <= threshold, {k: d for k, d in far.items() if d > threshold}
    kept = table(tmp_path / "out", "part-*.parquet")
    assert all(r["detail"]["duplicate_of"] in kept for r in dropped.values())
    # With more bands than threshold bits every close pair is compared, so no two images
    # kept are within the threshold: a chain keeps as many images as it needs stars.
    ids = sorted(kept)
    close = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :] if distance(a, b) <= threshold]
    assert close == []
    sizes = {}
    for key, row in kept.items():
        sizes[row["dup_cluster_id"]] = row["dup_cluster_size"]
        assert row["dup_cluster_id"] == key or row["dup_cluster_size"] == 1
    taken = {}
    for row in dropped.values():
        taken[row["detail"]["duplicate_of"]] = taken.get(row["detail"]["duplicate_of"], 1) + 1
    assert {k: sizes[k] for k in taken} == taken
