"""Image-text inputs: WebDataset tars (tarfile- and webdataset-written, cut, corrupt, over
s3://, http:// and pipe:), img2dataset folders, image folders with sidecars, and Parquet /
JSON Lines rows with image bytes or URLs; read alone and through the real pipeline."""

from __future__ import annotations

import base64
import functools
import gzip
import io
import json
import tarfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import webdataset as wds
from PIL import Image

from mixplane.document import Document
from mixplane.errors import InputError
from mixplane.io.readers import Quarantined, ReadOptions, ReadStats, Shard, reader_for
from mixplane.io.readers.webdataset import split_name
from mixplane.process.config import InputConfig
from mixplane.process.pipeline import run_pipeline
from mixplane.process.tasks import plan_tasks, scan_inputs


def image(fmt: str = "JPEG", size=(32, 24), color=(200, 30, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, fmt)
    return buffer.getvalue()


JPG, PNG = image(), image("PNG", color=(0, 90, 200))


def write_tar(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def img2dataset_members(first: int, n: int, status: str = "success") -> list[tuple[str, bytes]]:
    members = []
    for i in range(first, first + n):
        key = f"{i:09d}"
        meta = {
            "url": f"https://example.com/{i}.jpg",
            "caption": f"a red square number {i}",
            "key": key,
            "status": status,
            "error_message": None,
            "width": 32,
            "height": 24,
            "original_width": 64,
            "original_height": 48,
            "sha256": "0" * 64,
        }
        members += [
            (f"{key}.jpg", JPG),
            (f"{key}.txt", meta["caption"].encode()),
            (f"{key}.json", json.dumps(meta).encode()),
        ]
    return members


def members_of(path: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return tar.getmembers()


def read(url: str, name: str = "s.tar", fmt: str = "webdataset", **options) -> list:
    return list(reader_for(fmt)(Shard(url, name, fmt), ReadOptions(**options), ReadStats()))


def balanced(stats: dict) -> bool:
    kept, excluded, quarantined = stats["kept"], stats["excluded"], stats["quarantined"]
    return stats["documents_in"] == kept + excluded + quarantined


def test_tarfile_shard_samples(tmp_path: Path):
    tar = write_tar(
        tmp_path / "00000.tar",
        [
            *img2dataset_members(0, 2),
            ("dir/x.PNG", PNG),  # extension lowercased; key keeps its folder
            ("dir/x.cls", b"7\n"),  # small text: metadata
            ("dir/x.seg.png", PNG),  # a second image of another kind: media
            ("y.json", b'{"caption": "from json", "lang": "en"}'),
        ],
    )
    docs = read(str(tar), "00000.tar")
    assert [d.id for d in docs] == [
        "00000.tar/000000000",
        "00000.tar/000000001",
        "00000.tar/dir/x",
        "00000.tar/y",
    ]
    first = docs[0]
    assert first.text == "a red square number 0" and first.source == tmp_path.name
    assert first.media == {"jpg": JPG}
    assert first.metadata["status"] == "success" and first.metadata["width"] == 32
    assert first.metadata["url"] == "https://example.com/0.jpg"
    assert first.metadata["key"] == "000000000"
    assert "caption" not in first.metadata  # it is the text
    assert docs[2].media == {"png": PNG, "seg.png": PNG}
    assert docs[2].metadata == {"key": "dir/x", "cls": "7"} and docs[2].text == ""
    assert docs[3].text == "from json" and docs[3].metadata == {"lang": "en", "key": "y"}
    assert docs[3].media == {}


def test_grouping_matches_the_webdataset_library(tmp_path: Path):
    path = tmp_path / "w.tar"
    with wds.TarWriter(str(path)) as writer:
        for i in range(5):
            writer.write({"__key__": f"s{i:03d}", "png": PNG, "txt": f"cap {i}", "json": {"i": i}})
    ours = read(str(path), "w.tar")
    theirs = list(wds.WebDataset(str(path), shardshuffle=False, empty_check=False))
    assert [d.id.split("/", 1)[1] for d in ours] == [s["__key__"] for s in theirs]
    for doc, sample in zip(ours, theirs, strict=True):
        assert doc.text == sample["txt"].decode()
        assert doc.media == {"png": sample["png"]}
        assert doc.metadata == {**json.loads(sample["json"]), "key": sample["__key__"]}
    assert split_name("a/b.c.D") == ("a/b", "c.d") and split_name("noext") is None


def test_cut_tar_keeps_earlier_samples_and_quarantines_the_partial_one(tmp_path: Path):
    whole = write_tar(tmp_path / "whole.tar", img2dataset_members(0, 4)).read_bytes()
    # Cut inside the image of the third sample (each member: 512 header + padded data).
    offsets = [m.offset_data for m in members_of(tmp_path / "whole.tar")]
    cut_at = offsets[6] + 100
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "cut.tar").write_bytes(whole[:cut_at])
    records = read(str(tmp_path / "raw" / "cut.tar"), "cut.tar")
    assert [type(r).__name__ for r in records] == ["Document", "Document", "Quarantined"]
    bad = records[2]
    assert bad.location.endswith("cut.tar#000000002") and bad.doc_id == "cut.tar/000000002"
    assert f"tar truncated at byte {cut_at}" in bad.error and "000000002.jpg" in bad.error
    assert bad.raw == JPG[:100]

    result = run_pipeline(
        {"input": str(tmp_path / "raw" / "*.tar"), "output": str(tmp_path / "out")},
        allow_mostly_quarantined=True,
    )
    stats = result.stats
    assert (stats["documents_in"], stats["kept"], stats["quarantined"]) == (3, 2, 1)
    assert balanced(stats)
    quarantine = pq.read_table(tmp_path / "out" / "_quarantine" / "part-00000.parquet")
    assert quarantine.column("id").to_pylist() == ["cut.tar/000000002"]


def test_cut_between_samples_and_inside_a_header(tmp_path: Path):
    whole = write_tar(tmp_path / "whole.tar", img2dataset_members(0, 2)).read_bytes()
    members = members_of(tmp_path / "whole.tar")
    in_header = members[3].offset + 200  # inside the header of the second sample's image
    (tmp_path / "h.tar").write_bytes(whole[:in_header])
    records = read(str(tmp_path / "h.tar"))
    assert isinstance(records[0], Document)
    assert isinstance(records[1], Quarantined) and "inside a header" in records[1].error
    at_boundary = members[3].offset  # a cut between samples leaves whole samples only
    (tmp_path / "b.tar").write_bytes(whole[:at_boundary])
    assert [type(r).__name__ for r in read(str(tmp_path / "b.tar"))] == ["Document"]


def test_corrupt_header_ends_the_file_with_a_quarantined_record(tmp_path: Path):
    data = bytearray(write_tar(tmp_path / "t.tar", img2dataset_members(0, 3)).read_bytes())
    second = members_of(tmp_path / "t.tar")[3].offset
    data[second + 10 : second + 20] = b"garbage!!!"  # the name: the checksum no longer fits
    (tmp_path / "t.tar").write_bytes(bytes(data))
    records = read(str(tmp_path / "t.tar"))
    # The damaged header names no member for sure: it may have been the next member of the
    # sample in progress, so that sample cannot be shown whole and takes the error.
    assert [(type(r).__name__, r.doc_id) for r in records] == [("Quarantined", "s.tar/000000000")]
    assert f"corrupt tar header at byte {second}" in records[0].error
    assert "checksum" in records[0].error and records[0].stat_reason() == "corrupt tar header"


def test_repeated_extension_and_oversized_member_are_quarantined(tmp_path: Path):
    tar = write_tar(
        tmp_path / "r.tar",
        [
            ("a.jpg", JPG),
            ("a.txt", b"one"),
            ("a.txt", b"two"),
            ("b.jpg", JPG),
            ("c.jpg", bytes(5000)),
            ("c.txt", b"big"),
            ("d.txt", b"fine"),
        ],
    )
    records = read(str(tar), "r.tar", max_record_bytes=4096)
    kinds = [(type(r).__name__, getattr(r, "id", None) or r.doc_id) for r in records]
    assert kinds == [
        ("Quarantined", "r.tar/a"),
        ("Document", "r.tar/b"),
        ("Quarantined", "r.tar/c"),
        ("Document", "r.tar/d"),
    ]
    assert "extension 'txt' repeated under key 'a'" in records[0].error
    assert records[0].location == f"{tar}#a"
    assert "exceeds max_record_bytes=4096" in records[2].error


def test_brace_expansion_gzip_and_one_task_per_tar(tmp_path: Path):
    raw = tmp_path / "shards"
    raw.mkdir()
    for shard in range(3):
        write_tar(raw / f"shard-{shard:02d}.tar", img2dataset_members(shard * 10, 4))
    tar_bytes = (raw / "shard-00.tar").read_bytes()
    (raw / "shard-00.tar.gz").write_bytes(gzip.compress(tar_bytes, mtime=0))
    pattern = str(raw / "shard-{00..02}.tar")
    files = scan_inputs([InputConfig(path=pattern)], {})
    tasks = plan_tasks(files, task_bytes=1000)  # smaller than a tar: still one task each
    assert [(t.shard.name, t.shard.start, t.shard.end) for t in tasks] == [
        (f"shard-{i:02d}.tar", 0, None) for i in range(3)
    ]
    result = run_pipeline({"input": pattern, "output": str(tmp_path / "out"), "workers": 2})
    assert result.stats["kept"] == 12 and balanced(result.stats)
    assert result.stats["bytes_in"] > 3 * 4 * len(JPG)
    ids = pq.read_table(tmp_path / "out" / "part-00001.parquet").column("id").to_pylist()
    assert ids[0] == "shard-01.tar/000000010"
    assert [d.id for d in read(str(raw / "shard-00.tar.gz"), "g")] == [
        f"g/{i:09d}" for i in range(4)
    ]


def test_pipe_inputs(tmp_path: Path):
    (tmp_path / "wds").mkdir()
    for shard in range(2):
        write_tar(tmp_path / "wds" / f"{shard}.tar", img2dataset_members(shard * 5, 3))
    pattern = f"pipe:cat {tmp_path}/wds/{{0..1}}.tar"
    result = run_pipeline({"input": pattern, "output": str(tmp_path / "out")})
    assert result.stats["kept"] == 6 and balanced(result.stats)
    ids = pq.read_table(tmp_path / "out" / "part-00000.parquet").column("id").to_pylist()
    assert ids == ["0.tar/000000000", "0.tar/000000001", "0.tar/000000002"]
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert [i["fingerprint"].split(":")[0] for i in manifest["inputs"]] == ["command"] * 2

    with pytest.raises(InputError, match=r"command 'cat .*nope.tar' exited with status 1"):
        read(f"pipe:cat {tmp_path}/nope.tar")


def test_pipe_inputs_naming_urls_are_not_opened_when_planning():
    spec = InputConfig(path="pipe:curl -s https://host/{0..1}.tar")
    files = scan_inputs([spec], {})
    assert [(f.url, f.name, f.format, f.size) for f in files] == [
        (f"pipe:curl -s https://host/{i}.tar", f"{i}.tar", "webdataset", 0) for i in range(2)
    ]


def test_s3_shards(s3_bucket, tmp_path: Path):
    import s3fs

    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    for shard in range(2):
        local = write_tar(tmp_path / f"{shard:05d}.tar", img2dataset_members(shard * 3, 3))
        fs.put(str(local), f"{bucket}/wds/{shard:05d}.tar")
    result = run_pipeline(
        {
            "input": f"s3://{bucket}/wds/{{00000..00001}}.tar",
            "output": str(tmp_path / "out"),
            "storage_options": options,
        }
    )
    assert result.stats["kept"] == 6 and balanced(result.stats)
    table = pq.read_table(tmp_path / "out" / "part-00001.parquet")
    assert table.column("id").to_pylist()[0] == "00001.tar/000000003"
    assert table.column("source").to_pylist()[0] == "wds"


@pytest.fixture
def http_folder(tmp_path: Path):
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_shard(http_folder, tmp_path: Path):
    folder, base = http_folder
    write_tar(folder / "00000.tar", img2dataset_members(0, 3))
    docs = read(f"{base}/00000.tar", "00000.tar")
    assert [d.text for d in docs] == [f"a red square number {i}" for i in range(3)]
    assert all(d.media == {"jpg": JPG} for d in docs)
    result = run_pipeline({"input": f"{base}/00000.tar", "output": str(tmp_path / "out")})
    assert result.stats["kept"] == 3 and balanced(result.stats)


def test_img2dataset_folder(tmp_path: Path):
    folder = tmp_path / "laion"
    folder.mkdir()
    for shard in range(2):
        stem = folder / f"{shard:05d}"
        members = img2dataset_members(shard * 10, 3)
        failed = {
            "url": "https://example.com/gone.jpg",
            "caption": "lost",
            "key": f"{shard * 10 + 3:09d}",
            "status": "failed_to_download",
            "error_message": "HTTP 404",
        }
        members += [
            (f"{failed['key']}.txt", b"lost"),
            (f"{failed['key']}.json", json.dumps(failed).encode()),
        ]
        write_tar(stem.with_suffix(".tar"), members)
        pq.write_table(pa.table({"key": ["x"], "status": ["success"]}), f"{stem}.parquet")
        Path(f"{stem}_stats.json").write_text(json.dumps({"count": 4, "successes": 3}))
    # No tar of that stem: still an input.
    pq.write_table(pa.table({"text": ["a note"]}), folder / "notes.parquet")
    names = [f.name for f in scan_inputs([InputConfig(path=str(folder))], {})]
    assert names == ["00000.tar", "00001.tar", "notes.parquet"]

    result = run_pipeline({"input": str(folder / "*.tar"), "output": str(tmp_path / "out")})
    assert result.stats["documents_in"] == 8 and result.stats["kept"] == 8
    assert balanced(result.stats)
    rows = pq.read_table(tmp_path / "out" / "part-00000.parquet").to_pylist()
    assert [r["status"] for r in rows] == ["success"] * 3 + ["failed_to_download"]
    assert rows[3]["error_message"] == "HTTP 404" and rows[3]["text"] == "lost"
    assert rows[0]["original_width"] == 64 and rows[0]["source"] == "laion"


def test_image_folder_with_sidecars(tmp_path: Path):
    photos = tmp_path / "photos"
    (photos / "cats").mkdir(parents=True)
    (photos / "a.jpg").write_bytes(JPG)
    (photos / "a.txt").write_text("a red square")
    (photos / "cats" / "b.PNG").write_bytes(PNG)
    (photos / "cats" / "b.json").write_text(json.dumps({"caption": "blue", "license": "cc0"}))
    (photos / "c.webp").write_bytes(image("WEBP"))
    (photos / "c.json").write_text("{broken")
    (photos / "readme.txt").write_text("not a sidecar")
    (photos / ".hidden.jpg").write_bytes(JPG)

    records = read(str(photos), "", "image_folder")
    assert [getattr(r, "id", None) or r.doc_id for r in records] == [
        "a.jpg",
        "c.webp",
        "cats/b.PNG",
    ]
    a, c, b = records
    assert (a.text, a.media, a.source, a.metadata) == ("a red square", {"jpg": JPG}, "photos", {})
    assert (b.text, b.media, b.metadata) == ("blue", {"png": PNG}, {"license": "cc0"})
    assert isinstance(c, Quarantined) and "invalid JSON in its .json sidecar" in c.error

    files = scan_inputs([InputConfig(path=str(photos), format="image_folder")], {})
    assert [(f.name, len(f.row_groups)) for f in files] == [("", 3)]
    tasks = plan_tasks(files, task_bytes=1)
    assert [(t.shard.start, t.shard.end) for t in tasks] == [(0, 1), (1, 2), (2, 3)]

    result = run_pipeline(
        {
            "input": {"path": str(photos), "format": "image_folder"},
            "output": str(tmp_path / "out"),
            "task_size_mb": 0.001,
        },
        allow_mostly_quarantined=True,
    )
    stats = result.stats
    assert (stats["documents_in"], stats["kept"], stats["quarantined"]) == (3, 2, 1)
    assert balanced(stats)
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert manifest["inputs"][0]["fingerprint"].startswith("folder:")


def test_image_folder_on_s3(s3_bucket, tmp_path: Path):
    import s3fs

    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    fs.pipe({f"{bucket}/photos/a.jpg": JPG, f"{bucket}/photos/a.txt": b"a red square"})
    result = run_pipeline(
        {
            "input": {"path": f"s3://{bucket}/photos", "format": "image_folder"},
            "output": str(tmp_path / "out"),
            "storage_options": options,
        }
    )
    assert result.stats["kept"] == 1 and balanced(result.stats)
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert manifest["inputs"][0]["fingerprint"].startswith("folder:")
    assert manifest["inputs"][0]["size"] == len(JPG) + len(b"a red square")


def test_parquet_rows_with_image_bytes(tmp_path: Path):
    (tmp_path / "rows").mkdir()
    table = pa.table(
        {
            "jpg": [JPG, PNG, None, b"\x00\x01not an image"],
            "caption": ["red", "blue", None, "odd"],
            "width": [32, 32, None, 1],
        }
    )
    pq.write_table(table, tmp_path / "rows" / "images.parquet")
    docs = read(
        str(tmp_path / "rows" / "images.parquet"),
        "images.parquet",
        "parquet",
        image_key="jpg",
        text_key="caption",
    )
    assert [(d.text, d.media) for d in docs] == [
        ("red", {"jpg": JPG}),
        ("blue", {"png": PNG}),
        ("", None),
        ("odd", {"bin": b"\x00\x01not an image"}),
    ]
    assert docs[0].metadata == {"width": 32}
    result = run_pipeline(
        {
            "input": {"path": str(tmp_path / "rows"), "image_key": "jpg", "text_key": "caption"},
            "output": str(tmp_path / "out"),
        }
    )
    assert result.stats["kept"] == 4 and balanced(result.stats)


def test_jsonl_rows_with_base64_images_and_urls(tmp_path: Path):
    lines = [
        {"img": base64.b64encode(PNG).decode(), "text": "inline", "id": "one"},
        {"img": "%%% not base64 %%%", "text": "broken", "id": "two"},
        {"img": {"bytes": base64.b64encode(JPG).decode()}, "text": "struct", "id": "three"},
    ]
    (tmp_path / "b64").mkdir()
    (tmp_path / "b64" / "a.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    records = read(str(tmp_path / "b64" / "a.jsonl"), "a.jsonl", "jsonl", image_key="img")
    assert records[0].media == {"png": PNG} and records[0].id == "one"
    assert isinstance(records[1], Quarantined) and records[1].doc_id == "two"
    assert records[1].error.startswith("image field 'img' is not valid base64")
    assert records[2].media == {"jpg": JPG}

    urls = [{"image_url": "https://example.com/a.jpg", "caption": "a"}, {"caption": "no url"}]
    (tmp_path / "urls.jsonl").write_text("".join(json.dumps(x) + "\n" for x in urls))
    docs = read(
        str(tmp_path / "urls.jsonl"), "urls.jsonl", "jsonl", url_key="image_url", text_key="caption"
    )
    assert [(d.text, d.metadata, d.media) for d in docs] == [
        ("a", {"url": "https://example.com/a.jpg"}, None),
        ("no url", {}, None),
    ]
    result = run_pipeline(
        {
            "input": {"path": str(tmp_path / "b64"), "image_key": "img"},
            "output": str(tmp_path / "o"),
        },
        allow_mostly_quarantined=True,
    )
    assert (result.stats["kept"], result.stats["quarantined"]) == (2, 1)
    assert balanced(result.stats)


def cut_samples() -> tuple[list[tuple[str, bytes]], dict[str, tuple[str, bytes]]]:
    """Six samples of a shard: caption first in some, image first in others (member order
    varies between writers); and each key's (caption, image)."""
    members, expected = [], {}
    for i in range(6):
        key, jpg = f"{i:03d}", image(color=(40 * i, 90, 200 - 30 * i))
        caption = f"a blue square number {i} with a caption"
        pair = [(f"{key}.jpg", jpg), (f"{key}.txt", caption.encode())]
        members += pair if i % 2 else pair[::-1]
        expected[key] = (caption, jpg)
    return members, expected


def test_a_cut_tar_gz_quarantines_the_cut_sample_by_name_as_a_plain_tar_does(tmp_path: Path):
    import zlib

    members, expected = cut_samples()
    whole = write_tar(tmp_path / "whole.tar", members).read_bytes()
    packed = gzip.compress(whole, mtime=0)
    starts: dict[str, int] = {}  # each key's first header
    for member in members_of(tmp_path / "whole.tar"):
        starts.setdefault(member.name.split(".")[0], member.offset)
    ends = member.offset_data + member.size + (-member.size % 512)  # of the last member
    for cut in range(40, len(packed), 7):
        (tmp_path / "c.tar.gz").write_bytes(packed[:cut])
        records = read(str(tmp_path / "c.tar.gz"), "c.tar.gz")
        # What the cut stream still gives, read as a plain tar cut at that byte.
        present = len(zlib.decompressobj(31).decompress(packed[:cut]))
        (tmp_path / "c.tar").write_bytes(whole[:present])
        plain = read(str(tmp_path / "c.tar"), "c.tar")
        # Samples whose first header came with its name field (100 bytes); before the
        # first, the broken archive is recorded at its byte 0.
        begun = [key for key, start in starts.items() if start + 100 <= present] or ["@0"]
        names = [r.id if isinstance(r, Document) else r.doc_id for r in records]
        assert names == [f"c.tar.gz/{key}" for key in begun], cut
        if present >= ends + 512:  # the end-of-archive block came: every sample is whole
            assert all(isinstance(r, Document) for r in records), cut
            continue
        *whole_ones, last = records
        for doc in whole_ones:  # every sample kept is whole: its caption and its image
            assert isinstance(doc, Document), (cut, doc.error)
            caption, jpg = expected[doc.metadata["key"]]
            assert (doc.text, doc.media) == (caption, {"jpg": jpg}), cut
        assert isinstance(last, Quarantined), cut  # the stream was cut in the last one
        if plain and isinstance(plain[-1], Quarantined):  # the plain tar breaks at that byte
            assert [type(r) for r in plain] == [type(r) for r in records], cut
            assert plain[-1].error in last.error and plain[-1].raw == last.raw, cut
        assert "Compressed file ended before the end-of-stream marker" in last.error, cut

    # Through the pipeline: a cut inside a caption or an image quarantines that sample by
    # name; nothing reaches decode_image without its caption or image.
    txt = next(m for m in members_of(tmp_path / "whole.tar") if m.name == "002.txt")
    jpg = next(m for m in members_of(tmp_path / "whole.tar") if m.name == "003.jpg")
    raw = tmp_path / "raw"
    raw.mkdir()
    for name, at in (("in-caption", txt.offset_data + 5), ("in-image", jpg.offset_data + 100)):
        cut = gzip.compress(whole[:at], mtime=0)[:-12]  # no end of stream nor the last bytes
        (raw / f"{name}.tar.gz").write_bytes(cut)
    result = run_pipeline(
        {
            "input": str(raw / "*.tar.gz"),
            "output": str(tmp_path / "out"),
            "workers": 1,
            "stages": [{"decode_image": {"drop_blank": False}}],  # solid-colour images
        },
        allow_mostly_quarantined=True,
    )
    assert balanced(result.stats) and result.stats["excluded"] == 0
    quarantine = pq.read_table(tmp_path / "out" / "_quarantine")
    assert sorted(quarantine.column("id").to_pylist()) == [
        "in-caption.tar.gz/002",
        "in-image.tar.gz/003",
    ]
    assert all("tar truncated" in e for e in quarantine.column("error").to_pylist())
    assert result.stats["quarantined_by"]["read"] == {"truncated tar": 2}
