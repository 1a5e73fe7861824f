"""The `license` and `opt_out` stages: SPDX names, every source and signal on real-shaped
pages and WARC records, precedence, modes, the synthetic truth and the README pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from readme_blocks import readme_block

from mixplane import Pipeline
from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.io.readers import ReadOptions, ReadStats, Shard, reader_for
from mixplane.process.config import InputConfig
from mixplane.stages.build import build_stage
from mixplane.stages.governance.license import License
from mixplane.stages.governance.optout import OptOut
from mixplane.stages.governance.page import json_ld_licenses, read_page
from mixplane.stages.governance.spdx import CC_KINDS, spdx_id
from mixplane.synth import generate_corpus
from mixplane.synth.sinks import WarcSink

ARTICLE = (
    "<article><p>" + "A paragraph of plain words about rivers and towns. " * 6 + "</p></article>"
)


def page(head: str = "", body: str = "", footer: str = "") -> str:
    """A page shaped as sites write them: head, navigation, article, footer."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>T</title>'
        f"{head}</head><body><nav><a href='/'>Home</a></nav>{ARTICLE}{body}"
        f"<footer><p>© 2024 Site</p>{footer}</footer></body></html>"
    )


def html_doc(html: str, **metadata) -> Document:
    return Document("d", html, "web", {"content_type": "text/html", **metadata})


# --- SPDX names ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "spdx"),
    [
        ("https://creativecommons.org/licenses/by-sa/4.0/deed.de", "CC-BY-SA-4.0"),
        ("creativecommons.org/licenses/by-nc-nd/3.0/legalcode", "CC-BY-NC-ND-3.0"),
        ("http://creativecommons.org/licenses/by-nd-nc/1.0/", "CC-BY-NC-ND-1.0"),
        ("https://creativecommons.org/licenses/by/3.0/us/", "CC-BY-3.0-US"),
        ("https://creativecommons.org/licenses/by/3.0/es/", "CC-BY-3.0"),  # not an SPDX port
        ("https://creativecommons.org/licenses/by/2.1/es/", None),  # 2.1 exists only ported
        ("https://creativecommons.org/publicdomain/zero/1.0/", "CC0-1.0"),
        ("https://creativecommons.org/publicdomain/mark/1.0/", "PDM"),
        ("https://creativecommons.org/about/", None),
        ("CC BY-SA 4.0", "CC-BY-SA-4.0"),
        ("cc-by-nc-sa-4.0", "CC-BY-NC-SA-4.0"),
        ("Creative Commons Attribution-NoDerivatives 4.0 International", "CC-BY-ND-4.0"),
        ("Attribution-NonCommercial 3.0 Unported (CC BY-NC 3.0)", "CC-BY-NC-3.0"),
        ("CC BY", None),  # no version: the versions' terms differ
        ("CC0 1.0 Universal", "CC0-1.0"),
        ("Public Domain", "PDM"),
        ("GPLv3", "GPL-3.0-only"),
        ("GPL-2.0+", "GPL-2.0-or-later"),
        ("GNU Lesser General Public License v2.1 or later", "LGPL-2.1-or-later"),
        ("AGPL-3.0", "AGPL-3.0-only"),
        ("https://www.gnu.org/licenses/agpl-3.0.en.html", "AGPL-3.0-only"),
        ("https://www.gnu.org/licenses/fdl-1.3.html", "GFDL-1.3-only"),
        ("GFDL 1.3", "GFDL-1.3-only"),
        ("GPL 4.0", None),
        ("The MIT License (MIT)", "MIT"),
        ("https://opensource.org/licenses/MIT", "MIT"),
        ("Apache License, Version 2.0", "Apache-2.0"),
        ("https://www.apache.org/licenses/LICENSE-2.0", "Apache-2.0"),
        ("BSD 3-Clause", "BSD-3-Clause"),
        ("Simplified BSD License", "BSD-2-Clause"),
        ("Mozilla Public License 2.0", "MPL-2.0"),
        ("https://www.mozilla.org/en-US/MPL/2.0/", "MPL-2.0"),
        ("https://opendatacommons.org/licenses/odbl/1-0/", "ODbL-1.0"),
        ("Open Data Commons Open Database License (ODbL)", "ODbL-1.0"),
        ("https://spdx.org/licenses/BSD-2-Clause.html", "BSD-2-Clause"),
        ("All rights reserved", None),
        ("Lizenz mit Namensnennung", None),  # German "mit" is not MIT
        ("", None),
        (None, None),
    ],
)
def test_spdx_names_and_urls(written, spdx):
    assert spdx_id(written) == spdx


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(CC_KINDS),
    version=st.sampled_from(["1.0", "2.0", "2.5", "3.0", "4.0"]),
    scheme=st.sampled_from(["https://", "http://", "//", ""]),
    www=st.booleans(),
    tail=st.sampled_from(["", "/", "/deed.en", "/deed.zh-hans", "/legalcode", "/legalcode.fr"]),
    upper=st.booleans(),
)
def test_every_creative_commons_url_form(kind, version, scheme, www, tail, upper):
    url = f"{scheme}{'www.' if www else ''}creativecommons.org/licenses/{kind.lower()}/{version}"
    url += tail
    assert spdx_id(url.upper() if upper else url) == f"CC-{kind}-{version}"
    # and the short name, however it is spaced
    assert spdx_id(f"CC {kind.replace('-', ' ')} {version}") == f"CC-{kind}-{version}"


# --- the page --------------------------------------------------------------------------


def test_page_signals_in_page_order():
    html = page(
        head='<link rel="License" href="https://creativecommons.org/licenses/by/4.0/">'
        '<meta name="DC.Rights" content="CC0">'
        '<script type="application/ld+json">{"@graph": [{"@type": "WebPage"}, '
        '{"@type": "Article", "license": {"@id": "https://opensource.org/licenses/MIT"}}]}'
        "</script><script>var license = 'no';</script>",
        footer='<span itemprop="license" content="GPL-3.0"></span>'
        '<a href="https://creativecommons.org/licenses/by-sa/2.0/"><img alt=""></a>',
    )
    signals = read_page(html)
    assert signals.rel_license == ["https://creativecommons.org/licenses/by/4.0/"]
    assert signals.meta["dc.rights"] == ["CC0"]
    assert signals.schema_org == ["https://opensource.org/licenses/MIT", "GPL-3.0"]
    assert signals.cc_links == [
        "https://creativecommons.org/licenses/by/4.0/",
        "https://creativecommons.org/licenses/by-sa/2.0/",
    ]
    assert json_ld_licenses("{not json") == []


# --- license ---------------------------------------------------------------------------

CC_BY = "https://creativecommons.org/licenses/by/4.0/"


@pytest.mark.parametrize(
    ("html", "source", "spdx"),
    [
        (page(head=f'<link rel="license" href="{CC_BY}">'), "rel_license", "CC-BY-4.0"),
        (
            page(footer=f'<a rel="noopener license" href="{CC_BY}">CC</a>'),
            "rel_license",
            "CC-BY-4.0",
        ),
        (page(head='<meta name="license" content="CC BY-SA 3.0">'), "meta", "CC-BY-SA-3.0"),
        (page(head='<meta property="dcterms:license" content="x">'), None, "unknown"),
        (page(head='<meta name="dcterms.license" content="ODbL">'), "meta", "ODbL-1.0"),
        (
            page(head='<script type="application/ld+json">{"license": "CC0"}</script>'),
            "schema_org",
            "CC0-1.0",
        ),
        (
            page(footer=f'<div itemscope><link itemprop="license" href="{CC_BY}"></div>'),
            "schema_org",
            "CC-BY-4.0",
        ),
        (page(footer=f'<a href="{CC_BY}"><img src="/by.png"></a>'), "cc_link", "CC-BY-4.0"),
        (page(head='<meta name="dc.rights" content="© All rights reserved">'), "meta", "unknown"),
        (page(), None, "unknown"),
    ],
)
def test_license_from_each_part_of_a_page(html, source, spdx):
    doc = License().apply(html_doc(html))
    assert (doc.metadata["license"], doc.metadata["license_source"]) == (spdx, source)


def test_license_precedence_and_raw_value():
    html = page(
        head='<meta name="license" content="MIT">',
        footer=f'<a rel="license" href="{CC_BY}">CC</a>',
    )
    both = html_doc(html, license="Apache License 2.0", declared_license="CC-BY-SA-4.0")
    doc = License().apply(both)
    assert doc.metadata["license"] == "CC-BY-SA-4.0" and doc.metadata["license_source"] == "input"
    doc = License().apply(html_doc(html, license="Apache License 2.0"))
    assert doc.metadata["license"] == "Apache-2.0" and doc.metadata["license_raw"] == (
        "Apache License 2.0"
    )
    assert License().apply(html_doc(html)).metadata["license"] == "CC-BY-4.0"
    reordered = License(precedence=["meta", "rel_license"])
    doc = reordered.apply(html_doc(html, license="Apache License 2.0"))
    assert (doc.metadata["license"], doc.metadata["license_source"]) == ("MIT", "meta")
    # A statement that names no known licence gives way to one that does.
    doc = License().apply(html_doc(html, license="proprietary"))
    assert (
        doc.metadata["license"] == "CC-BY-4.0" and doc.metadata["license_source"] == "rel_license"
    )
    doc = License(precedence=["record", "input"]).apply(Document("p", "x", "s", {"license": "own"}))
    assert (doc.metadata["license"], doc.metadata["license_source"]) == ("unknown", "record")
    assert doc.metadata["license_raw"] == "own"
    # A Hugging Face card lists licences.
    plain = Document("p", "text", "hf", {"license": ["other", "cc-by-4.0"]})
    assert License().apply(plain).metadata["license"] == "CC-BY-4.0"


def test_license_from_a_saved_hugging_face_dataset_card(tmp_path: Path):
    import datasets

    info = datasets.DatasetInfo(license="cc-by-sa-3.0")
    data = {"text": ["first article", "second article"], "id": ["a", "b"]}
    data["license"] = ["", "MIT"]  # a row's own field wins over the card
    datasets.Dataset.from_dict(data, info=info).save_to_disk(str(tmp_path / "wiki"))
    datasets.Dataset.from_dict({"text": ["x"]}).save_to_disk(str(tmp_path / "plain"))
    found = {}
    for name in ("wiki", "plain"):
        for path in sorted((tmp_path / name).glob("*.arrow")):
            shard = Shard(str(path), path.name, "hf_disk")
            for doc in reader_for("hf_disk")(shard, ReadOptions(), ReadStats()):
                found[f"{name}/{doc.id}"] = License().apply(doc).metadata
    assert found["wiki/a"]["dataset_license"] == "cc-by-sa-3.0"
    assert (found["wiki/a"]["license"], found["wiki/a"]["license_source"]) == (
        "CC-BY-SA-3.0",
        "dataset_card",
    )
    assert (found["wiki/b"]["license"], found["wiki/b"]["license_source"]) == ("MIT", "record")
    (plain,) = (meta for key, meta in found.items() if key.startswith("plain/"))
    assert "dataset_license" not in plain and plain["license"] == "unknown"


def test_license_after_extract_reads_fields_only():
    stages = [build_stage("extract", {"engine": "resiliparse"}), License()]
    doc = html_doc(page(footer=f'<a rel="license" href="{CC_BY}">CC</a>'), license="GPLv3")
    for stage in stages:
        doc = stage.apply(doc)
    assert doc.metadata["content_type"] == "text/plain"
    assert (doc.metadata["license"], doc.metadata["license_source"]) == ("GPL-3.0-only", "record")
    bare = html_doc(page(footer=f'<a rel="license" href="{CC_BY}">CC</a>'))
    for stage in stages:
        bare = stage.apply(bare)
    assert bare.metadata["license"] == "unknown"  # the link went with the HTML


def test_license_options_are_checked():
    with pytest.raises(ConfigError, match="sources named twice: meta"):
        build_stage("license", {"precedence": ["meta", "input", "meta"]})
    with pytest.raises(ConfigError, match="precedence"):
        build_stage("license", {"precedence": ["html"]})


# --- opt_out ---------------------------------------------------------------------------

TDM, NOIMAGE = "tdm-reservation: 1", "noimageai"


@pytest.mark.parametrize(
    ("doc", "signal"),
    [
        (html_doc(page(head='<meta name="robots" content="index, NoAI">')), "meta_robots: noai"),
        (html_doc(page(head='<meta name="CCBot" content="noimageai">')), "meta_robots: noimageai"),
        (html_doc(page(head='<meta name="robots" content="noindex, nofollow">')), None),
        (html_doc(page(head='<meta name="description" content="noai">')), None),
        (html_doc(page(head='<meta name="tdm-reservation" content="1">')), f"tdm_meta: {TDM}"),
        (html_doc(page(head='<meta name="tdm-reservation" content="0">')), None),
        (html_doc(page(), http_x_robots_tag="otherbot: noai"), "x_robots_tag: noai"),
        (
            html_doc(page(), http_x_robots_tag=f"unavailable_after: 2030, {NOIMAGE}"),
            f"x_robots_tag: {NOIMAGE}",
        ),
        (html_doc(page(), http_x_robots_tag="noindex"), None),
        (html_doc(page(), http_tdm_reservation="1"), f"tdm_header: {TDM}"),
        (html_doc(page(), http_tdm_reservation="0"), None),
        (Document("t", "noai in plain text", "web", {"content_type": "text/plain"}), None),
    ],
)  # fmt: skip
def test_opt_out_signals(doc, signal):
    marked = OptOut().apply(doc)
    assert marked.metadata["opt_out_signal"] == signal
    assert marked.metadata["opt_out"] is (signal is not None)


def test_noindex_counts_only_when_configured():
    doc = html_doc(page(head='<meta name="robots" content="noindex">'))
    assert OptOut(mode="drop").apply(doc) is doc
    found = OptOut(mode="drop", robots_values=["noai", "NoIndex"]).apply(doc)
    assert found == Drop("opt_out", {"signal": "meta_robots", "value": "noindex"})


def test_drop_mode_names_signal_and_policy():
    doc = html_doc(page(), http_tdm_reservation="1", http_tdm_policy="https://p.example/tdm")
    assert OptOut(mode="drop").apply(doc) == Drop(
        "opt_out",
        {"signal": "tdm_header", "value": "tdm-reservation: 1", "policy": "https://p.example/tdm"},
    )
    meta = '<meta name="tdm-reservation" content="1"><meta name="tdm-policy" content="/p.json">'
    assert OptOut(mode="drop").apply(html_doc(page(head=meta))).detail["policy"] == "/p.json"


def test_lists_and_tdmrep_file(tmp_path: Path):
    (tmp_path / "domains.txt").write_text("# opted out\noptout.example\n")
    (tmp_path / "prefixes.txt").write_text("https://www.site.example/private/\n")
    (tmp_path / "tdmrep.json").write_text(
        json.dumps(
            [
                {"location": "/open/*", "tdm-reservation": 0},
                {"location": "/*.pdf$", "tdm-reservation": 1},
                {"location": "/news/", "tdm-reservation": 1, "tdm-policy": "https://n.example/p"},
            ]
        )
    )
    stage = OptOut(
        mode="drop",
        domains_files=[str(tmp_path / "domains.txt")],
        url_prefixes_files=[str(tmp_path / "prefixes.txt")],
        tdmrep_files={"News.Example": str(tmp_path / "tdmrep.json")},
    )

    def judged(url: str):
        result = stage.apply(Document("u", "plain text", "web", {"url": url}))
        return None if isinstance(result, Document) else result.detail

    assert judged("https://blog.OptOut.example:8080/a") == {
        "signal": "domain_list",
        "value": "optout.example",
    }
    assert judged("http://site.example/private/x?y=1")["signal"] == "url_list"
    assert judged("https://site.example/public/x") is None
    assert judged("https://news.example/news/2024/a") == {
        "signal": "tdmrep_file",
        "value": "/news/",
        "policy": "https://n.example/p",
    }
    assert judged("https://www.news.example/files/a.pdf")["value"] == "/*.pdf$"
    assert judged("https://news.example/files/a.pdf?download=1") is None  # `$` anchors
    assert judged("https://news.example/open/news/a.pdf") is None  # first rule: not reserved
    assert judged("https://other.example/news/a") is None


def test_bad_opt_out_files_are_named(tmp_path: Path):
    with pytest.raises(ConfigError, match="missing.txt"):
        build_stage("opt_out", {"domains_files": [str(tmp_path / "missing.txt")]})
    bad = tmp_path / "tdmrep.json"
    bad.write_text(json.dumps([{"location": "/", "tdm-reservation": "yes"}]))
    stage = build_stage("opt_out", {"tdmrep_files": {"a.example": str(bad)}})
    with pytest.raises(ConfigError, match=r"tdmrep.json: rule 0 \('/'\): 'tdm-reservation'"):
        stage.setup()


# --- WARC headers and synthetic truth ----------------------------------------------------


def test_warc_reader_keeps_opt_out_headers(tmp_path: Path):
    path = tmp_path / "a.warc.gz"
    sink = WarcSink(
        str(path), "urn:uuid:00000000-0000-4000-8000-000000000000", "2024-01-01T00:00:00Z"
    )
    sink.write("urn:uuid:1", "https://a.example/", "2024-01-02T00:00:00Z", page(),
               [("X-Robots-Tag", "noai"), ("x-robots-tag", "googlebot: noindex"),
                ("tdm-reservation", "1"), ("TDM-Policy", "https://a.example/p")])  # fmt: skip
    sink.write("urn:uuid:2", "https://b.example/", "2024-01-02T00:00:00Z", page())
    sink.close()
    docs = list(reader_for("warc")(Shard(str(path), "a", "warc"), ReadOptions(), ReadStats()))
    assert docs[0].metadata["http_x_robots_tag"] == "noai, googlebot: noindex"
    assert docs[0].metadata["http_tdm_reservation"] == "1"
    assert docs[0].metadata["http_tdm_policy"] == "https://a.example/p"
    assert not any(key.startswith(("http_x", "http_tdm")) for key in docs[1].metadata)
    assert OptOut().apply(docs[0]).metadata["opt_out_signal"] == "x_robots_tag: noai"


def test_synth_governance_truth_matches_the_stages(tmp_path: Path, cli):
    plain, governed = tmp_path / "plain", tmp_path / "governed"
    generate_corpus(str(plain), 400, 5)
    code, _, err = cli("synth", str(governed), "-n", "400", "--seed", "5", "--governance")
    assert code == 0, err
    assert cli("synth", str(tmp_path / "i"), "--images", "--governance")[0] != 0
    for name in ("documents.parquet", "duplicates.jsonl", "pii.jsonl", "summary.json"):
        assert (plain / "truth" / name).read_bytes() == (governed / "truth" / name).read_bytes()
    assert not (plain / "truth" / "governance.parquet").exists()
    truth = {
        r["id"]: r for r in pq.read_table(governed / "truth" / "governance.parquet").to_pylist()
    }
    stages = [License(), OptOut()]
    seen = 0
    for source, kind in (("web", "warc"), ("web_html", "html")):
        for path in sorted((governed / "raw" / source).iterdir()):
            shard = Shard(str(path), f"{source}/{path.name}", kind)
            for doc in reader_for(kind)(shard, ReadOptions(), ReadStats()):
                expected = truth[doc.id if source == "web" else f"web_html/{path.name}"]
                for stage in stages:
                    doc = stage.apply(doc)
                assert doc.metadata["license"] == (expected["license"] or "unknown"), doc.id
                assert doc.metadata["opt_out"] is expected["opt_out"], doc.id
                seen += 1
    assert seen == len(truth) > 150
    forms = {row["license_form"] for row in truth.values()} | {
        row["opt_out_form"] for row in truth.values()
    }
    assert {"rel_link", "json_ld", "cc_badge", "x_robots_tag", "tdm_meta"} <= forms


# --- the README pipeline ----------------------------------------------------------------


def test_input_license_leaves_old_configs_hash_alone():
    assert "license" not in InputConfig(path="a/*.jsonl").model_dump()
    assert InputConfig(path="a/*.jsonl", license="MIT").model_dump()["license"] == "MIT"


LICENSED = f'<a rel="license" href="{CC_BY}">CC BY</a>'
NOAI = '<meta name="robots" content="noai">'


def readme_corpus(root: Path) -> None:
    (root / "crawl").mkdir()
    sink = WarcSink(str(root / "crawl" / "a.warc.gz"), "urn:uuid:0", "2024-01-01T00:00:00Z")
    pages = [
        ("urn:uuid:1", "https://blog.example/a", page(footer=LICENSED), []),
        ("urn:uuid:2", "https://blog.example/b", page(head=NOAI), []),
        ("urn:uuid:3", "https://shop.optout.example/c", page(), []),
        ("urn:uuid:4", "https://news.example/2024/d", page(), []),
        ("urn:uuid:5", "https://news.example/about", page(), []),
        ("urn:uuid:6", "https://blog.example/e", page(), [("X-Robots-Tag", "noai")]),
    ]  # fmt: skip
    for record_id, url, html, headers in pages:
        sink.write(record_id, url, "2024-01-02T00:00:00Z", html, headers)
    sink.close()
    (root / "raw" / "wiki").mkdir(parents=True)
    (root / "raw" / "wiki" / "w.jsonl").write_text(
        json.dumps({"id": "w1", "text": "An encyclopedia article. " * 10}) + "\n"
    )
    (root / "lists").mkdir()
    (root / "lists" / "opted-out-domains.txt").write_text("optout.example\n")
    (root / "lists" / "news.example-tdmrep.json").write_text(
        json.dumps([{"location": "/2024/*", "tdm-reservation": 1}])
    )


def run_readme(root: Path, workers: int, monkeypatch) -> Path:
    (root / "pipeline.yaml").write_text(readme_block("yaml", "opt_out:"))
    monkeypatch.chdir(root)
    pipeline = Pipeline.from_yaml(root / "pipeline.yaml")
    pipeline.config.workers = workers
    pipeline.run()
    return root / "governed"


def test_readme_pipeline_as_a_user_writes_it(tmp_path: Path, monkeypatch):
    readme_corpus(tmp_path)
    out = run_readme(tmp_path, 1, monkeypatch)
    kept = {row["id"]: row for row in pq.read_table(out).to_pylist()}
    assert kept["w1"]["license"] == "CC-BY-SA-4.0" and kept["w1"]["license_source"] == "input"
    assert kept["urn:uuid:1"]["license"] == "CC-BY-4.0"
    assert kept["urn:uuid:5"]["license"] == "unknown"
    assert set(kept) == {"w1", "urn:uuid:1", "urn:uuid:5"}
    excluded = pq.read_table(out / "_excluded").to_pylist()
    signals = {row["id"]: json.loads(row["detail"])["signal"] for row in excluded}
    assert {row["reason"] for row in excluded} == {"opt_out"}
    assert signals == {
        "urn:uuid:2": "meta_robots",
        "urn:uuid:3": "domain_list",
        "urn:uuid:4": "tdmrep_file",
        "urn:uuid:6": "x_robots_tag",
    }


def test_readme_pipeline_same_bytes_with_more_workers(tmp_path: Path, monkeypatch):
    for name, workers in (("one", 1), ("two", 2)):
        (tmp_path / name).mkdir()
        readme_corpus(tmp_path / name)
        run_readme(tmp_path / name, workers, monkeypatch)
    files = sorted(
        p.relative_to(tmp_path / "one") for p in (tmp_path / "one/governed").rglob("*.parquet")
    )
    assert files
    for relative in files:
        assert (tmp_path / "one" / relative).read_bytes() == (
            tmp_path / "two" / relative
        ).read_bytes()
