"""The dashboard of `mixplane serve`, and its API docs page, in a real headless Chromium.

The demo's catalog (plus a small image-caption dataset, `images`) is built once; the real
server runs as a subprocess over it. Every number the page must show is computed here without
the HTTP API: through the catalog's Python API, DuckDB over the shards' `.meta.parquet`
files, or the processing run's `_stats.json`.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import duckdb
import httpx
import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import Service
from playwright.sync_api import expect, sync_playwright

from mixplane.catalog import Catalog
from mixplane.load import MixtureDataset
from mixplane.load.tools.telemetry import JobReporter

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOT = ROOT / "docs" / "images" / "dashboard.png"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 800}
WAIT_MS = 15_000  # for anything the page shows after an API answer


@pytest.fixture(scope="module")
def demo(demo_work: Path) -> Path:
    """The demo's work folder: corpus, processed data, tokens and catalog.duckdb."""
    return demo_work


@pytest.fixture(scope="module")
def site(site_work: Path) -> Path:
    """The folder of the catalog the dashboard shows: the demo's datasets and `images`."""
    return site_work


@contextmanager
def serving(site: Path, token: str | None = None):
    """`mixplane serve` over the site's catalog on a free loopback port; yields its URL.
    Started in the site's folder with a relative catalog path, which the header shows."""
    cache = str(site / "serve-cache")
    service = Service(Path("catalog.duckdb"), "--cache-dir", cache, token=token, cwd=site)
    try:
        yield service.url
    finally:
        service.stop()


@pytest.fixture(scope="module")
def server(site: Path):
    with serving(site) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: the dashboard tests need it (Debian: apt-get install "
            "chromium; the project's setup installs it)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@contextmanager
def new_tab(browser):
    """A tab of its own (fresh session storage); a JavaScript error on the page, or anything
    the page's content policy blocks, fails."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on(
        "console",
        lambda message: "Content Security Policy" in message.text and errors.append(message.text),
    )
    try:
        yield tab
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def page(browser, server):
    with new_tab(browser) as tab:
        yield tab


def meta_query(demo: Path, sql: str) -> list[tuple]:
    """`sql` over every shard's properties (the table `meta`), straight from the files."""
    files = sorted(str(path) for path in (demo / "tokens").glob("*.meta.parquet"))
    with duckdb.connect() as connection:
        connection.execute(
            f"CREATE VIEW meta AS SELECT * FROM read_parquet({files!r}, union_by_name = true)"
        )
        return connection.execute(sql).fetchall()


def attr(value: str) -> str:
    """A value for a CSS attribute selector, quoted."""
    return json.dumps(value)


def test_lists_the_demo_dataset(page, server, demo):
    documents, tokens = meta_query(demo, "SELECT count(*), sum(n_tokens) FROM meta")[0]
    shards = len(list((demo / "tokens").glob("*.meta.parquet")))
    page.goto(server)

    row = page.locator('#datasets-table tbody tr[data-dataset="demo@1"]')
    expect(row.locator(".documents")).to_have_text(f"{documents:,}")
    expect(row.locator(".tokens")).to_have_text(f"{tokens:,}")
    expect(row.locator(".shards")).to_have_text(f"{shards:,}")
    expect(row.locator(".tokenizer")).to_contain_text("vocab 4,096")
    expect(page.locator("#service-info")).to_contain_text("catalog.duckdb")
    # The image-caption data has no tokenizer and no tokens.
    images = page.locator('#datasets-table tbody tr[data-dataset="images@1"]')
    expect(images.locator(".kind")).to_have_text("image-text")
    expect(images.locator(".tokenizer")).to_have_text("none (images)")
    expect(images.locator(".tokens")).to_have_text("–")
    expect(images.locator(".documents")).to_have_text("12")

    row.click()
    expect(page.locator('#dataset-columns li[data-column="source"]')).to_have_text(
        "source: VARCHAR"
    )
    expect(page.locator('#versions-table tbody tr[data-dataset="demo@1"]')).to_have_count(1)
    assert page.url.endswith("#datasets?dataset=demo%401")


def test_search_counts_samples_and_refusal(page, server, site, demo):
    where = "language = 'de'"
    selection = Catalog(site / "catalog.duckdb").select(where)
    assert selection.documents > 10
    page.goto(f"{server}/#search")

    page.fill("#search-where", where)
    page.click("#search-count")
    expect(page.locator("#search-documents")).to_have_text(f"{selection.documents:,}")
    expect(page.locator("#search-tokens")).to_have_text(f"{selection.tokens:,}")
    samples = page.locator("#search-samples li.sample")
    expect(samples).to_have_count(10)

    # A sample opens in the document viewer: its properties, text and way back to raw data.
    samples.first.click()
    viewer = page.locator("#document-viewer")
    expect(viewer.locator('tr[data-property="language"] td').nth(1)).to_have_text("de")
    expect(viewer.locator("#document-text")).not_to_be_empty()
    expect(viewer.locator('#document-lineage li[data-kind="process"]')).to_have_count(1)
    raw_file = viewer.locator("#document-raw-file").text_content()
    assert Path(raw_file).is_relative_to(demo / "corpus" / "raw") and Path(raw_file).is_file()
    viewer.locator('[data-role="close"]').click()
    expect(viewer).to_be_hidden()

    # A predicate reading a file is refused; the page shows the service's reason.
    page.fill("#search-where", "read_csv('/etc/passwd') IS NULL")
    page.click("#search-count")
    error = page.locator("#search-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("read_csv")
    expect(error).to_contain_text("not allowed")
    expect(page.locator("#search-result")).to_be_hidden()


def open_composition(page, server) -> None:
    page.goto(f"{server}/#composition")
    expect(page.locator("#composition-by")).to_have_value("source")  # the default column
    expect(page.locator("#composition-table tbody tr").first).to_be_visible()


def test_composition_by_source(page, server, demo):
    expected = meta_query(
        demo, "SELECT source, count(*), sum(n_tokens) FROM meta GROUP BY source ORDER BY source"
    )
    open_composition(page, server)

    rows = page.locator("#composition-table tbody tr")
    expect(rows).to_have_count(len(expected))
    for source, documents, tokens in expected:
        row = page.locator(f"#composition-table tbody tr[data-value={attr(source)}]")
        expect(row.locator(".documents")).to_have_text(f"{documents:,}")
        expect(row.locator(".tokens")).to_have_text(f"{tokens:,}")
    bars = page.locator("#composition-bars")
    expect(bars).to_have_attribute("data-bars", str(len(expected)))
    expect(bars).to_contain_text(f"{expected[0][2]:,} tokens")

    # The toggle redraws the bars by documents, without asking again.
    page.check('input[name="composition-measure"][value="documents"]')
    expect(page.locator("#composition-bars")).to_contain_text(f"{expected[0][1]:,} documents")


def test_screenshot_of_the_composition_view(page, server, tmp_path):
    """The README's picture of the dashboard. It is written over the tracked
    docs/images/dashboard.png only with MIXPLANE_UPDATE_SCREENSHOTS=1; otherwise to a
    temporary folder, so a test run leaves the working tree as it was."""
    update = os.environ.get("MIXPLANE_UPDATE_SCREENSHOTS") == "1"
    path = SCREENSHOT if update else tmp_path / SCREENSHOT.name
    open_composition(page, server)
    expect(page.locator("#composition-bars")).to_be_visible()
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def test_runs_show_excluded_reasons(page, server, demo):
    stats = json.loads((demo / "clean" / "_stats.json").read_text())
    reasons = [
        (stage, reason, count)
        for stage, counts in stats["excluded_by"].items()
        for reason, count in counts.items()
    ]
    assert reasons
    page.goto(f"{server}/#runs")

    demo_run = page.locator('#runs-table tbody tr[data-kind="process"]', has_text=str(demo))
    demo_run.click()
    expect(page.locator("#run-documents-in")).to_have_text(f"{stats['documents_in']:,}")
    expect(page.locator("#run-kept")).to_have_text(f"{stats['kept']:,}")
    expect(page.locator("#run-excluded")).to_have_text(f"{stats['excluded']:,}")
    expect(page.locator("#excluded-table tbody tr")).to_have_count(len(reasons))
    for stage, reason, count in reasons:
        row = page.locator(
            f"#excluded-table tr[data-stage={attr(stage)}][data-reason={attr(reason)}]"
        )
        expect(row.locator(".count")).to_have_text(f"{count:,}")


def train(base: str, job: str, demo: Path, pushed: list[dict], failures: list) -> None:
    """A small training loop over the demo's mixture, watched by a `JobReporter`: it takes a
    toy step per batch (token counts), shifts weight from wiki to web_en every few steps
    through `set_weights`, and has the reporter push its figures every other step, paced so
    the page sees them arrive over a few seconds."""
    try:
        dataset = MixtureDataset(demo / "mixture.yaml")
        # Reports are asked for by the loop (`report()` returns what it pushes), never by time.
        reporter = JobReporter(job, dataset, url=base, every=3600)
        weights = {"wiki": 0.4, "code": 0.2, "web_en": 0.3, "forum": 0.1}
        counts = np.zeros(4096, dtype=np.int64)  # the "model"
        for batch in reporter.watch(dataset.batches(8)):
            counts += np.bincount(batch["input_ids"].ravel(), minlength=counts.size)
            step = reporter.step  # batches received so far: the next step's index
            if step % 6 == 0 and weights["wiki"] > 0.1:
                weights["wiki"] = round(weights["wiki"] - 0.05, 2)
                weights["web_en"] = round(weights["web_en"] + 0.05, 2)
                dataset.set_weights(step, weights)
            if step % 2 == 0:
                pushed.append(reporter.report())
                time.sleep(0.2)
            if step == 50:
                break
        reporter.close()
        dataset.close()
        assert reporter.failures == 0, reporter.last_error
        assert counts.sum() == 50 * 8 * 256
    except BaseException as error:  # handed to the test, which fails with it
        failures.append(error)


def test_live_job_weights_chart_updates(page, server, demo):
    page.goto(f"{server}/#jobs")
    expect(page.locator("#view-jobs .empty")).to_contain_text("No training job")

    job = "dashboard-test"
    pushed: list[dict] = []
    failures: list = []
    loop = threading.Thread(target=train, args=(server, job, demo, pushed, failures))
    loop.start()
    try:
        chart = page.locator("#weights-chart")
        expect(page.locator(f"#jobs-table tr[data-job={attr(job)}]")).to_be_visible()
        # The chart grows while the loop runs: three increasing counts seen one after another.
        seen = []
        deadline = time.monotonic() + 15
        while len(seen) < 3 and loop.is_alive() and time.monotonic() < deadline:
            points = int(chart.get_attribute("data-points") or 0)
            if points and (not seen or points > seen[-1]):
                seen.append(points)
            page.wait_for_timeout(250)
        assert len(seen) >= 3, f"the chart did not grow while the job ran: {seen}"
    finally:
        loop.join(timeout=60)
    assert not failures, failures

    last = pushed[-1]
    expect(chart).to_have_attribute("data-points", str(len(pushed)))
    expect(chart).to_have_attribute("data-last-step", str(last["step"]))
    legend = page.locator("#weights-legend .legend-item")
    expect(legend).to_have_count(len(last["weights"]))
    for name, weight in last["weights"].items():
        item = page.locator(f"#weights-legend .legend-item[data-component={attr(name)}]")
        expect(item.locator(".weight")).to_have_text(f"{weight:.3f}")
    assert last["weights"] != pushed[0]["weights"]  # the weights did change on the way


def test_token_from_the_fragment(browser, site):
    token = "dashboard-test-token-0123456789"
    with serving(site, token=token) as base, new_tab(browser) as page:
        page.goto(base)
        banner = page.locator("#banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text(f"{base}/#token=TOKEN")

        # Typed into the open page, the fragment changes without a reload: the page keeps the
        # token, drops it from the address and starts over.
        page.goto(f"{base}/#token={token}")
        dataset = page.locator('#datasets-table tbody tr[data-dataset="demo@1"]')
        expect(dataset).to_be_visible()
        expect(banner).to_be_hidden()
        assert token not in page.url
        page.reload()  # the tab remembers it
        expect(dataset).to_be_visible()
        expect(banner).to_be_hidden()
        # Thumbnails are fetched with the token too (an <img src> could not send it).
        page.goto(f"{base}/#search?datasets=images%401&where=TRUE")
        expect(page.locator("#search-samples img.thumb[data-loaded]")).to_have_count(10)


def operations(base: str) -> int:
    paths = httpx.get(f"{base}/openapi.json").json()["paths"]
    return sum(len(methods) for methods in paths.values())


def test_the_api_docs_render_from_the_service_itself(page, server):
    """/docs works offline under the service's own policy: every operation shows, and one
    runs from the page."""
    answer = httpx.get(f"{server}/docs")
    assert "default-src 'self'" in answer.headers["content-security-policy"]
    assert "<script>" not in answer.text and "cdn" not in answer.text.lower()
    assert httpx.get(f"{server}/redoc").status_code == 404
    # Of the Swagger UI package, only what the page loads and its licence are served.
    assert "Apache License" in httpx.get(f"{server}/static/swagger-ui/LICENSE").text
    for other in ("swagger-editor-bundle.js", "index.css", "..%2F__init__.py", "%2Fetc%2Fpasswd"):
        assert httpx.get(f"{server}/static/swagger-ui/{other}").status_code == 404, other
    outside = []
    page.on(
        "request",
        lambda r: (
            r.url.startswith(("http:", "https:", "ws"))
            and not r.url.startswith(server)
            and outside.append(r.url)
        ),
    )
    page.goto(f"{server}/docs")
    expect(page.locator(".opblock")).to_have_count(operations(server))
    health = page.locator(".opblock-get", has=page.locator('[data-path="/api/health"]'))
    health.locator(".opblock-summary").click()
    health.get_by_role("button", name="Try it out").click()
    health.get_by_role("button", name="Execute").click()
    expect(health.locator(".live-responses-table tbody .response-col_status")).to_have_text("200")
    expect(health.locator(".live-responses-table tbody")).to_contain_text('"status": "ok"')
    assert not outside, f"the docs page reached out of the service: {outside}"


def shown_composition(page) -> list[tuple[str, str, str]]:
    rows = page.locator("#composition-table tbody tr")
    return [
        tuple(
            rows.nth(i).locator(cell).text_content() for cell in (".value", ".documents", ".tokens")
        )
        for i in range(rows.count())
    ]


def test_an_address_reopens_the_same_view(browser, server):
    """The tab, datasets, column, scale, bins, predicate and measure are in the URL: a new tab
    opened on it shows the same composition, and the same page of a search."""
    with new_tab(browser) as page:
        open_composition(page, server)
        page.check('#composition-datasets input[value="images@1"]')
        page.select_option("#composition-by", "language")
        page.fill("#composition-where", "language <> 'en'")
        page.click("#composition-run")
        summary = page.locator('[data-role="summary"]')
        expect(summary).to_contain_text("where language <> 'en' · demo@1, images@1")
        page.check('input[name="composition-measure"][value="documents"]')
        expect(page.locator("#composition-chart")).to_contain_text("documents")
        address, shown = page.url, shown_composition(page)
        assert "#composition?" in address and "language" in address
    with new_tab(browser) as page:
        page.goto(address)
        expect(page.locator('[data-role="summary"]')).to_contain_text("where language <> 'en'")
        assert shown_composition(page) == shown
        expect(page.locator("#composition-by")).to_have_value("language")
        expect(page.locator("#composition-where")).to_have_value("language <> 'en'")
        expect(page.locator('input[name="composition-measure"][value="documents"]')).to_be_checked()
        ticked = page.locator("#composition-datasets input:checked")
        assert [ticked.nth(i).get_attribute("value") for i in range(ticked.count())] == [
            "demo@1",
            "images@1",
        ]
        assert page.url == address

    with new_tab(browser) as page:
        page.goto(f"{server}/#search")
        page.fill("#search-where", "source = 'wiki'")
        page.check('#search-datasets input[value="demo@1"]')
        page.click("#search-count")
        page.click("#samples-next")
        expect(page.locator("#samples-range")).to_contain_text("11–20")
        address = page.url
        first = page.locator("#search-samples li.sample").first.get_attribute("data-index")
        assert "page=2" in address
    with new_tab(browser) as page:
        page.goto(address)
        expect(page.locator("#samples-range")).to_contain_text("11–20")
        expect(page.locator("#search-where")).to_have_value("source = 'wiki'")
        expect(page.locator("#search-samples li.sample").first).to_have_attribute(
            "data-index", first
        )
        # A link changed in the open page is followed too.
        page.evaluate("location.hash = '#datasets?dataset=images%401'")
        expect(page.locator("#dataset-title")).to_have_text("images")


def catalog_order(site: Path, ref: str, keep) -> list[tuple[str, int]]:
    """(shard, index) of a version's documents whose properties pass `keep`, in the catalog's
    order, read from the metadata files."""
    version = Catalog(site / "catalog.duckdb").get(ref)
    found = []
    for shard in version.shards:
        table = pq.read_table(f"{version.uri}/{shard.stem}.meta.parquet")
        found += [(shard.stem, i) for i, row in enumerate(table.to_pylist()) if keep(row)]
    return found


def downloaded(page, button) -> str:
    with page.expect_download() as info:
        button.click()
    return Path(info.value.path()).read_text()


def test_samples_page_through_and_export(page, server, site):
    expected = catalog_order(site, "demo@1", lambda row: row["language"] == "de")
    page.goto(f"{server}/#search?where=language%20%3D%20'de'&datasets=demo%401")
    pages = -(-len(expected) // 10)
    expect(page.locator("#samples-range")).to_have_text(
        f"1–10 of {len(expected)} · page 1 of {pages}"
    )
    expect(page.locator("#samples-previous")).to_be_disabled()
    page.click("#samples-next")
    page.click("#samples-next")
    expect(page.locator("#samples-range")).to_contain_text(f"21–30 of {len(expected)}")
    samples = page.locator("#search-samples li.sample")
    expect(samples).to_have_count(10)
    shown = [
        (
            samples.nth(i).get_attribute("data-shard"),
            int(samples.nth(i).get_attribute("data-index")),
        )
        for i in range(10)
    ]
    assert shown == expected[20:30]

    exported = list(
        csv.DictReader(downloaded(page, page.locator('[data-export="csv"]')).splitlines())
    )
    assert [(row["shard"], int(row["index"])) for row in exported] == shown
    assert all(row["language"] == "de" for row in exported)
    page_json = json.loads(downloaded(page, page.locator('[data-export="json"]')))
    assert page_json["offset"] == 20 and page_json["total"] == len(expected)
    assert [(s["shard"], s["index"]) for s in page_json["samples"]] == shown

    page.goto(f"{server}/#search?where=language%20%3D%20'de'&datasets=demo%401&page={pages}")
    expect(samples).to_have_count(len(expected) - 10 * (pages - 1))
    expect(page.locator("#samples-next")).to_be_disabled()


def test_composition_log_scale_over_a_subset_and_export(page, server, demo):
    ((low, high, count),) = meta_query(
        demo, "SELECT min(n_tokens), max(n_tokens), count(*) FROM meta"
    )
    open_composition(page, server)
    page.select_option("#composition-by", "n_tokens")
    expect(page.locator("#composition-scale")).to_be_visible()
    page.fill("#composition-bins", "5")
    page.select_option("#composition-scale", "log")
    expect(page.locator('[data-role="summary"]')).to_contain_text("(log scale)")
    rows = page.locator("#composition-table tbody tr")
    expect(rows).to_have_count(5)
    values = [rows.nth(i).locator(".value").text_content() for i in range(5)]
    assert values[0].startswith(f"[{low:g}, ") and values[-1].endswith(f", {high:g}]")
    edges = [float(v.strip("[)]").split(", ")[0]) for v in values] + [float(high)]
    ratios = np.diff(np.log10(edges))
    assert np.allclose(ratios, ratios[0], rtol=0.02)  # equal widths in log10 (edges rounded)
    counts = [
        meta_query(
            demo,
            f"SELECT count(*) FROM meta WHERE n_tokens >= {a!r} AND "
            + (f"n_tokens <= {b!r}" if i == 4 else f"n_tokens < {b!r}"),
        )[0][0]
        for i, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True))
    ]
    assert [
        int(rows.nth(i).locator(".documents").text_content().replace(",", "")) for i in range(5)
    ] == counts
    assert sum(counts) == count
    address = page.url
    assert "scale=log" in address and "bins=5" in address and "by=n_tokens" in address

    # The images (no tokens) added to the subset: counted apart, below the log scale's reach.
    page.check('#composition-datasets input[value="images@1"]')
    expect(
        page.locator('#composition-table tbody tr[data-value="(<= 0)"] .documents')
    ).to_have_text("12")
    exported = list(
        csv.DictReader(downloaded(page, page.locator('[data-export="csv"]')).splitlines())
    )
    assert [row["value"] for row in exported] == ["(<= 0)", *values]
    assert [int(row["documents"]) for row in exported] == [12, *counts]
    as_json = json.loads(downloaded(page, page.locator('[data-export="json"]')))
    assert as_json["by"] == "n_tokens" and as_json["documents"] == count + 12
    # Only the images: nothing to bucket on a log scale, all of it below.
    page.uncheck('#composition-datasets input[value="demo@1"]')
    expect(rows).to_have_count(1)
    expect(page.locator('#composition-table tbody tr[data-value="(<= 0)"]')).to_have_count(1)


def test_image_samples_show_thumbnails(page, server):
    page.goto(f"{server}/#search?datasets=images%401&where=TRUE")
    pictures = page.locator("#search-samples li.sample img.thumb[data-loaded]")
    expect(pictures).to_have_count(10)
    sizes = pictures.evaluate_all("els => els.map(e => [e.naturalWidth, e.naturalHeight])")
    assert all(0 < w <= 96 and 0 < h <= 96 for w, h in sizes), sizes
    assert all(
        src.startswith("blob:") for src in pictures.evaluate_all("els => els.map(e => e.src)")
    )
    first = page.locator("#search-samples li.sample").first
    caption = first.locator(".excerpt").text_content()
    assert pictures.first.get_attribute("alt") == caption
    first.click()
    viewer = page.locator("#document-viewer")
    preview = viewer.locator("#document-image img.thumb[data-loaded]")
    expect(preview).to_have_count(1)
    width, height = preview.evaluate("e => [e.naturalWidth, e.naturalHeight]")
    assert max(width, height) <= 512 and (width, height) == (48, 40)  # smaller: not enlarged
    expect(viewer.locator("#document-text")).to_have_text(caption)


def test_a_restarted_job_draws_a_new_line(page, server):
    """A job that restarts from a checkpoint at step 6 after step 12: no line goes back across
    the chart, over steps or over time; tokens/s is charted; the axis and range follow the
    address."""
    job = "restarted-job"
    steps = [*range(1, 13), *range(6, 17)]
    for step in steps:
        sample = {"step": step, "tokens_per_second": 1000.0 + step, "sequences_per_second": 8.0}
        sample["weights"] = {"web": 0.5 + step / 100, "code": 0.5 - step / 100}
        assert httpx.post(f"{server}/api/jobs/{job}/metrics", json=sample).status_code == 200
    page.goto(f"{server}/#jobs?job={job}")
    chart = page.locator("#weights-chart")
    expect(chart).to_have_attribute("data-points", str(len(steps)))
    lines = chart.locator("path[data-series]")
    expect(lines).to_have_count(2)
    for i in range(2):
        expect(lines.nth(i)).to_have_attribute("data-runs", "2")
        for run in lines.nth(i).get_attribute("d").split("M")[1:]:
            xs = [float(point.split(",")[0]) for point in run.split("L")]
            assert xs == sorted(xs)
    expect(page.locator("#throughput-chart")).to_have_attribute("data-points", str(len(steps)))
    expect(page.locator('#throughput-chart path[data-series="tokens/s"]')).to_have_attribute(
        "data-runs", "2"
    )

    page.check('input[name="jobs-axis"][value="time"]')
    expect(chart).to_have_attribute("data-x", "time")
    expect(lines.first).to_have_attribute("data-runs", "2")  # the restart still cuts the line
    ticks = chart.locator(".tick-label").all_text_contents()
    assert any(re.fullmatch(r"\d\d:\d\d:\d\d", tick) for tick in ticks), ticks
    # Samples a fraction of a second apart, none on a whole second, still get clock ticks.
    brief = page.evaluate(
        """async () => {
            const { lineChart } = await import("/static/charts.js");
            const points = [[1000.1, 1], [1000.2, 2], [1000.3, 3]];
            const svg = lineChart({ id: "brief", series: [{ name: "a", points }], xTime: true });
            return [...svg.querySelectorAll(".tick-label")].map((e) => e.textContent);
        }"""
    )
    assert any(re.fullmatch(r"\d\d:\d\d:\d\d", tick) for tick in brief), brief
    page.select_option("#jobs-range", "300")
    assert page.url.endswith(f"#jobs?job={job}&x=time&range=300")
    expect(chart).to_have_attribute("data-points", str(len(steps)))  # all within 5 minutes

    # The range is counted back from the last report, on the service's clock.
    picked = page.evaluate(
        """async () => {
            const { inRange } = await import("/static/jobs.js");
            const samples = [0, 100, 250, 290, 300].map((t) => ({ time: 1000 + t }));
            return [inRange(samples, "60"), inRange(samples, "300"), inRange(samples, "all")]
                .map((kept) => kept.map((s) => s.time - 1000));
        }"""
    )
    assert picked == [[250, 290, 300], [0, 100, 250, 290, 300], [0, 100, 250, 290, 300]]


def test_the_steps_view_shows_what_a_step_held(page, server, site):
    from mixtures import demo_mixture

    from mixplane.load.tools.trace import trace

    mixture = demo_mixture()
    page.goto(f"{server}/#steps?step=3&rank=1&world_size=2&batch_size=4&properties=language")
    page.fill("#steps-mixture", "{not json")
    page.click("#steps-run")
    expect(page.locator("#view-steps .error")).to_contain_text("The mixture is not JSON")
    page.fill("#steps-mixture", json.dumps(mixture))
    page.click("#steps-run")
    rows = page.locator("#steps-table tbody tr")
    expect(rows.first).to_be_visible()
    local = mixture | {"catalog": str(site / "catalog.duckdb"), "cache_dir": str(site / "local")}
    expected = trace(local, step=3, rank=1, world_size=2, batch_size=4, properties=["language"])
    pieces = [(s["index"], d["id"]) for s in expected["sequences"] for d in s["documents"]]
    shown = rows.evaluate_all(
        "rows => rows.map(r => [Number(r.dataset.index), r.dataset.id, r.lastChild.textContent])"
    )
    assert [(index, found) for index, found, _ in shown] == pieces
    languages = [d["properties"]["language"] for s in expected["sequences"] for d in s["documents"]]
    assert [language for _, _, language in shown] == languages
    expect(page.locator("#steps-summary")).to_contain_text(
        "Step 3, rank 1 of 2: 4 sequences of 128 tokens"
    )
    assert "step=3" in page.url and "properties=language" in page.url
    # What the service refuses, the view says (here: no batch size, no global_batch_size).
    page.fill("#steps-batch_size", "")
    page.click("#steps-run")
    expect(page.locator("#view-steps .error")).to_contain_text("pass batch_size")
    # An unpacked, bucketed mixture: its batches are as the plan cuts them (no batch size).
    unpacked = mixture | {
        "packing": "none",
        "pad_id": 0,
        "bucketing": {"max_tokens_per_batch": 1024, "window": 64},
    }
    page.fill("#steps-mixture", json.dumps(unpacked))
    page.click("#steps-run")
    expected = trace(local | unpacked, step=3, rank=1, world_size=2, properties=["language"])
    count = len(expected["sequences"])
    expect(page.locator("#steps-summary")).to_contain_text(
        f"Step 3, rank 1 of 2: a padded batch of {count} documents, each cut to 128 tokens"
    )
    shown = rows.evaluate_all("rows => rows.map(r => [Number(r.dataset.index), r.dataset.id])")
    assert shown == [[s["index"], s["documents"][0]["id"]] for s in expected["sequences"]]


@contextmanager
def watched(tab, base: str):
    """Every console error of the tab and every request it sends elsewhere than `base`."""
    errors: list[str] = []
    elsewhere: list[str] = []
    tab.on("console", lambda message: message.type == "error" and errors.append(message.text))
    tab.on(
        "request",
        lambda request: (
            request.url.startswith((f"{base}/", "blob:")) or elsewhere.append(request.url)
        ),
    )
    yield
    assert not errors, errors
    assert not elsewhere, elsewhere


def play(audio) -> None:
    """Press the play button of an <audio controls> (its left end), as a user would."""
    box = audio.bounding_box()
    audio.page.mouse.click(box["x"] + 20, box["y"] + box["height"] / 2)


def clip_durations(site: Path) -> list[float]:
    version = Catalog(site / "catalog.duckdb").get("speech@1")
    table = pq.read_table(f"{version.uri}/part-00000.meta.parquet", columns=["duration"])
    return table.column("duration").to_pylist()


@pytest.mark.parametrize("token", [None, "audio-dashboard-token-0123456789"])
def test_audio_documents_play_their_clips(browser, audio_site, token):
    """The search page lists players that read nothing before play; a document's player loads
    its clip from the service (with Range requests; with a token, fetched with it when asked
    and played from a blob: URL) and the browser finds the duration the catalog holds."""
    durations = clip_durations(audio_site)
    with serving(audio_site, token=token) as base, new_tab(browser) as page, watched(page, base):
        asked: list[tuple[str, int]] = []
        page.on(
            "response",
            lambda answer: (
                "/api/audio/" in answer.url
                and asked.append((answer.request.headers.get("range", ""), answer.status))
            ),
        )
        page.goto(f"{base}/#token={token}" if token else base)
        speech = page.locator('#datasets-table tbody tr[data-dataset="speech@1"]')
        expect(speech.locator(".kind")).to_have_text("audio-text")
        expect(speech.locator(".tokenizer")).to_have_text("none (audio)")
        expect(speech.locator(".tokens")).to_have_text("–")
        page.goto(f"{base}/#search?datasets=speech%401&where=TRUE")
        samples = page.locator("#search-samples li.sample")
        expect(samples).to_have_count(10)
        player = "button.clip-fetch" if token else 'audio.clip[controls][preload="none"]'
        expect(samples.locator(player)).to_have_count(10)
        expect(samples.nth(4).locator(".clip-facts")).to_have_text("1.5 s · 16,000 Hz")
        expect(samples.nth(4).locator(".excerpt")).to_have_text("tone number 4 at 380 hertz")
        assert not asked  # nothing read before a play

        samples.nth(4).locator(".where").click()
        viewer = page.locator("#document-viewer")
        expect(viewer.locator("#document-audio .clip-facts")).to_have_text("1.5 s · 16,000 Hz")
        expect(viewer.locator("h3").first).to_have_text("Transcript")
        expect(viewer.locator("#document-text")).to_have_text("tone number 4 at 380 hertz")
        audio = viewer.locator('#document-audio audio.clip[controls][preload="none"]')
        if token:
            button = viewer.locator("#document-audio button.clip-fetch")
            expect(button).to_have_text(re.compile(r"▶ Play \(\d+(\.\d)? KiB\)"))
            button.click()
        else:
            play(audio)
        expect(audio).to_have_attribute("data-loaded", "true")
        assert abs(audio.evaluate("a => a.duration") - durations[4]) < 0.05
        source = audio.evaluate("a => a.currentSrc")
        if token:
            assert source.startswith("blob:") and asked == [("", 200)]
        else:
            assert source == f"{base}/api/audio/speech@1/part-00000/4"
            assert asked and all(header.startswith("bytes=") for header, _ in asked)
            assert {status for _, status in asked} == {206}
        viewer.locator('[data-role="close"]').click()
        expect(viewer).to_be_hidden()
        assert audio.evaluate("a => a.paused")
