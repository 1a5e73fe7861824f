"""WARC, WET and WAT files through the FastWARC reader and `mixplane process`: charsets,
Common Crawl's conventions, and broken archives (each broken record accounted for with its
offset and reason, every other record kept)."""

from __future__ import annotations

import gzip
import html
import re
import uuid
import zlib
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from readme_blocks import readme_block

from mixplane import run_pipeline
from mixplane.document import Document
from mixplane.errors import ConfigError, InputError
from mixplane.io.pathlists import resolve_entries
from mixplane.io.readers import Quarantined, ReadOptions, ReadStats, Shard, reader_for
from mixplane.io.readers.charsets import decode_page
from mixplane.process.config import InputConfig
from mixplane.process.tasks import plan_tasks, scan_inputs
from mixplane.synth import generate_corpus

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)) * 4


def record(
    body: bytes,
    url: str = "https://site.example/",
    kind: str = "response",
    content_type: str | None = "text/html; charset=utf-8",
    block_type: str | None = None,
    length_delta: int = 0,
) -> bytes:
    """One WARC record's bytes: an HTTP response around `body` for a `response`, the bare
    body for other types. `length_delta` makes its Content-Length lie."""
    if kind == "response":
        head = "HTTP/1.1 200 OK\r\n"
        if content_type is not None:
            head += f"Content-Type: {content_type}\r\n"
        block = f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body
        block_type = block_type or "application/http; msgtype=response"
    else:
        block = body
        block_type = block_type or content_type or "application/octet-stream"
    record_id = uuid.uuid5(uuid.NAMESPACE_URL, url + kind)
    headers = (
        f"WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:{record_id}>\r\n"
        f"WARC-Date: 2024-05-01T12:00:00Z\r\nWARC-Target-URI: {url}\r\n"
        f"Content-Type: {block_type}\r\nContent-Length: {len(block) + length_delta}\r\n\r\n"
    )
    return headers.encode() + block + b"\r\n\r\n"


def gz(*records: bytes) -> bytes:
    """Records gzipped one member each, as crawlers write them."""
    return b"".join(gzip.compress(r, mtime=0) for r in records)


def pages(n: int) -> list[bytes]:
    return [
        record(f"<html><body><p>page {i} text</p></body></html>".encode(), f"https://s.example/{i}")
        for i in range(n)
    ]


def read_file(path: Path, **options) -> list:
    shard = Shard(str(path), path.name, "warc")
    return list(reader_for("warc")(shard, ReadOptions(**options), ReadStats()))


def split(results: list) -> tuple[list[Document], list[Quarantined]]:
    docs = [r for r in results if isinstance(r, Document)]
    return docs, [r for r in results if isinstance(r, Quarantined)]


def offset(item: Quarantined) -> int:
    return int(item.location.rsplit("@", 1)[1])


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
def test_documents_carry_the_crawl_metadata(tmp_path: Path, compress: bool):
    data = b"".join(pages(2))
    path = tmp_path / ("c.warc.gz" if compress else "c.warc")
    path.write_bytes(gz(*pages(2)) if compress else data)
    docs, bad = split(read_file(path))
    assert not bad
    assert [d.text for d in docs] == [
        f"<html><body><p>page {i} text</p></body></html>" for i in (0, 1)
    ]
    first = docs[0]
    assert first.id == f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'https://s.example/0response')}"
    assert first.metadata == {
        "url": "https://s.example/0",
        "warc_date": "2024-05-01T12:00:00Z",
        "warc_record_id": first.id,
        "content_type": "text/html",
        "http_content_type": "text/html; charset=utf-8",
        "charset": "utf-8",
        "warc_truncated": None,
    }


JAPANESE = "<p>図書館の開館時間が延長されます。皆様のご来館をお待ちしております。</p>"
CHINESE = "<p>图书馆的开放时间将会延长，欢迎大家前来阅读和学习。我们提供多种图书和期刊。</p>" * 3
FRENCH = "<p>Les élèves sont arrivés à l'école très tôt ce matin, déçus mais curieux.</p>"


@pytest.mark.parametrize(
    ("body", "content_type", "codec", "text"),
    [
        (FRENCH.encode("cp1252"), "text/html; charset=iso-8859-1", "cp1252", FRENCH),
        (
            b'<html><head><meta charset="shift_jis"></head>' + JAPANESE.encode("shift_jis"),
            "text/html",
            "shift_jis",
            '<html><head><meta charset="shift_jis"></head>' + JAPANESE,
        ),
        (
            b'<meta http-equiv="Content-Type" content="text/html; charset=gb2312">'
            + CHINESE.encode("gb2312"),
            "text/html",
            "gbk",
            '<meta http-equiv="Content-Type" content="text/html; charset=gb2312">' + CHINESE,
        ),
        (CHINESE.encode("gb2312"), "text/html", "gb18030", CHINESE),  # detected: a superset
        # The header is wrong: its charset cannot read the page, the next candidate can.
        (FRENCH.encode("cp1252"), "text/html; charset=utf-8", "cp1252", FRENCH),
        (JAPANESE.encode(), "text/html; charset=x-no-such-charset", "utf-8", JAPANESE),
    ],
    ids=[
        "http-latin1",
        "meta-shift-jis",
        "http-equiv-gb2312",
        "detected-gb2312",
        "wrong-header",
        "unknown-label",
    ],
)
def test_charset_from_header_then_meta_then_detection(
    tmp_path: Path, body: bytes, content_type: str, codec: str, text: str
):
    path = tmp_path / "c.warc.gz"
    path.write_bytes(gz(record(body, content_type=content_type)))
    (doc,) = read_file(path)
    assert (doc.text, doc.metadata["charset"]) == (text, codec)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([None, "utf-8", "shift_jis", "bogus", "utf-16"]))
def test_any_bytes_decode_to_a_page(data: bytes, declared: str | None):
    text, codec, replaced = decode_page(data, declared)
    if not replaced:
        assert text.encode(codec) == data or codec in ("utf-8-sig", "utf-16")


def test_a_page_cut_inside_its_last_character_keeps_its_charset():
    page = JAPANESE.removesuffix("</p>")
    data = page.encode()[:-1]  # the last character's last byte is gone
    assert decode_page(data, None) == (page[:-1] + "\ufffd", "utf-8", True)
    broken = data[:40] + b"\xff" + data[40:]  # a bad byte inside: no codec reads it all
    assert decode_page(broken, None)[1:] == ("utf-8", True)


def test_wet_conversion_records_are_plain_text(tmp_path: Path):
    text = "Plain text extracted by the crawler.\nSecond line: naïve café.".encode()
    wet = record(text, "https://a.example/x", kind="conversion", content_type="text/plain")
    info = record(
        b"software: test\r\n", "", kind="warcinfo", content_type="application/warc-fields"
    )
    raw = tmp_path / "crawl"
    raw.mkdir()
    (raw / "CC-MAIN-1.warc.wet.gz").write_bytes(gz(info, wet))
    result = run_pipeline({"input": str(raw / "*.wet.gz"), "output": str(tmp_path / "o")})
    assert result.stats["documents_in"] == 1
    (row,) = pq.read_table(tmp_path / "o" / "part-00000.parquet").to_pylist()
    assert row["text"] == text.decode()
    assert (row["content_type"], row["http_content_type"], row["charset"]) == (
        "text/plain",
        None,
        "utf-8",
    )


WAT_JSON = b'{"Envelope": {"WARC-Header-Metadata": {"WARC-Type": "response"}}}'


def test_wat_files_are_refused_with_what_to_read_instead(tmp_path: Path):
    wat = gz(
        record(WAT_JSON, "https://a.example/", kind="metadata", content_type="application/json")
    )
    named = tmp_path / "CC-MAIN-1.warc.wat.gz"
    named.write_bytes(wat)
    with pytest.raises(ConfigError, match="is a WAT file.*read the crawl's WET files"):
        run_pipeline({"input": str(named), "output": str(tmp_path / "o")})
    disguised = tmp_path / "other.warc.gz"  # a WAT file under a WARC name
    disguised.write_bytes(wat)
    with pytest.raises(ConfigError, match="other.warc.gz: is a WAT file"):
        run_pipeline({"input": str(disguised), "output": str(tmp_path / "p")})


# Bad input: every record is a document or quarantined with its offset and a reason.


def test_gzip_member_cut_mid_file_loses_only_that_record(tmp_path: Path):
    members = [gzip.compress(r, mtime=0) for r in pages(4)]
    cut = members[1][: len(members[1]) // 2]
    path = tmp_path / "c.warc.gz"
    path.write_bytes(members[0] + cut + members[2] + members[3])
    docs, (bad,) = split(read_file(path))
    assert [d.metadata["url"] for d in docs] == [f"https://s.example/{i}" for i in (0, 2, 3)]
    assert offset(bad) == len(members[0])
    assert bad.error.startswith("unreadable WARC data: Gzip decompression error")
    assert bad.raw == cut  # the skipped bytes, as they are in the file
    assert f"reading again at offset {len(members[0]) + len(cut)}" in bad.error


@pytest.mark.parametrize("delta", [40, -40], ids=["too-long", "too-short"])
@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
def test_wrong_content_length_quarantines_that_record(tmp_path: Path, delta: int, compress: bool):
    records = pages(4)
    records[1] = record(
        b"<p>" + b"lying length " * 20 + b"</p>", "https://s.example/1", length_delta=delta
    )
    path = tmp_path / "c.warc"
    path.write_bytes(gz(*records) if compress else b"".join(records))
    docs, (bad,) = split(read_file(path))
    assert [d.metadata["url"] for d in docs] == [f"https://s.example/{i}" for i in (0, 2, 3)]
    start = len(gz(records[0]) if compress else records[0])
    assert offset(bad) == start
    assert bad.stat_reason() == "broken WARC record"
    assert "Content-Length" in bad.error and bad.doc_id.startswith("urn:uuid:")


def test_binary_payload_labelled_html_is_quarantined(tmp_path: Path):
    path = tmp_path / "c.warc.gz"
    records = pages(2)
    path.write_bytes(gz(records[0], record(PNG, "https://s.example/logo"), records[1]))
    docs, (bad,) = split(read_file(path))
    assert len(docs) == 2
    assert bad.error == "binary payload (NUL bytes) under Content-Type text/html"
    assert bad.raw.startswith(b"\x89PNG")


def test_page_over_the_limit_is_quarantined_as_oversized(tmp_path: Path):
    # 50 MB of page compresses to ~50 KB: cheap to write, and read in full as a crawl would.
    big = b"<html><body>" + b"<p>" + b"x" * (50 << 20) + b"</p></body></html>"
    path = tmp_path / "c.warc.gz"
    path.write_bytes(gz(pages(1)[0], record(big, "https://s.example/huge")))
    size = len(big)
    del big
    docs, (bad,) = split(read_file(path))
    assert len(docs) == 1
    assert bad.stat_reason() == "record exceeds max_record_bytes"
    assert f"record of {size} bytes exceeds max_record_bytes={32 << 20}" in bad.error


def test_file_cut_inside_record_headers(tmp_path: Path):
    records = pages(3)
    plain = b"".join(records)
    cut = len(records[0]) + len(records[1]) + 60  # inside the third record's WARC headers
    (tmp_path / "a.warc").write_bytes(plain[:cut])
    docs, (bad,) = split(read_file(tmp_path / "a.warc"))
    assert (len(docs), offset(bad), bad.error) == (
        2,
        len(records[0]) + len(records[1]),
        "WARC ends inside a record's headers",
    )
    members = gz(*records)
    last = len(gz(*records[:2]))
    (tmp_path / "b.warc.gz").write_bytes(members[: last + 30])
    docs, (bad,) = split(read_file(tmp_path / "b.warc.gz"))
    assert (len(docs), offset(bad)) == (2, last)
    assert bad.error == "WARC ends inside a record (gzip member cut short)"


def test_payload_cut_at_the_end_is_truncated(tmp_path: Path):
    records = pages(2)
    data = b"".join(records)[:-30]
    (tmp_path / "a.warc").write_bytes(data)
    docs, (bad,) = split(read_file(tmp_path / "a.warc"))
    assert len(docs) == 1 and bad.stat_reason() == "truncated WARC record"
    assert bad.doc_id is not None


def test_not_warc_and_empty_files_through_process(tmp_path: Path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.warc.gz").write_bytes(gz(*pages(3)))
    (raw / "b.warc.gz").write_bytes(b"<!doctype html><html>an error page</html>")
    (raw / "c.warc.gz").write_bytes(gzip.compress(b"just some text, gzipped\n" * 50))
    (raw / "d.warc.gz").write_bytes(b"")
    result = run_pipeline({"input": str(raw / "*.warc.gz"), "output": str(tmp_path / "o")})
    stats = result.stats
    assert (stats["documents_in"], stats["kept"], stats["quarantined"]) == (6, 3, 3)
    assert stats["quarantined_by"]["read"] == {
        "not a WARC file": 1,
        "unreadable WARC data": 1,
        "empty file": 1,
    }
    rows = pq.read_table(tmp_path / "o" / "_quarantine").to_pylist()
    errors = {row["location"].rsplit("/", 1)[1]: row["error"] for row in rows}
    assert errors["b.warc.gz@0"].startswith("not a WARC file: it starts with b'<!doctyp'")
    assert errors["c.warc.gz@0"].startswith("unreadable WARC data: Invalid WARC header")
    assert errors["d.warc.gz@0"] == "empty file: it holds no WARC record"


def test_many_faults_in_one_file_keep_every_good_record(tmp_path: Path):
    good = pages(6)
    cut_member = gzip.compress(good[5], mtime=0)[:-20]
    parts = [
        gzip.compress(good[0], mtime=0),
        b"garbage between members",
        gzip.compress(good[1], mtime=0),
        gzip.compress(record(PNG, "https://s.example/png"), mtime=0),
        gzip.compress(
            record(b"<p>short</p>" * 9, "https://s.example/cl", length_delta=-5), mtime=0
        ),
        gzip.compress(good[2], mtime=0),
        zlib.compress(b"a zlib stream, not gzip"),
        gzip.compress(good[3], mtime=0),
        gzip.compress(good[4], mtime=0),
        cut_member,
    ]
    path = tmp_path / "c.warc.gz"
    path.write_bytes(b"".join(parts))
    docs, bad = split(read_file(path))
    assert [d.metadata["url"] for d in docs] == [f"https://s.example/{i}" for i in range(5)]
    starts = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    assert [(offset(b), b.stat_reason()) for b in bad] == [
        (starts[1], "unreadable WARC data"),
        (starts[3], "binary payload"),
        (starts[4], "broken WARC record"),
        (starts[6], "unreadable WARC data"),
        (starts[9], "truncated WARC record"),
    ]


# Common Crawl's paths lists.


def test_relative_entries_need_a_base():
    assert resolve_entries(["a/b.warc.gz", "# note", "./c.warc.gz"], "s3://cc/", "l") == [
        "s3://cc/a/b.warc.gz",
        "s3://cc/c.warc.gz",
    ]
    with pytest.raises(InputError, match="l line 2: 'a/b.warc.gz' is a relative path; set 'base'"):
        resolve_entries(["/abs/x.warc.gz", "a/b.warc.gz"], None, "l")


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
def test_a_paths_list_makes_one_task_per_listed_file(tmp_path: Path, compress: bool):
    crawl = tmp_path / "crawl-data" / "seg" / "warc"
    crawl.mkdir(parents=True)
    names = [f"crawl-data/seg/warc/part-{i}.warc.gz" for i in range(3)]
    for i, name in enumerate(names):
        (tmp_path / name).write_bytes(gz(*pages(2 + i)))
    listing = "\n".join(names).encode() + b"\n"
    paths = tmp_path / ("warc.paths.gz" if compress else "warc.paths")
    paths.write_bytes(gzip.compress(listing) if compress else listing)
    spec = InputConfig(paths=str(paths), base=f"{tmp_path}/")
    files = scan_inputs([spec], {})
    assert [f.name for f in files] == names
    tasks = plan_tasks(files, 256 << 20)
    assert [[s.name for s in t.shards] for t in tasks] == [[n] for n in names]
    result = run_pipeline(
        {"input": {"paths": str(paths), "base": f"{tmp_path}/"}, "output": str(tmp_path / "o")}
    )
    assert (result.stats["tasks"], result.stats["kept"]) == (3, 9)


# The synthetic corpus's realistic web profile.


@pytest.fixture(scope="module")
def profiles(tmp_path_factory) -> dict[str, Path]:
    """The same small corpus written compact and realistic."""
    root = tmp_path_factory.mktemp("profiles")
    for profile in ("compact", "realistic"):
        generate_corpus(str(root / profile), 500, 5, web_profile=profile)
    return {profile: root / profile for profile in ("compact", "realistic")}


def web_documents(corpus: Path) -> dict[str, Document]:
    docs = {}
    for path in sorted((corpus / "raw/web").glob("*.warc.gz")):
        found, bad = split(read_file(path))
        assert not bad
        docs |= {d.id: d for d in found}
    return docs


def test_realistic_pages_are_crawl_sized_in_many_charsets_with_the_same_truth(profiles):
    compact, realistic = profiles["compact"], profiles["realistic"]
    for truth in ("truth/documents.parquet", "truth/duplicates.jsonl", "truth/pii.jsonl"):
        assert (compact / truth).read_bytes() == (realistic / truth).read_bytes()
    small, dressed = web_documents(compact), web_documents(realistic)
    assert set(small) == set(dressed)
    cut = {i for i, d in dressed.items() if d.metadata["warc_truncated"] == "length"}
    assert 0 < len(cut) < len(dressed) / 10
    for doc_id, doc in dressed.items():
        page = html.unescape(doc.text)  # legacy charsets spell other characters as references
        article = re.search(r"<article>.*</article>", small[doc_id].text, flags=re.S)
        assert doc_id in cut or article is None or html.unescape(article.group()) in page
        if doc_id not in cut:
            assert 20_000 <= len(doc.text.encode(doc.metadata["charset"])) <= 200_000
    charsets = Counter(d.metadata["charset"] for d in dressed.values())
    assert {"utf-8", "cp1252", "shift_jis"} <= set(charsets) and {"gbk", "gb18030"} & set(charsets)
    declared = Counter(d.metadata["http_content_type"] for d in dressed.values())
    assert declared["text/html"] > 0 and declared["text/html; charset=windows-1252"] > 0


def test_an_unknown_web_profile_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="web profile must be one of compact, realistic"):
        generate_corpus(str(tmp_path), 10, 1, web_profile="huge")


def test_readme_common_crawl_config_runs_on_a_crawl_mirror(profiles, s3_bucket, tmp_path: Path):
    """The README's Common Crawl input as written, its list and base pointed at a copy of
    the crawl's layout on the loopback S3 server instead of data.commoncrawl.org."""
    import s3fs

    bucket, storage = s3_bucket
    config = yaml.safe_load(readme_block("yaml", "warc.paths.gz"))
    (spec,) = config["input"]
    assert spec["base"] == "https://data.commoncrawl.org/"
    listed = spec["paths"].removeprefix(spec["base"])
    folder = listed.rsplit("/", 1)[0]
    names = [f"{folder}/segments/1/warc/CC-MAIN-{i:05d}.warc.gz" for i in range(2)]
    s3 = s3fs.S3FileSystem(**storage)
    files = sorted((profiles["compact"] / "raw/web").glob("*.warc.gz"))[:2]
    for name, local in zip(names, files, strict=True):
        s3.put(str(local), f"{bucket}/{name}")
    s3.pipe(f"{bucket}/{listed}", gzip.compress("\n".join(names).encode() + b"\n"))
    spec |= {"paths": f"s3://{bucket}/{listed}", "base": f"s3://{bucket}/"}
    config |= {"output": str(tmp_path / config["output"]), "storage_options": storage}
    result = run_pipeline(config)
    assert result.stats["tasks"] == 2 and result.stats["quarantined"] == 0
    assert result.stats["kept"] > 0 and result.stats["excluded_by"]["langid"]
    rows = pq.read_table(tmp_path / "cc-clean", columns=["url", "source", "language"]).to_pylist()
    assert {row["source"] for row in rows} == {"cc"} and {r["language"] for r in rows} == {"en"}
    assert all(row["url"].startswith("https://") for row in rows)


def test_a_listed_file_that_does_not_exist_fails_with_its_name(tmp_path: Path):
    (tmp_path / "a.warc.gz").write_bytes(gz(*pages(2)))
    (tmp_path / "warc.paths").write_text("a.warc.gz\nmissing.warc.gz\n")
    config = {"input": {"paths": str(tmp_path / "warc.paths"), "base": str(tmp_path)}}
    with pytest.raises(InputError, match=r"missing.warc.gz: no such file \(named by a paths list"):
        run_pipeline(config | {"output": str(tmp_path / "o")})


def test_synth_cli_writes_the_realistic_profile(cli, tmp_path: Path):
    code, _, err = cli("synth", str(tmp_path / "c"), "--docs", "40", "--web-profile", "realistic")
    assert code == 0, err
    docs = [d for p in (tmp_path / "c/raw/web").glob("*.warc.gz") for d in read_file(p)]
    assert docs and all(isinstance(d, Document) for d in docs)
    assert max(len(d.text) for d in docs) >= 20_000
    code, _, err = cli("synth", str(tmp_path / "d"), "--docs", "5", "--web-profile", "huge")
    assert code == 2 and "web profile must be one of compact, realistic, got 'huge'" in err
