"""Each reader on real files: records become documents, bad records are quarantined."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from conftest import make_records, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from mixplane.document import Document
from mixplane.io.readers import Quarantined, ReadOptions, ReadStats, Shard, reader_for
from mixplane.process.config import InputConfig
from mixplane.process.tasks import plan_tasks, scan_inputs


def read_all(url: str, fmt: str, name: str = "f", **options) -> list:
    shard = Shard(url, name, fmt)
    return list(reader_for(fmt)(shard, ReadOptions(**options), ReadStats()))


def test_jsonl_keeps_every_other_field_as_metadata(tmp_path: Path):
    path = write_jsonl(
        tmp_path / "web" / "a.jsonl",
        [{"id": 7, "text": "hi", "lang": "en", "license": "MIT", "tags": ["a", "b"]}],
    )
    (doc,) = read_all(str(path), "jsonl")
    assert doc == Document("7", "hi", "web", {"lang": "en", "license": "MIT", "tags": ["a", "b"]})


def test_jsonl_custom_keys_and_source_field(tmp_path: Path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"uid": "u1", "content": "body", "source": "forum"}])
    (doc,) = read_all(str(path), "jsonl", text_key="content", id_key="uid")
    assert (doc.id, doc.text, doc.source, doc.metadata) == ("u1", "body", "forum", {})


def test_jsonl_without_ids_gets_stable_location_ids(tmp_path: Path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"text": "one"}, {"text": "two"}])
    docs = read_all(str(path), "jsonl", name="wiki/a.jsonl")
    assert [d.id for d in docs] == ["wiki/a.jsonl@0", "wiki/a.jsonl@16"]
    assert [d.id for d in read_all(str(path), "jsonl", name="wiki/a.jsonl")] == [d.id for d in docs]


def test_jsonl_quarantines_bad_lines_with_location(tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"text": "good"}\n'
        b"{broken\n"
        b'{"text": "caf\xe9"}\n'
        b"[1, 2]\n"
        b'{"title": "no text"}\n'
        b'{"text": 42}\n'
        b"\n"
        b'{"text": "last"}\n'
    )
    results = read_all(str(path), "jsonl")
    docs = [r for r in results if isinstance(r, Document)]
    bad = [r for r in results if isinstance(r, Quarantined)]
    assert [d.text for d in docs] == ["good", "last"]
    assert [q.location for q in bad] == [f"{path}:{n}" for n in (2, 3, 4, 5, 6)]
    assert "invalid JSON" in bad[0].error and bad[0].raw == b"{broken\n"
    assert bad[1].error.startswith("invalid UTF-8 at byte 13 of the line")
    assert bad[1].stat_reason() == "invalid UTF-8" and b"\xe9" in bad[1].raw
    assert "expected an object" in bad[2].error
    assert "no text field 'text'" in bad[3].error
    assert "expected a string" in bad[4].error
    # Parsed records keep their id (or the one their document would have had).
    assert [q.doc_id for q in bad] == [None, None, None, "f@49", "f@70"]


def test_quarantined_json_keeps_its_id(tmp_path: Path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"id": "x7", "title": "t"}, {"id": 8, "text": [1]}])
    bad = read_all(str(path), "jsonl")
    assert [(q.doc_id, q.raw) for q in bad] == [
        ("x7", b'{"id": "x7", "title": "t"}\n'),
        ("8", b'{"id": 8, "text": [1]}\n'),
    ]


def test_a_null_text_is_said_to_be_null_not_missing(tmp_path: Path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"id": "n", "text": None}])
    pq.write_table(pa.table({"text": pa.array([None], pa.string())}), tmp_path / "p.parquet")
    (line,) = read_all(str(path), "jsonl")
    (row,) = read_all(str(tmp_path / "p.parquet"), "parquet", name="p.parquet")
    assert line.error == row.error == "text field 'text' is null"
    assert line.stat_reason() == "text field 'text' is null" and line.doc_id == "n"


def test_blank_lines_are_counted(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'\n{"text": "a"}\n  \n\r\n{"text": "b"}\n\n')
    stats = ReadStats()
    docs = list(reader_for("jsonl")(Shard(str(path), "a", "jsonl"), ReadOptions(), stats))
    assert [d.text for d in docs] == ["a", "b"] and stats.blank == 4
    assert stats.bytes == path.stat().st_size


def test_parquet_rows_are_quarantined_as_json(tmp_path: Path):
    table = pa.table(
        {"id": ["p1", "p2"], "body": ["x", "y"], "score": [1.5, None], "blob": [b"\x00a", None]}
    )
    pq.write_table(table, tmp_path / "p.parquet")
    bad = read_all(str(tmp_path / "p.parquet"), "parquet", name="p.parquet")
    assert [q.doc_id for q in bad] == ["p1", "p2"]
    assert json.loads(bad[0].raw) == {"id": "p1", "body": "x", "score": 1.5, "blob": "\x00a"}
    assert json.loads(bad[1].raw) == {"id": "p2", "body": "y", "score": None, "blob": None}
    assert bad[0].error.startswith("record has no text field 'text': its fields are id, body")


def test_truncated_zstd_keeps_the_readable_prefix(tmp_path: Path):
    records = make_records(2000)
    path = write_jsonl(tmp_path / "t.jsonl.zst", records, "zstd")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    results = read_all(str(path), "jsonl")
    docs = [r for r in results if isinstance(r, Document)]
    assert 0 < len(docs) < len(records)
    assert [d.id for d in docs] == [r["id"] for r in records[: len(docs)]]
    assert isinstance(results[-1], Quarantined) and "unreadable stream" in results[-1].error


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_truncated_stream_keeps_the_partial_record(tmp_path: Path, compression: str):
    records = make_records(3000)
    suffix = {"gzip": "gz", "zstd": "zst"}[compression]
    path = write_jsonl(tmp_path / f"t.jsonl.{suffix}", records, compression)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    results = read_all(str(path), "jsonl")
    docs, cut = results[:-1], results[-1]
    assert all(isinstance(d, Document) for d in docs)
    assert [d.id for d in docs] == [r["id"] for r in records[: len(docs)]]
    line = (json.dumps(records[len(docs)]) + "\n").encode()
    # The bytes decoded before the cut: the start of the next record, whose line it names.
    assert 0 < len(cut.raw) < len(line) and line.startswith(cut.raw)
    assert cut.location.startswith(f"{path}:{len(docs) + 1} (byte ")


@settings(max_examples=25, deadline=None)
@given(
    task_bytes=st.integers(1, 3000), sizes=st.lists(st.integers(0, 300), min_size=1, max_size=40)
)
def test_byte_range_tasks_read_every_line_exactly_once(tmp_path_factory, task_bytes, sizes):
    folder = tmp_path_factory.mktemp("ranges")
    records = [{"id": str(i), "text": "x" * n} for i, n in enumerate(sizes)]
    write_jsonl(folder / "data.jsonl", records)
    files = scan_inputs([InputConfig(path=str(folder / "data.jsonl"))], {})
    ids = []
    for task in plan_tasks(files, task_bytes):
        ids += [d.id for d in reader_for("jsonl")(task.shard, ReadOptions(), ReadStats())]
    assert ids == [r["id"] for r in records]


def test_parquet_row_group_ranges(tmp_path: Path):
    table = pa.table({"text": [f"t{i}" for i in range(100)], "score": list(range(100))})
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=10)
    files = scan_inputs([InputConfig(path=str(tmp_path / "p.parquet"))], {})
    tasks = plan_tasks(files, task_bytes=max(files[0].row_groups) * 3)
    assert 3 <= len(tasks) <= 5
    assert [t.shard.start for t in tasks[1:]] == [t.shard.end for t in tasks[:-1]]
    docs = [d for t in tasks for d in reader_for("parquet")(t.shard, ReadOptions(), ReadStats())]
    assert [d.metadata["score"] for d in docs] == list(range(100))
    assert docs[42].id == "p.parquet#42"


def test_text_and_html_files_are_one_document_each(tmp_path: Path):
    (tmp_path / "page.html").write_text("<html><body><p>Hallo</p></body></html>")
    (tmp_path / "note.txt").write_bytes(b"\xef\xbb\xbfplain note")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe broken")
    (tmp_path / "empty.txt").write_bytes(b"")
    (html,) = read_all(str(tmp_path / "page.html"), "html", name="page.html")
    assert html.metadata["content_type"] == "text/html" and "<p>Hallo</p>" in html.text
    (note,) = read_all(str(tmp_path / "note.txt"), "text")
    assert note.text == "plain note"
    (bad,) = read_all(str(tmp_path / "bad.txt"), "text")
    assert isinstance(bad, Quarantined) and bad.raw == b"\xff\xfe broken"
    assert bad.error.startswith("invalid UTF-8 at byte 0") and bad.stat_reason() == "invalid UTF-8"
    assert read_all(str(tmp_path / "empty.txt"), "text") == []


def write_warc(path: Path, pages: list[tuple[str, bytes]]) -> None:
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        info = writer.create_warcinfo_record("x.warc.gz", {"software": "test"})
        writer.write_record(info)
        for url, body in pages:
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=headers
            )
            writer.write_record(record)


def test_warc_responses_become_documents(tmp_path: Path):
    path = tmp_path / "crawl.warc.gz"
    write_warc(
        path,
        [("https://a.example/1", b"<p>one</p>"), ("https://a.example/2", "<p>zwei ü</p>".encode())],
    )
    docs = read_all(str(path), "warc")
    assert [d.metadata["url"] for d in docs] == ["https://a.example/1", "https://a.example/2"]
    assert docs[1].text == "<p>zwei ü</p>"
    assert docs[0].id.startswith("urn:uuid:") and docs[0].metadata["content_type"] == "text/html"


def test_truncated_warc_is_quarantined_after_readable_records(tmp_path: Path):
    path = tmp_path / "cut.warc.gz"
    write_warc(path, [(f"https://a.example/{i}", b"<p>page</p>" * 200) for i in range(5)])
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * 0.7)])
    results = read_all(str(path), "warc")
    assert any(isinstance(r, Document) for r in results)
    assert isinstance(results[-1], Quarantined)


def test_hugging_face_dataset_saved_to_disk(tmp_path: Path):
    import datasets

    train = datasets.Dataset.from_dict({"text": ["a", "b", "c"], "label": [0, 1, 0]})
    test = datasets.Dataset.from_dict({"text": ["d"], "label": [1]})
    datasets.DatasetDict({"train": train, "test": test}).save_to_disk(str(tmp_path / "imdb"))
    files = scan_inputs([InputConfig(path=str(tmp_path / "imdb"))], {})
    assert {f.format for f in files} == {"hf_disk"}
    docs = [
        d
        for t in plan_tasks(files, 1 << 30)
        for s in t.shards
        for d in reader_for(s.format)(s, ReadOptions(), ReadStats())
    ]
    assert sorted(d.text for d in docs) == ["a", "b", "c", "d"]
    assert {d.source for d in docs} == {"imdb"}
    assert {d.metadata["split"] for d in docs} == {"train", "test"}


def test_unknown_suffix_asks_for_a_format(tmp_path: Path):
    import pytest

    from mixplane.errors import InputError

    (tmp_path / "data.bin").write_bytes(b"x")
    with pytest.raises(InputError, match="set 'format'"):
        scan_inputs([InputConfig(path=str(tmp_path / "data.bin"))], {})
    files = scan_inputs([InputConfig(path=str(tmp_path / "data.bin"), format="text")], {})
    assert files[0].format == "text"
    assert json.dumps(files[0].name) == '"data.bin"'


def test_zstd_reader_streams_large_files(tmp_path: Path):
    """A large compressed file is read incrementally (decompressor output is bounded)."""
    records = make_records(5000)
    path = write_jsonl(tmp_path / "big.jsonl.zst", records, "zstd")
    assert zstandard.ZstdDecompressor().decompress(path.read_bytes(), max_output_size=1 << 30)
    count = sum(1 for r in read_all(str(path), "jsonl") if isinstance(r, Document))
    assert count == 5000


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=300).map(lambda b: b.replace(b"\x00", b"\n")),
    limit=st.one_of(st.none(), st.integers(1, 40)),
    chunk=st.integers(1, 17),
    prefix=st.integers(1, 9),
)
def test_split_lines_keeps_lines_under_the_limit_and_sizes_the_others(data, limit, chunk, prefix):
    import mixplane.io.readers.lines as lines

    saved = lines.CHUNK, lines.PREFIX
    lines.CHUNK, lines.PREFIX = chunk, prefix
    try:
        got = list(lines.split_lines(io.BytesIO(data), limit))
    finally:
        lines.CHUNK, lines.PREFIX = saved
    want = data.split(b"\n")
    want = [line + b"\n" for line in want[:-1]] + ([want[-1]] if want[-1] else [])
    assert len(got) == len(want)
    for line, expected in zip(got, want, strict=True):
        if limit is not None and len(expected) > limit:
            assert line == lines.LongLine(len(expected), expected[:prefix])
        else:
            assert bytes(line) == expected


def test_records_over_max_record_bytes_are_quarantined_with_their_first_bytes(tmp_path: Path):
    from mixplane.io.readers.lines import PREFIX

    big = {"id": "big", "text": "x" * (3 * PREFIX)}
    path = write_jsonl(tmp_path / "a.jsonl", [{"text": "one"}, big, {"text": "two"}])
    one, cut, two = read_all(str(path), "jsonl", max_record_bytes=1000)
    line = (json.dumps(big) + "\n").encode()
    assert (one.text, two.text) == ("one", "two")
    assert cut.error.startswith(f"record of {len(line)} bytes exceeds max_record_bytes=1000")
    assert cut.stat_reason() == "record exceeds max_record_bytes"
    assert cut.raw == line[:PREFIX] and cut.location == f"{path}:2"

    (tmp_path / "page.html").write_bytes(b"<p>" + b"y" * 2000 + b"</p>")
    (page,) = read_all(str(tmp_path / "page.html"), "html", max_record_bytes=1000)
    assert page.error.startswith("record of 2007 bytes exceeds max_record_bytes=1000")
    assert page.raw == b"<p>" + b"y" * 2000 + b"</p>"  # shorter than the kept prefix

    pq.write_table(pa.table({"id": ["a", "b"], "text": ["z" * 2000, "ok"]}), tmp_path / "t.parquet")
    row, fine = read_all(str(tmp_path / "t.parquet"), "parquet", max_record_bytes=1000)
    assert row.error.startswith("record of 2000 bytes exceeds") and row.doc_id == "a"
    assert row.raw == b"z" * 2000 and fine.text == "ok"

    warc = tmp_path / "crawl.warc.gz"
    write_warc(
        warc, [("https://a.example/big", b"<p>big</p>" * 300), ("https://a.example/s", b"s")]
    )
    page, small = read_all(str(warc), "warc", max_record_bytes=1000)
    assert page.stat_reason() == "record exceeds max_record_bytes" and page.doc_id
    assert small.text == "s"
