"""The README's image-text pipeline runs as written: in a folder holding the inputs it names
(100 WebDataset shards by brace pattern, an image folder with caption sidecars, a URL list
served on loopback), `mixplane process` on the block writes image shards, `mixplane catalog
register clean-images/ --name photos` registers them and `width >= 512 AND language = 'en'`
selects the wide English samples. The image-text mixture block parses as written (it is run
by tests/test_clip_smoke.py)."""

from __future__ import annotations

import functools
import http.server
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image
from readme_blocks import readme_block

from mixplane.mix.spec import MixtureSpec
from mixplane.process.config import PipelineConfig
from mixplane.process.pipeline import Pipeline

PIPELINE_MARKER = "output_format: webdataset"

# Captions: English sentences of 3+ words, each distinct.
CAPTIONS = (
    "A red kite flying high above the green hills on a windy afternoon.",
    "Two children building a large sandcastle on the beach at sunset.",
    "An old wooden fishing boat resting on the shore of a quiet lake.",
    "A small brown dog running through the snow in the city park.",
    "Fresh vegetables and fruit for sale at a busy farmers market.",
    "A wide view of the mountains covered with snow under a clear sky.",
    "The bright lights of the city skyline reflected in the river at night.",
    "A cup of hot coffee and a book on a table by the window.",
    "A long empty road crossing the desert towards the distant mountains.",
    "A black cat sleeping in the sun on an old stone wall.",
    "Colorful hot air balloons rising over the valley in the early morning.",
    "A yellow bicycle leaning against a blue door in a narrow street.",
    "A green tractor working in a wheat field on a summer day.",
    "A wide panorama of the harbour with boats and cranes at dawn.",
    "A tall lighthouse standing on the rocks while the waves crash below.",
)


def picture(seed: int, width: int, height: int, fmt: str = "JPEG", quality: int = 90) -> bytes:
    """A picture of random colored blocks: pictures of different seeds are far apart in
    pHash, so only planted duplicates are removed."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (6, max(1, round(6 * width / height)), 3), dtype=np.uint8)
    image = Image.fromarray(blocks).resize((width, height), Image.Resampling.NEAREST)
    out = io.BytesIO()
    image.save(out, fmt, **({"quality": quality} if fmt == "JPEG" else {}))
    return out.getvalue()


def write_tar(path: Path, samples: dict[str, dict[str, bytes]]) -> None:
    """A WebDataset shard: members KEY.EXT in order (no samples: an empty archive)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for key, members in samples.items():
            for ext, data in members.items():
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def served(tmp_path) -> Iterator[tuple[Path, str]]:
    """A folder served over HTTP on loopback, and its base URL."""
    folder = tmp_path / "served"
    folder.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def write_inputs(run: Path, served: Path, base_url: str) -> dict[str, object]:
    """The inputs the README's pipeline names, in `run` (the URL list's images in `served`);
    returns what the run should make of them: the samples read, the wide (2:1) samples,
    and the samples each stage excludes, by reason."""
    captions = iter(CAPTIONS)
    duplicate = picture(99, 320, 240)
    shards: dict[int, dict[str, dict[str, bytes]]] = {
        3: {
            "000000": {"jpg": picture(1, 320, 240), "txt": next(captions).encode()},
            "000001": {
                "jpg": picture(2, 640, 300),  # wide: 546 x 256 after the resize
                "txt": next(captions).encode(),
                "json": json.dumps({"origin": "crawl"}).encode(),
            },
        },
        17: {"000000": {"jpg": picture(3, 150, 150), "txt": next(captions).encode()}},
        42: {
            "000000": {"jpg": picture(4, 300, 300), "txt": b"two words"},
            "000001": {"jpg": duplicate, "txt": next(captions).encode()},
        },
        88: {"000000": {"png": picture(5, 260, 220, "PNG"), "txt": next(captions).encode()}},
    }
    for number in range(100):  # every shard of the brace range exists; most are empty
        write_tar(run / "raw" / "laion" / f"{number:05d}.tar", shards.get(number, {}))

    photos = run / "raw" / "photos"
    photos.mkdir(parents=True)
    folder = {
        "beach.jpg": picture(6, 400, 300),
        "harbour.jpg": picture(7, 660, 300),  # wide: 563 x 256
        "lake.png": picture(8, 240, 320, "PNG"),
        "copy.jpg": Image.open(io.BytesIO(duplicate)).convert("RGB"),  # re-encoded below
        "market.jpg": picture(9, 300, 250),
    }
    for name, image in folder.items():
        if isinstance(image, Image.Image):
            out = io.BytesIO()
            image.save(out, "JPEG", quality=70)
            image = out.getvalue()
        (photos / name).write_bytes(image)
    for name in ("beach", "harbour", "lake", "copy"):
        (photos / f"{name}.txt").write_text(next(captions))
    (photos / "market.json").write_text(json.dumps({"caption": next(captions)}))

    (served / "a.jpg").write_bytes(picture(10, 320, 320))
    (served / "b.jpg").write_bytes(picture(11, 700, 320))  # wide: 560 x 256
    (served / "c.png").write_bytes(picture(12, 280, 210, "PNG"))
    records = [
        {"url": f"{base_url}/{name}", "caption": next(captions)}
        for name in ("a.jpg", "b.jpg", "missing.jpg", "c.png")
    ]
    (run / "raw" / "urls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return {
        "documents_in": 6 + 5 + 4,
        "wide": 3,
        "excluded_by": {
            "fetch_images": {"fetch_http_404": 1},
            "decode_image": {"image_too_small": 1},
            "caption_filter": {"caption_too_short": 1},
            "dedup_image": {"duplicate": 1},
        },
    }


def test_readme_image_pipeline_builds():
    config = PipelineConfig.parse(yaml.safe_load(readme_block("yaml", PIPELINE_MARKER)))
    Pipeline(config)  # stages and the sources they name are checked here
    assert config.output_format == "webdataset"
    names = [stage.build().stage_name() for stage in config.stages]
    assert names == [
        "fetch_images",
        "decode_image",
        "caption_filter",
        "langid",
        "dedup_image",
        "resize_image",
    ]
    assert config.input[2].url_key == "url"


def test_readme_image_pipeline_runs_registers_and_queries(tmp_path, monkeypatch, served, cli):
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.chdir(run)
    expected = write_inputs(run, *served)
    block = readme_block("yaml", PIPELINE_MARKER)
    Path("pipeline.yaml").write_text(block)

    code, out, err = cli("process", "pipeline.yaml", "--json")
    assert code == 0, err
    stats = json.loads(out)["stats"]
    assert stats["documents_in"] == expected["documents_in"]
    assert stats["documents_in"] == stats["kept"] + stats["excluded"] + stats["quarantined"]
    assert stats["quarantined"] == 0
    assert stats["excluded_by"] == expected["excluded_by"]

    clean = Path("clean-images")
    for suffix in (".tar", ".idx", ".meta.parquet"):
        assert list(clean.glob(f"part-*{suffix}")), f"no part-*{suffix} in {clean}"
    rows = [
        row
        for path in sorted(clean.glob("part-*.meta.parquet"))
        for row in pq.read_table(path).to_pylist()
    ]
    assert len(rows) == stats["kept"]
    for row in rows:  # the shorter side brought down to 256, never enlarged
        shorter = min(row["original_width"], row["original_height"])
        assert min(row["width"], row["height"]) == min(shorter, 256), row["id"]
    assert {row["language"] for row in rows} == {"en"}
    members: dict[str, set[str]] = {}  # KEY.jpg, KEY.txt and KEY.json per sample
    for path in clean.glob("part-*.tar"):
        with tarfile.open(path) as tar:
            for name in tar.getnames():
                key, ext = name.rsplit(".", 1)
                members.setdefault(f"{path.name}/{key}", set()).add(ext)
    assert len(members) == stats["kept"]
    assert all(exts == {"jpg", "txt", "json"} for exts in members.values()), members
    excluded = [
        row
        for path in sorted((clean / "_excluded").glob("*.parquet"))
        for row in pq.read_table(path).to_pylist()
    ]
    missing = [row for row in excluded if row["reason"] == "fetch_http_404"]
    assert len(missing) == 1, missing
    assert json.loads(missing[0]["detail"])["url"].endswith("/missing.jpg")
    # The planted copy (re-encoded at another quality) goes; the original (the first id of
    # the pair) stays.
    removed = [row for row in excluded if row["stage"] == "dedup_image"]
    assert [row["id"] for row in removed] == ["photos/copy.jpg"]
    assert json.loads(removed[0]["detail"])["duplicate_of"] == "laion/00042.tar/000001"
    assert "laion/00042.tar/000001" in {row["id"] for row in rows}

    # The folder is read as it is, before anything is registered.
    assert not list(Path().glob("*.duckdb"))
    batches = read_shards_as_the_readme_does()
    assert len(batches) == stats["kept"] // 8 and not list(Path().glob("*.duckdb"))

    code, out, err = cli("catalog", "register", "clean-images/", "--name", "photos")
    assert code == 0, err
    assert "registered photos@1" in out
    code, out, err = cli("query", "width >= 512 AND language = 'en'", "--json")
    assert code == 0, err
    selection = json.loads(out)
    assert selection["documents"] == expected["wide"]
    assert selection["datasets"][0]["total_documents"] == stats["kept"]


def read_shards_as_the_readme_does() -> list[dict]:
    """The README's block that reads image shards without a catalog, run as written (the
    user brings `tokenizer` and `train_step`); then resumed from its state."""
    batches: list[dict] = []
    names = {"tokenizer": lambda caption: [len(w) for w in caption.split()],
             "train_step": batches.append}  # fmt: skip
    exec(readme_block("python", 'ImageTextDataset("clean-images/"'), names)
    dataset, state = names["dataset"], names["state"]
    assert state["consumed"] == dataset.epoch_length  # the whole first epoch, and no further
    again = type(dataset)("clean-images/", batch_size=8, tokenizer=names["tokenizer"], seed=0)
    again.load_state_dict(state)
    assert [b["index"].tolist() for b in again] == [
        (b["index"] + dataset.epoch_length).tolist() for b in batches
    ]
    return batches


def test_readme_image_mixture_parses():
    spec = MixtureSpec.parse(yaml.safe_load(readme_block("yaml", "kind: image_text")))
    assert spec.kind == "image_text"
    assert sorted(spec.components) == ["art", "photos"]
