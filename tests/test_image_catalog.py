"""Image-text data from processing to the catalog: a real pipeline writes image shards
(`output_format: webdataset`), a real DuckDB catalog registers and queries them."""

from __future__ import annotations

import io
import json

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import write_jsonl
from PIL import Image

from mixplane.catalog import Catalog
from mixplane.catalog.sample import read_document, sample_documents
from mixplane.errors import InputError
from mixplane.lineage import document_origin, trace
from mixplane.process.pipeline import run_pipeline
from mixplane.store.images import ImageShardReader

N = 16
BANNED = "forbidden"


def image_bytes(i: int) -> bytes:
    """A small image; odd rows are PNG, even JPEG; widths 24..62 (some under 40)."""
    rng = np.random.default_rng(i)
    pixels = rng.integers(0, 256, (36, 24 + 38 * i // (N - 1), 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG" if i % 2 else "JPEG")
    return buffer.getvalue()


def caption(i: int) -> str:
    if i == 5:
        return f"a {BANNED} picture"
    if i in (9, 12):
        return "the same caption twice"
    return f"picture number {i}"


def make_input(tmp_path):
    """A Parquet file of image rows and a JSON Lines file of text rows (no image)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    rows = {
        "id": [f"img-{i:02d}" for i in range(N)],
        "text": [caption(i) for i in range(N)],
        "language": ["en" if i % 3 else "de" for i in range(N)],
        "image": [image_bytes(i) for i in range(N)],
    }
    pq.write_table(pa.table(rows), raw / "images.parquet")
    text = tmp_path / "text"
    text.mkdir()
    write_jsonl(text / "notes.jsonl", [{"id": f"note-{i}", "text": f"note {i}"} for i in range(3)])
    return rows


def pipeline(tmp_path, output: str, stages: list, **extra) -> dict:
    return {
        "input": [
            {"path": str(tmp_path / "raw" / "images.parquet"), "image_key": "image"},
            {"path": str(tmp_path / "text" / "notes.jsonl")},
        ],
        "output": str(tmp_path / output),
        "stages": stages,
        "output_format": "webdataset",
        **extra,
    }


def kept_images(folder) -> dict[str, dict]:
    """id -> sample of every image shard in `folder`, read through the index."""
    found = {}
    manifest = orjson.loads((folder / "_manifest.json").read_bytes())
    stems = [o["path"][: -len(".tar")] for o in manifest["outputs"] if o["path"].endswith(".tar")]
    for stem in stems:
        reader = ImageShardReader(str(folder), stem)
        for sample in reader.samples(range(len(reader))):
            found[json.loads(sample["json"])["id"]] = sample
    return found


def test_pipeline_writes_image_shards_and_the_catalog_queries_them(tmp_path, cli):
    rows = make_input(tmp_path)
    stages = [
        {"custom_stages:Shout": {"banned": BANNED, "suffix": ""}},
        {"custom_stages:Fragile": {"digit": "7"}},
    ]
    result = run_pipeline(pipeline(tmp_path, "out", stages, max_stage_errors=1))
    stats = result.stats
    out = tmp_path / "out"
    # Every record has one place: 16 images + 3 notes in; the banned caption excluded; img-07
    # errored in the failing stage; the notes have no image: quarantined at the writer.
    assert stats["documents_in"] == N + 3
    assert stats["excluded"] == 1 and stats["excluded_by"] == {"shout": {"banned_word": 1}}
    assert stats["quarantined_by"] == {"write": {"MissingImageError": 3}}
    assert stats["errored_by"] == {"fragile": {"ValueError": 1}}
    assert stats["kept"] == N - 2
    accounted = stats["kept"] + stats["excluded"] + stats["quarantined"] + stats["errored"]
    assert accounted == stats["documents_in"]

    manifest = orjson.loads((out / "_manifest.json").read_bytes())
    paths = [o["path"] for o in manifest["outputs"]]
    for task in (0, 1):
        for suffix in ("tar", "idx", "meta.parquet"):
            assert f"part-{task:05d}.{suffix}" in paths
    errors = pq.read_table(out / "_errors" / "part-00000.parquet").to_pylist()
    fragile = next(row for row in errors if row["stage"] == "fragile")
    raw = orjson.loads(fragile["raw"])
    assert raw["id"] == "img-07" and raw["media_bytes"] == {"png": len(rows["image"][7])}
    assert len(fragile["raw"]) < 1000  # sizes, not the image
    notes = pq.read_table(out / "_quarantine" / "part-00001.parquet").to_pylist()
    assert [row["stage"] for row in notes] == ["write"] * 3
    assert "has no image to write" in notes[0]["error"]
    excluded = pq.read_table(out / "_excluded" / "part-00000.parquet").to_pylist()
    assert excluded[0]["id"] == "img-05" and excluded[0]["text"] == f"a {BANNED} picture"

    samples = kept_images(out)
    assert sorted(samples) == [f"img-{i:02d}" for i in range(N) if i not in (5, 7)]
    for doc_id, sample in samples.items():
        i = int(doc_id[4:])
        ext = "png" if i % 2 else "jpg"
        assert sample[ext] == rows["image"][i]
        assert sample["txt"].decode() == caption(i).upper()

    catalog = Catalog(tmp_path / "catalog.duckdb")
    version = catalog.register(str(out), "pics")
    assert version.kind == "image_text" and version.summary()["kind"] == "image_text"
    assert version.documents == N - 2 and version.tokens == 0
    # Both shards are in the catalog, the empty one (notes) included.
    assert [shard.documents for shard in version.shards] == [N - 2, 0]
    widths = {i: Image.open(io.BytesIO(rows["image"][i])).width for i in range(N)}
    expected = sorted(
        f"img-{i:02d}"
        for i in range(N)
        if i not in (5, 7) and widths[i] >= 40 and rows["language"][i] == "en"
    )
    assert 0 < len(expected) < N - 2
    selection = catalog.select("width >= 40 AND language = 'en'", datasets=["pics"])
    part = selection["pics@1"]
    assert part.documents == len(expected)
    shard, index = part.document_indices()
    reader = ImageShardReader(str(out), part.shards[0])
    chosen = reader.samples(index.tolist())
    assert sorted(json.loads(s["json"])["id"] for s in chosen) == expected
    for sample in chosen:
        ext = "png" if "png" in sample else "jpg"
        assert Image.open(io.BytesIO(sample[ext])).width >= 40

    examples = sample_documents(part, 3)
    assert len(examples) == 3
    for example in examples:
        assert example["text"] == example["caption"] and example["width"] >= 40
    document = read_document(str(out), "part-00000", 0)
    assert document["text"] == document["properties"]["caption"] == caption(0).upper()
    origin = document_origin(trace(str(out)), "img-00")
    assert origin[0]["part"].endswith("part-00000.tar")

    code, shown, _ = cli("query", "width >= 40", "-c", str(tmp_path / "catalog.duckdb"))
    assert code == 0 and "pics@1" in shown
    code, shown, _ = cli(
        "query", "language = 'en'", "-c", str(tmp_path / "catalog.duckdb"), "-s", "2"
    )
    assert code == 0 and "PICTURE NUMBER" in shown and "no token files" not in shown
    code, shown, _ = cli("catalog", "show", "pics", "-c", str(tmp_path / "catalog.duckdb"))
    assert code == 0 and "image-text" in shown and "width" in shown


def test_register_checks_image_folders(tmp_path):
    make_input(tmp_path)
    run_pipeline(pipeline(tmp_path, "out", [], allow_mostly_quarantined=True))
    out = tmp_path / "out"
    catalog = Catalog(tmp_path / "catalog.duckdb")
    manifest_path = out / "_manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    meta = next(o for o in manifest["outputs"] if o["path"] == "part-00000.meta.parquet")
    meta["records"] += 1
    manifest_path.write_bytes(orjson.dumps(manifest))
    with pytest.raises(InputError, match="part-00000 metadata has 16 documents, the manifest"):
        catalog.register(str(out), "pics")
    meta["records"] -= 1
    manifest_path.write_bytes(orjson.dumps(manifest))
    (out / "part-00000.idx").unlink()
    with pytest.raises(InputError, match="image shard part-00000 has no part-00000.idx"):
        catalog.register(str(out), "pics")


def test_global_stage_keeps_images_and_outputs_do_not_depend_on_workers(tmp_path):
    rows = make_input(tmp_path)
    # Shout runs before the global stage, so the first segment saves its documents in a
    # work file that the last segment reads back: the images must survive it.
    stages = [{"custom_stages:Shout": {"banned": BANNED, "suffix": ""}}, "dedup_exact"]
    one = run_pipeline(pipeline(tmp_path, "one", stages, allow_mostly_quarantined=True))
    assert one.stats["excluded_by"]["shout"] == {"banned_word": 1}
    assert sum(one.stats["excluded_by"]["dedup_exact"].values()) == 1
    assert one.stats["kept"] == N - 2
    samples = kept_images(tmp_path / "one")
    assert "img-12" not in samples and "img-05" not in samples
    for doc_id, sample in samples.items():
        i = int(doc_id[4:])
        assert sample["png" if i % 2 else "jpg"] == rows["image"][i]
        assert json.loads(sample["json"])["language"] == rows["language"][i]
    two = run_pipeline(pipeline(tmp_path, "two", stages, allow_mostly_quarantined=True), workers=2)

    def outputs(result) -> list:
        with open(result.manifest, "rb") as handle:
            manifest = orjson.loads(handle.read())
        return [(o["path"], o["size"], o["hash"]) for o in manifest["outputs"]]

    assert outputs(one) == outputs(two)


def test_image_dedup_pipeline_ends_with_images_intact(tmp_path):
    rows = make_input(tmp_path)
    # A second copy of image 4 under another id and caption: dedup_image drops one of them.
    rows = {key: [*values, values[4]] for key, values in rows.items()}
    rows["id"][-1], rows["text"][-1] = "img-copy", "another caption"
    pq.write_table(pa.table(rows), tmp_path / "raw" / "images.parquet")
    stages = ["decode_image", "dedup_image"]
    result = run_pipeline(pipeline(tmp_path, "out", stages, allow_mostly_quarantined=True))
    assert sum(result.stats["excluded_by"]["dedup_image"].values()) == 1
    samples = kept_images(tmp_path / "out")
    assert ("img-04" in samples) != ("img-copy" in samples)
    assert len(samples) == N
    by_id = dict(zip(rows["id"], rows["image"], strict=True))
    for doc_id, sample in samples.items():
        record = json.loads(sample["json"])
        image = sample["png"] if "png" in sample else sample["jpg"]
        assert image == by_id[doc_id]
        assert len(record["phash"]) == 16
        assert (record["width"], record["height"]) == Image.open(io.BytesIO(image)).size
