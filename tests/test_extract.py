"""The `extract` stage on real-looking pages, and extract -> normalize -> langid -> pii through
the real pipeline on a WARC archive and a folder of HTML files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from mixplane import run_pipeline
from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.stages.build import build_stage
from mixplane.stages.extract import Extract, looks_like_html

NAV = """<header><nav><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li>
<li><a href="/sport">Sport</a></li><li><a href="/contact">Contact</a></li></ul></nav></header>"""
COOKIES = """<div id="cookie-banner" class="cookie-consent">We use cookies to improve your
experience. <button>Accept all cookies</button></div>"""
FOOTER = """<footer><p>Copyright 2024 Example Media Ltd. All rights reserved.</p>
<ul><li><a href="/privacy">Privacy policy</a></li><li><a href="/terms">Terms of use</a></li></ul>
</footer>"""


def page(title: str, body: str, lang: str = "en", head: str = "", direction: str = "ltr") -> str:
    return f"""<!DOCTYPE html>
<html lang="{lang}" dir="{direction}"><head><meta charset="utf-8"><title>{title}</title>{head}
<script>window.dataLayer = [];function track(){{console.log("tracking")}}</script>
<style>body {{ font-family: sans-serif; }}</style></head>
<body>{NAV}{COOKIES}<main><article><h1>{title}</h1>{body}</article></main>{FOOTER}
<script src="/static/app.js"></script></body></html>"""


ARTICLE = page(
    "City library extends its opening hours",
    """<p>The city library will open two hours earlier from next Monday, the council
announced on Tuesday. Readers had asked for morning hours for years.</p>
<p>"We want people to read the newspapers before work," said the head librarian, adding
that the reading room will also get forty new seats and better lighting.</p>
<p>The change costs about 12,000 euros a year and is paid for by a local foundation.
Questions can be sent to the library office, which answers within two working days.</p>
<table><tr><th>Day</th><th>Hours</th></tr><tr><td>Monday</td><td>7:00 to 20:00</td></tr></table>""",
    head='<link rel="canonical" href="https://news.example.com/library-hours">',
)
JAPANESE = page(
    "図書館の開館時間が延長されます",
    """<p>市立図書館は来週の月曜日から、開館時間を二時間早めると市議会が火曜日に発表しました。
利用者からは長年、朝の時間帯に開けてほしいという声が寄せられていました。</p>
<p>館長は「仕事の前に新聞を読んでもらいたい」と話し、閲覧室には新しい席を四十席設けるとともに、
照明も明るくする予定だと説明しました。</p>""",
    lang="ja",
)
ARABIC = page(
    "المكتبة تمدد ساعات العمل",
    """<p>ستفتح مكتبة المدينة أبوابها قبل ساعتين من المعتاد ابتداء من يوم الاثنين المقبل،
كما أعلن المجلس البلدي يوم الثلاثاء. وكان القراء قد طالبوا بذلك منذ سنوات طويلة.</p>
<p>وقالت مديرة المكتبة إنها تريد أن يتمكن الناس من قراءة الصحف قبل الذهاب إلى العمل،
مضيفة أن قاعة المطالعة ستحصل على أربعين مقعدا جديدا وإضاءة أفضل.</p>""",
    lang="ar",
    direction="rtl",
)
CODE_TUTORIAL = page(
    "Reading files in Python",
    """<p>Python opens files with the built-in open function. The with statement closes
the file again, even when an error happens while reading it, so it is the safest way to
work with files in everyday scripts.</p>
<pre><code>with open("notes.txt", encoding="utf-8") as handle:
    for line in handle:
        print(line.rstrip())
</code></pre>
<p>Each line keeps its newline at the end, which is why the example strips it before
printing. For large files this reads one line at a time and uses little memory.</p>""",
)
NAV_ONLY = f"""<!DOCTYPE html><html><head><title>Index</title></head><body>{NAV}{FOOTER}
</body></html>"""


@pytest.fixture(scope="module")
def extract() -> Extract:
    stage = Extract()
    stage.setup()
    return stage


def html_doc(text: str, **metadata) -> Document:
    return Document("d", text, "web", {"content_type": "text/html", **metadata})


def test_main_text_without_boilerplate(extract: Extract):
    doc = extract.apply(html_doc(ARTICLE))
    assert isinstance(doc, Document)
    assert "open two hours earlier" in doc.text
    assert "forty new seats" in doc.text
    assert "Monday" in doc.text  # table text is kept by default
    for boilerplate in ("Accept all cookies", "Privacy policy", "tracking", "Copyright 2024"):
        assert boilerplate not in doc.text
    assert doc.metadata["title"] == "City library extends its opening hours"
    assert doc.metadata["url"] == "https://news.example.com/library-hours"
    assert doc.metadata["content_type"] == "text/plain"


def test_url_from_metadata_wins_over_the_page(extract: Extract):
    doc = extract.apply(html_doc(ARTICLE, url="https://mirror.example.org/a"))
    assert doc.metadata["url"] == "https://mirror.example.org/a"


@pytest.mark.parametrize(
    ("html", "words", "title"),
    [
        (JAPANESE, ["二時間早める", "新聞を読んで"], "図書館の開館時間が延長されます"),
        (ARABIC, ["مكتبة المدينة", "قاعة المطالعة"], "المكتبة تمدد ساعات العمل"),
    ],
)
def test_cjk_and_right_to_left_pages(extract: Extract, html: str, words: list[str], title: str):
    doc = extract.apply(html_doc(html))
    assert all(word in doc.text for word in words)
    assert doc.metadata["title"] == title
    assert "cookies" not in doc.text


def test_code_keeps_its_lines(extract: Extract):
    doc = extract.apply(html_doc(CODE_TUTORIAL))
    assert "for line in handle:" in doc.text
    assert 'with open("notes.txt", encoding="utf-8") as handle:' in doc.text


def test_pages_without_main_text_are_dropped(extract: Extract):
    assert extract.apply(html_doc(NAV_ONLY)) == Drop("no_text")
    assert extract.apply(html_doc("<html><body></body></html>")).reason == "no_text"
    assert extract.apply(html_doc("")).reason == "no_text"


def test_plain_text_passes_untouched(extract: Extract):
    text = "Use <b> for bold text.\nNothing else here."
    for metadata in ({"content_type": "text/plain"}, {}):
        doc = Document("p", text, "web", dict(metadata))
        assert extract.apply(doc) is doc
        assert doc.text == text and doc.metadata == metadata


def test_html_without_metadata_is_recognized(extract: Extract):
    doc = extract.apply(Document("h", ARTICLE, "web"))
    assert "open two hours earlier" in doc.text
    assert doc.metadata["content_type"] == "text/plain"
    fragment = "<div><p>First paragraph of a fragment.</p><p>Second one.</p></div>"
    assert looks_like_html(fragment)
    assert not looks_like_html("if a < b and c > d: print('</p>')")
    off = Extract(detect_html=False)
    assert off.apply(Document("h", ARTICLE, "web")).text == ARTICLE


def test_other_content_types(extract: Extract):
    image = Document("i", "\x89PNG...", "web", {"content_type": "image/png"})
    assert extract.apply(image) == Drop("unsupported_content_type", {"content_type": "image/png"})
    kept = Extract(other_content_types="keep").apply(image)
    assert kept is image
    csv = Document("c", "a,b\n1,2", "web", {"content_type": "text/csv; charset=utf-8"})
    assert extract.apply(csv) is csv


def test_oversized_pages_are_dropped_unparsed():
    stage = Extract(max_html_chars=1000)
    result = stage.apply(html_doc(ARTICLE))
    assert result.reason == "html_too_large" and result.detail["max"] == 1000


def test_options_change_the_output(extract: Extract):
    no_tables = Extract(include_tables=False).apply(html_doc(ARTICLE))
    assert "7:00 to 20:00" not in no_tables.text
    pruned = Extract(prune_xpath=["//p[contains(., 'foundation')]"]).apply(html_doc(ARTICLE))
    assert "foundation" not in pruned.text and "forty new seats" in pruned.text
    markdown = Extract(output_format="markdown", include_formatting=True).apply(
        html_doc(CODE_TUTORIAL)
    )
    assert markdown.metadata["content_type"] == "text/markdown"
    assert "```" in markdown.text or "`" in markdown.text


def test_extraction_is_deterministic(extract: Extract):
    first = [extract.apply(html_doc(html)).text for html in (ARTICLE, JAPANESE, ARABIC)]
    again = [Extract().apply(html_doc(html)).text for html in (ARTICLE, JAPANESE, ARABIC)]
    assert first == again


def test_bad_options_are_named():
    with pytest.raises(ConfigError, match="unknown option 'favour'.*Valid options: engine, favor"):
        build_stage("extract", {"favour": "precision"})
    with pytest.raises(ConfigError, match="favor"):
        build_stage("extract", {"favor": "speed"})


# --- through the real pipeline ---------------------------------------------------------------

CONTACT = page(
    "Contact the library",
    """<p>The library office answers questions about memberships, events and lost items.
You can write to the office at office@citylibrary.example.org or call +44 20 7946 0958
during opening hours. We usually reply within two working days.</p>
<p>Visitors with reduced mobility can use the side entrance next to the car park, and the
staff at the front desk will gladly help with the lifts and the reading room.</p>""",
)
GERMAN = page(
    "Neue Öffnungszeiten der Stadtbibliothek",
    """<p>Die Stadtbibliothek öffnet ab dem kommenden Montag zwei Stunden früher, wie der
Stadtrat am Dienstag mitteilte. Leserinnen und Leser hatten sich das seit Jahren gewünscht.</p>
<p>Der Lesesaal bekommt außerdem vierzig neue Plätze und eine bessere Beleuchtung, sagte
die Leiterin der Bibliothek bei der Vorstellung der Pläne.</p>""",
    lang="de",
)


def write_warc(path: Path, records: list[tuple[str, str, bytes]]) -> None:
    """A gzipped WARC with one response record per (url, content type, payload)."""
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url, content_type, payload in records:
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(payload),
                http_headers=headers,
                warc_headers_dict={"WARC-Date": "2024-05-01T12:00:00Z"},
            )
            writer.write_record(record)


def read_parquet(folder: Path) -> pa.Table:
    tables = [pq.read_table(path) for path in sorted(folder.glob("*.parquet"))]
    return pa.concat_tables(tables, promote_options="permissive")


CLEANING = [
    {"extract": {}},
    {"normalize": {}},
    {"langid": {"keep": ["en", "ja", "ar"]}},
    {"pii": {}},
]


def test_warc_through_extract_normalize_langid_and_pii(tmp_path: Path):
    raw = tmp_path / "crawl"
    raw.mkdir()
    write_warc(
        raw / "crawl-00000.warc.gz",
        [
            (
                "https://news.example.com/library-hours",
                "text/html; charset=utf-8",
                ARTICLE.encode(),
            ),
            ("https://news.example.jp/toshokan", "text/html; charset=utf-8", JAPANESE.encode()),
            ("https://news.example.ae/maktaba", "text/html; charset=utf-8", ARABIC.encode()),
            ("https://citylibrary.example.org/contact", "text/html", CONTACT.encode()),
            ("https://news.example.de/bibliothek", "text/html", GERMAN.encode()),
            ("https://news.example.com/", "text/html", NAV_ONLY.encode()),
            ("https://news.example.com/report.pdf", "application/pdf", b"%PDF-1.4 1 0 obj"),
        ],
    )
    out = tmp_path / "clean"
    result = run_pipeline(
        {
            "input": {"path": str(raw / "*.warc.gz"), "format": "warc"},
            "output": str(out),
            "stages": CLEANING,
        }
    )
    stats = json.loads((out / "_stats.json").read_text())
    assert stats == result.stats
    assert (stats["documents_in"], stats["kept"], stats["excluded"]) == (7, 4, 3)
    assert stats["excluded_by"] == {
        "extract": {"no_text": 1, "unsupported_content_type": 1},
        "langid": {"language_not_kept": 1},
    }
    kept = read_parquet(out).to_pylist()
    by_url = {row["url"]: row for row in kept}
    assert set(by_url) == {
        "https://news.example.com/library-hours",
        "https://news.example.jp/toshokan",
        "https://news.example.ae/maktaba",
        "https://citylibrary.example.org/contact",
    }
    assert {url: row["language"] for url, row in by_url.items()} == {
        "https://news.example.com/library-hours": "en",
        "https://news.example.jp/toshokan": "ja",
        "https://news.example.ae/maktaba": "ar",
        "https://citylibrary.example.org/contact": "en",
    }
    contact = by_url["https://citylibrary.example.org/contact"]
    assert "<EMAIL>" in contact["text"] and "<PHONE>" in contact["text"]
    assert "office@citylibrary" not in contact["text"]
    assert (contact["pii_email"], contact["pii_phone"]) == (1, 1)
    assert contact["title"] == "Contact the library"
    assert all(row["content_type"] == "text/plain" for row in kept)
    assert all(0.5 < row["language_score"] <= 1.0 for row in kept)
    excluded = read_parquet(out / "_excluded").to_pylist()
    reasons = {(row["stage"], row["reason"]) for row in excluded}
    assert reasons == {
        ("extract", "no_text"),
        ("extract", "unsupported_content_type"),
        ("langid", "language_not_kept"),
    }
    german = next(row for row in excluded if row["reason"] == "language_not_kept")
    assert json.loads(german["detail"])["language"] == "de"
    assert "Stadtbibliothek" in german["text"]  # excluded after extraction: its clean text


def test_html_folder_runs_the_same_and_twice_gives_identical_parts(tmp_path: Path):
    raw = tmp_path / "site"
    raw.mkdir()
    for name, html in {
        "article": ARTICLE,
        "contact": CONTACT,
        "de": GERMAN,
        "nav": NAV_ONLY,
    }.items():
        (raw / f"{name}.html").write_text(html, encoding="utf-8")
    outputs = []
    for run in ("one", "two"):
        out = tmp_path / run
        run_pipeline({"input": str(raw / "*.html"), "output": str(out), "stages": CLEANING})
        outputs.append({p.name: p.read_bytes() for p in sorted(out.rglob("part-*.parquet"))})
    assert outputs[0] == outputs[1]
    stats = json.loads((tmp_path / "one" / "_stats.json").read_text())
    assert (stats["kept"], stats["excluded"]) == (2, 2)
    assert stats["excluded_by"] == {"extract": {"no_text": 1}, "langid": {"language_not_kept": 1}}
    rows = read_parquet(tmp_path / "one").to_pylist()
    assert {row["title"] for row in rows} == {
        "City library extends its opening hours",
        "Contact the library",
    }
