"""`mixplane report`: every number equals a direct DuckDB count over the same files (the
shards' metadata, the lineage's `_excluded/` Parquet, its manifests), for a dataset made
from `mixplane synth --governance` through two processing runs and tokenize, and for what a
mixture's first steps read (checked against `trace`, sequence by sequence)."""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
import pytest
from conftest import make_records, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st
from readme_blocks import readme_block, run_commands

from mixplane.catalog import Catalog
from mixplane.catalog.engine import quote_literal
from mixplane.demo import pipeline_config
from mixplane.errors import ConfigError, InputError, MixplaneError
from mixplane.load.dataset import MixtureDataset
from mixplane.load.tools.trace import TraceRequest, trace, trace_dataset
from mixplane.process.pipeline import run_pipeline
from mixplane.report import report_dataset, report_mixture
from mixplane.report.aggregate import domain_sql, takedowns
from mixplane.report.html import render_html
from mixplane.report.model import Row
from mixplane.synth import generate_corpus
from mixplane.tokenize import tokenize_dataset, train_tokenizer

GOVERNANCE_MD = Path(__file__).parent.parent / "docs" / "governance.md"
SCREENSHOT = Path(__file__).parent.parent / "docs" / "images" / "report.png"
TAKEDOWN = {
    "request": "td-0001",
    "reference": "TICKET-123",
    "criteria": {"domain": "gone.example", "ids": ["web-404"]},
    "at": "2026-11-20T10:00:00+00:00",
    "removed": {"documents": 3, "tokens": 1234, "shards_rewritten": 1},
}


def build(root: Path) -> Path:
    """raw (and a JSON Lines file with a broken line) -> governed (license, opt_out drop,
    extract, langid, pii dropping documents with a card number, then pii redacting) -> clean
    (opt_out annotating a listed domain, dedup_exact) -> tokens, registered as web@1; the
    tokens' manifest records a takedown as `mixplane takedown` writes it."""
    generate_corpus(str(root / "corpus"), 160, 5, governance=True)
    (root / "extra").mkdir()
    (root / "extra" / "notes.jsonl").write_text(
        '{"id": "note-1", "text": "A short note about rivers."}\n{"id": "note-2", "text": \n'
    )
    config = pipeline_config(root, workers=1)  # the demo's inputs: its corpus has this layout
    config["input"].append(str(root / "extra" / "*.jsonl"))
    config["output"] = str(root / "governed")
    config["stages"] = [
        "license",
        {"opt_out": {"mode": "drop"}},
        "extract",
        "langid",
        {"pii": {"mode": "drop", "kinds": ["credit_card"]}},
        "pii",
    ]
    run_pipeline(config)
    urls = duckdb.sql(
        f"SELECT url FROM '{root}/governed/*.parquet' WHERE url IS NOT NULL ORDER BY id LIMIT 1"
    ).fetchall()
    domain = urlsplit(urls[0][0]).hostname
    run_pipeline(
        {
            "input": str(root / "governed"),
            "output": str(root / "clean"),
            "stages": [{"opt_out": {"domains": [domain]}}, "dedup_exact"],
        }
    )
    train_tokenizer(str(root / "clean"), vocab_size=300, out=str(root / "tok.json"))
    tokenize_dataset(
        {
            "input": str(root / "clean"),
            "output": str(root / "tokens"),
            "tokenizer": str(root / "tok.json"),
            "eos": True,
        }
    )
    manifest = root / "tokens" / "_manifest.json"
    written = json.loads(manifest.read_text())
    written["takedowns"] = [TAKEDOWN]
    manifest.write_text(json.dumps(written, indent=2))
    Catalog(root / "catalog.duckdb").register(str(root / "tokens"), "web")
    # a second dataset with none of the governance columns: no licence, url or pii counts
    write_jsonl(root / "notes-raw" / "n.jsonl", make_records(40, "note"))
    run_pipeline({"input": str(root / "notes-raw"), "output": str(root / "notes-clean")})
    tokenize_dataset(
        {
            "input": str(root / "notes-clean"),
            "output": str(root / "notes"),
            "tokenizer": str(root / "tok.json"),
            "eos": True,
        }
    )
    Catalog(root / "catalog.duckdb").register(str(root / "notes"), "notes")
    return root


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("report"))


def sql(work: Path, query: str) -> list[tuple]:
    """`query` over `meta` (the shards' metadata) and `excluded` (both runs' `_excluded/`)."""
    meta = sorted(str(p) for p in (work / "tokens").glob("*.meta.parquet"))
    excluded = sorted(str(p) for p in work.glob("*/_excluded/*.parquet"))
    with duckdb.connect() as connection:
        connection.execute(f"CREATE VIEW meta AS SELECT * FROM read_parquet({meta!r})")
        connection.execute(
            f"CREATE VIEW excluded AS SELECT * FROM read_parquet({excluded!r}, "
            "union_by_name = true, filename = true)"
        )
        return connection.execute(query).fetchall()


def table(breakdown) -> dict[str, tuple[int, int]]:
    return {row.key: (row.documents, row.tokens) for row in breakdown.rows}


def host(url: str | None) -> str:
    name = urlsplit(url).hostname if url else None
    return name.removeprefix("www.") if name else "(no url)"


def test_dataset_numbers_equal_direct_counts(work: Path):
    report = report_dataset(work / "catalog.duckdb", "web@1", top=None)
    [(documents, tokens)] = sql(work, "SELECT count(*), sum(n_tokens) FROM meta")
    assert (report.documents, report.tokens) == (documents, tokens) and documents > 100
    for name, column in (("license", "license"), ("language", "language")):
        expected = sql(
            work,
            f"SELECT coalesce({column}, 'not detected'), count(*), sum(n_tokens) "
            "FROM meta GROUP BY 1",
        )
        assert table(getattr(report, f"by_{name}")) == {k: (d, t) for k, d, t in expected}
    assert table(report.by_source) == {
        k: (d, t)
        for k, d, t in sql(work, "SELECT source, count(*), sum(n_tokens) FROM meta GROUP BY 1")
    }
    domains: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for url, n in sql(work, "SELECT url, n_tokens FROM meta"):
        domains[host(url)][0] += 1
        domains[host(url)][1] += n
    assert table(report.by_domain) == {k: tuple(v) for k, v in domains.items()}
    assert report.by_domain.distinct == len(domains) > 10
    assert {"unknown", "CC-BY-SA-4.0"} <= set(table(report.by_license))

    with pytest.raises(ConfigError, match="top must be at least 1"):
        report_dataset(work / "catalog.duckdb", "web@1", top=0)
    # the top domains, then one `other` row holding the rest
    top = report_dataset(work / "catalog.duckdb", "web@1", top=5)
    assert [row.key for row in top.by_domain.rows[:5]] == [r.key for r in report.by_domain.rows[:5]]
    other = top.by_domain.rows[5]
    assert other.key == "other" and len(top.by_domain.rows) == 6
    assert other.tokens == sum(r.tokens for r in report.by_domain.rows[5:])
    assert other.documents == sum(r.documents for r in report.by_domain.rows[5:])


def test_pii_found_and_redacted_by_kind(work: Path):
    report = report_dataset(work / "catalog.duckdb", "web@1")
    for kind in report.pii:
        column = f"pii_{kind.kind}"
        [(documents, found, dropped)] = sql(
            work,
            f"SELECT count(*) FILTER (WHERE {column} > 0), sum({column}), "
            f"(SELECT count(*) FROM excluded WHERE stage = 'pii' "
            f"AND CAST(json_extract(detail, '$.{kind.kind}') AS BIGINT) > 0) FROM meta",
        )
        assert (kind.documents, kind.found, kind.redacted, kind.dropped) == (
            documents,
            found,
            found,  # the last pii stage redacted what it found
            dropped,
        )
    assert {k.kind for k in report.pii} == {"email", "phone", "ip_address", "credit_card"}
    counted = {k.kind: k for k in report.pii}
    assert counted["credit_card"].dropped > 0 and counted["credit_card"].found == 0
    assert counted["email"].found > 0 and counted["email"].dropped == 0
    assert report.lineage.pii_modes == {"web@1": "redact"}


def test_lineage_removals_opt_outs_and_takedowns(work: Path):
    report = report_dataset(work / "catalog.duckdb", "web@1")
    expected = sql(
        work,
        "SELECT regexp_replace(filename, '/_excluded/[^/]*$', ''), stage, reason, count(*) "
        "FROM excluded GROUP BY ALL",
    )
    excluded = [r for r in report.removals if r.outcome == "excluded"]
    assert {(r.folder, r.stage, r.reason): r.documents for r in excluded} == {
        (folder, stage, reason): n for folder, stage, reason, n in expected
    }
    assert {r.folder for r in report.removals} == {str(work / "governed"), str(work / "clean")}
    assert {r.stage for r in report.removals if r.outcome == "excluded"} >= {"pii", "opt_out"}
    quarantined = [r for r in report.removals if r.outcome == "quarantined"]
    with duckdb.connect() as connection:
        [(stage, n)] = connection.execute(
            f"SELECT stage, count(*) FROM '{work}/governed/_quarantine/*.parquet' GROUP BY 1"
        ).fetchall()
    assert [(r.folder, r.stage, r.documents) for r in quarantined] == [
        (str(work / "governed"), stage, n)
    ]
    stats = json.loads((work / "governed" / "_stats.json").read_text())
    assert {quarantined[0].reason: n} == stats["quarantined_by"][stage]
    assert [(r.stage, r.reason) for r in report.dedup] == [("dedup_exact", "duplicate")]
    signals = sql(
        work,
        "SELECT json_extract_string(detail, '$.signal'), count(*) FROM excluded "
        "WHERE stage = 'opt_out' GROUP BY 1",
    )
    kept = sql(
        work,
        "SELECT split_part(opt_out_signal, ':', 1), count(*) FROM meta WHERE opt_out GROUP BY 1",
    )
    assert {(o.signal, o.outcome): o.documents for o in report.lineage.opt_outs} == {
        **{(signal, "excluded"): n for signal, n in signals},
        **{(signal, "kept"): n for signal, n in kept},
    }
    assert len(signals) >= 3 and kept == [("domain_list", kept[0][1])] and kept[0][1] > 0
    [takedown] = report.lineage.takedowns
    assert (takedown.request, takedown.reference, takedown.criteria, takedown.at) == (
        "td-0001",
        "TICKET-123",
        TAKEDOWN["criteria"],
        TAKEDOWN["at"],
    )
    assert (takedown.documents, takedown.tokens, takedown.shards_rewritten) == (3, 1234, 1)
    assert takedown.folder == str(work / "tokens")
    assert [step.kind for step in report.lineage.steps] == ["tokenize", "process", "process"]
    assert json.loads(json.dumps(report.to_json()))["takedowns"][0]["reference"] == "TICKET-123"


def test_attribution_csv_lists_every_document(work: Path, tmp_path: Path):
    out = tmp_path / "attribution.csv"
    report_dataset(work / "catalog.duckdb", "web@1", attribution=str(out))
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["url", "license", "source", "dataset", "document_id", "tokens"]
    expected = sql(work, "SELECT id, coalesce(url, ''), license, source, n_tokens FROM meta")
    assert sorted(
        (r["document_id"], r["url"], r["license"], r["source"], int(r["tokens"])) for r in rows
    ) == sorted(expected)
    assert {r["dataset"] for r in rows} == {"web@1"}
    assert [r["document_id"] for r in rows] == [i for (i,) in sql(work, "SELECT id FROM meta")]


def mixture_yaml(work: Path) -> Path:
    path = work / "mixture.yaml"
    path.write_text(
        json.dumps(
            {
                "catalog": "catalog.duckdb",
                "seq_len": 64,
                "seed": 3,
                "global_batch_size": 8,
                "components": {
                    "web": {"where": "source = 'web'", "weight": 0.5, "datasets": ["web"]},
                    "rest": {"where": "source != 'web'", "weight": 0.5, "datasets": ["web"]},
                },
            }
        )
    )
    return path


def test_mixture_counts_the_tokens_its_steps_took(work: Path, tmp_path: Path, monkeypatch):
    mixture = mixture_yaml(work)
    out = tmp_path / "read.csv"
    report = report_mixture(mixture, 12, attribution=str(out))
    assert report.reads["sequences"] == 12 * 8
    assert report.tokens == 12 * 8 * 64  # every token of every sequence, once
    # trace, step by step, says the same: the tokens taken from each document
    taken: Counter = Counter()
    dataset = MixtureDataset(mixture, prefetch=0)
    try:
        for step in range(12):
            traced = trace_dataset(dataset, TraceRequest(step=step))
            for sequence in traced["sequences"]:
                for piece in sequence["documents"]:
                    begin, end = piece["tokens"]
                    taken[piece["id"]] += end - begin
    finally:
        dataset.close()
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["document_id"]: int(r["tokens"]) for r in rows} == dict(taken)
    assert report.documents == len(taken)
    sources = dict(sql(work, "SELECT id, source FROM meta"))
    by_source: Counter = Counter()
    for document, tokens in taken.items():
        by_source[sources[document]] += tokens
    assert {k: t for k, (_, t) in table(report.by_source).items()} == dict(by_source)
    html = render_html(report)
    assert "first 12 steps" in html and f"{report.tokens:,}" in html
    # the lineage sections cover the datasets the mixture reads
    assert report.datasets == ("web@1",) and len(report.lineage.takedowns) == 1
    # two ranks of micro-batches of 4 make the same steps of 8
    # planned a few positions at a time, documents cut across blocks add up the same
    monkeypatch.setattr("mixplane.load.tools.taken.BLOCK", 5)
    split = report_mixture(mixture, 12, world_size=2, batch_size=4).to_json()
    assert split.pop("reads")["world_size"] == 2
    whole = report.to_json()
    assert whole.pop("reads")["world_size"] == 1
    assert split == whole


def test_a_mixture_over_datasets_with_different_properties(work: Path):
    spec = json.loads(mixture_yaml(work).read_text()) | {"catalog": str(work / "catalog.duckdb")}
    spec["components"] = {
        "web": {"where": "source = 'web'", "weight": 0.5, "datasets": ["web"]},
        "notes": {"where": "n_tokens > 0", "weight": 0.5, "datasets": ["notes"]},
    }
    report = report_mixture(spec, 6)
    assert report.datasets == ("notes@1", "web@1") and report.tokens == 6 * 8 * 64
    taken: Counter = Counter()
    dataset = MixtureDataset(spec, prefetch=0)
    try:
        for step in range(6):
            for sequence in trace_dataset(dataset, TraceRequest(step=step))["sequences"]:
                for piece in sequence["documents"]:
                    taken[piece["dataset"], piece["id"]] += piece["tokens"][1] - piece["tokens"][0]
    finally:
        dataset.close()
    per_dataset: Counter = Counter()
    for (ref, _), tokens in taken.items():
        per_dataset[ref] += tokens
    assert {k: t for k, (_, t) in table(report.by_dataset).items()} == dict(per_dataset)
    notes = sum(1 for ref, _ in taken if ref == "notes@1")
    assert table(report.by_license)["not detected"][0] >= notes > 0
    assert table(report.by_domain)["(no url)"][0] >= notes
    # the notes' own report: nothing to say about licences or personal data
    alone = report_dataset(work / "catalog.duckdb", "notes@1")
    assert table(alone.by_license) == {"not detected": (40, alone.tokens)}
    assert alone.pii == () and alone.lineage.takedowns == ()
    assert "No pii stage ran" in render_html(alone)


def test_html_is_self_contained_and_shows_the_numbers(work: Path):
    report = report_dataset(work / "catalog.duckdb", "web@1")
    html = render_html(report)
    for number in (report.documents, report.tokens, *(r.tokens for r in report.by_license.rows)):
        assert f"{number:,}" in html
    assert "TICKET-123" in html and "dedup_exact" in html and "<svg" in html
    lowered = html.lower()
    for outside in ("<script", "<link", "@import", "src=", "href=", "url("):
        assert outside not in lowered


def test_html_shows_in_a_browser_without_errors_or_requests(work: Path, tmp_path: Path):
    playwright = pytest.importorskip("playwright.sync_api")
    from test_serve_dashboard import CHROMIUM, CHROMIUM_ARGS

    """Also the README's picture of a report: written over the tracked
    docs/images/report.png only with MIXPLANE_UPDATE_SCREENSHOTS=1."""
    path = tmp_path / "report.html"
    update = os.environ.get("MIXPLANE_UPDATE_SCREENSHOTS") == "1"
    picture = SCREENSHOT if update else tmp_path / SCREENSHOT.name
    report = report_dataset(work / "catalog.duckdb", "web@1")
    path.write_text(render_html(report), encoding="utf-8")
    errors, requests = [], []
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("console", lambda m: m.type in ("error", "warning") and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(path.as_uri())
            assert page.locator("#documents").inner_text() == f"{report.documents:,}"
            bars = page.locator("#by-license + .pair svg rect").count()
            assert bars == len(report.by_license.rows)
            assert page.locator("table").count() >= 9
            page.screenshot(path=str(picture))  # the top: totals, datasets, licences
            assert picture.stat().st_size > 10_000
        finally:
            browser.close()
    assert errors == [] and requests == [path.as_uri()]


def test_command_line_as_the_readme_writes_it(work: Path, cli, monkeypatch):
    monkeypatch.chdir(work)
    mixture_yaml(work)
    outputs = run_commands(cli, readme_block("bash", "mixplane report"))
    assert (work / "report.html").exists() and (work / "attribution.csv").exists()
    read = json.loads(outputs[1])
    assert read["kind"] == "mixture" and read["reads"]["steps"] == 10
    assert read["tokens"] == 10 * 8 * 64
    code, _, err = cli("report", "mixture.yaml")
    assert code != 0 and "--steps" in err
    code, _, err = cli("report", "nothing@3")
    assert code != 0 and "nothing" in err


def test_the_python_example_of_the_docs(work: Path, monkeypatch, capsys):
    monkeypatch.chdir(work)
    mixture_yaml(work)
    exec(readme_block("python", "report_dataset(", GOVERNANCE_MD), {})
    printed = capsys.readouterr().out.splitlines()
    report = report_dataset(work / "catalog.duckdb", "web@1")
    first = report.by_license.rows[0]
    assert printed[0] == f"{first.key} {first.documents} {first.tokens}"
    assert printed[-1].startswith(f"{100 * 8 * 64} ")
    assert (work / "report.html").read_text() == render_html(report)


def test_mixtures_a_report_cannot_read_exactly_are_refused(work: Path):
    spec = json.loads(mixture_yaml(work).read_text())
    spec["policy"] = {"name": "ado", "update_every": 2, "warmup_steps": 0}
    with pytest.raises(ConfigError, match="weight log"):
        report_mixture(spec | {"catalog": str(work / "catalog.duckdb")}, 20)
    spec.pop("policy")
    unpacked = spec | {"packing": "none", "catalog": str(work / "catalog.duckdb")}
    with pytest.raises(ConfigError, match="needs UnpackedDataset\\(batch_size=N\\)"):
        report_mixture(unpacked, 2)  # fixed batches without their size


@pytest.mark.parametrize("batching", ["fixed", "bucketed"])
def test_an_unpacked_mixture_counts_the_rows_its_steps_held(work: Path, tmp_path, batching):
    spec = json.loads(mixture_yaml(work).read_text()) | {"packing": "none", "pad_id": 0}
    spec["catalog"] = str(work / "catalog.duckdb")
    batch_size = 3 if batching == "fixed" else None
    if batching == "bucketed":
        spec["bucketing"] = {"max_tokens_per_batch": 256, "window": 16}
    out = tmp_path / "read.csv"
    report = report_mixture(spec, 7, world_size=2, batch_size=batch_size, attribution=str(out))
    # trace, step by step and rank by rank, says the same: each row's document and tokens
    taken: Counter = Counter()
    rows = 0
    for rank in range(2):
        for step in range(7):
            traced = trace(spec, step=step, rank=rank, world_size=2, batch_size=batch_size)
            for sequence in traced["sequences"]:
                for piece in sequence["documents"]:
                    begin, end = piece["tokens"]
                    taken[piece["id"]] += end - begin
                    rows += 1
    with out.open(newline="") as handle:
        read = {r["document_id"]: int(r["tokens"]) for r in csv.DictReader(handle)}
    assert read == dict(taken) and report.tokens == sum(taken.values())
    assert report.reads["rows"] == rows and report.reads["packing"] == "none"
    if batching == "fixed":
        assert rows == 7 * 2 * 3
    assert "padded rows" in render_html(report)


@settings(max_examples=40, deadline=None)
@given(
    scheme=st.sampled_from(["http", "https", "HTTPS", "ftp"]),
    user=st.sampled_from(["", "ana@", "ana:secret@"]),
    www=st.sampled_from(["", "www.", "WWW."]),
    labels=st.lists(st.sampled_from(["a", "news", "b-c", "x1", "0"]), min_size=1, max_size=3),
    top=st.sampled_from(["org", "co.uk", "EXAMPLE"]),
    port=st.sampled_from(["", ":8080"]),
    rest=st.sampled_from(["", "/", "/a/b?c=d@e", "?x=1", "#f:g"]),
)
def test_domains_are_hosts_as_urllib_reads_them(scheme, user, www, labels, top, port, rest):
    url = f"{scheme}://{user}{www}{'.'.join(labels)}.{top}{port}{rest}"
    found = duckdb.sql(f"SELECT {domain_sql(quote_literal(url))}").fetchall()[0][0]
    assert found == host(url)


def test_html_escapes_what_crawled_pages_wrote(work: Path):
    report = report_dataset(work / "catalog.duckdb", "web@1")
    hostile = "<script>alert(1)</script>"
    rows = (Row(hostile, 1, 5), *report.by_license.rows)
    html = render_html(replace(report, by_license=replace(report.by_license, rows=rows)))
    assert hostile not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_version_whose_files_changed_is_refused(work: Path, tmp_path: Path):
    shutil.copytree(work / "tokens", tmp_path / "tokens")
    catalog = Catalog(tmp_path / "catalog.duckdb")
    catalog.register(str(tmp_path / "tokens"), "copy")
    assert (
        report_dataset(catalog, "copy@1").to_json()["by_license"]
        == (report_dataset(work / "catalog.duckdb", "web@1").to_json()["by_license"])
    )
    meta = next((tmp_path / "tokens").glob("*.meta.parquet"))
    meta.write_bytes(meta.read_bytes() + b"more")
    with pytest.raises(MixplaneError, match="changed since it was registered"):
        report_dataset(catalog, "copy@1")


def test_a_dataset_and_its_lineage_on_object_storage(work: Path, s3_bucket, tmp_path: Path):
    """The same report from a copy on S3 (a real S3 server on loopback), its lineage read
    there too; the attribution list written there."""
    import s3fs

    bucket, options = s3_bucket
    remote = f"s3://{bucket}/work"
    fs = s3fs.S3FileSystem(**options)
    for name in ("governed", "clean", "tokens"):
        for path in (work / name).rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                if path.name == "_manifest.json":  # its paths are absolute: point them there
                    data = data.replace(str(work).encode(), remote.encode())
                fs.pipe(f"{remote}/{path.relative_to(work)}", data)
    catalog = Catalog(tmp_path / "catalog.duckdb", storage_options=options)
    catalog.register(f"{remote}/tokens", "web")
    there = report_dataset(catalog, "web@1", attribution=f"{remote}/attribution.csv")
    here = report_dataset(work / "catalog.duckdb", "web@1")
    expected = json.loads(json.dumps(here.to_json()).replace(str(work), remote))
    assert (
        there.to_json() == expected
        and len(there.removals) >= 4
        and len(there.lineage.takedowns) == 1
    )
    written = fs.cat(f"{remote}/attribution.csv").decode().splitlines()
    assert len(written) == here.documents + 1


def test_a_malformed_takedown_record_is_named(work: Path, tmp_path: Path):
    with pytest.raises(InputError, match=r"tok/_manifest.json: takedowns\[1\]"):
        takedowns({"takedowns": [TAKEDOWN, {"request": "r2", "removed": 3}]}, "web@2", "tok")
    with pytest.raises(InputError, match="takedowns is a list"):
        takedowns({"takedowns": {"request": "r1"}}, "web@2", "tok")
