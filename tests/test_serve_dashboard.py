"""The dashboard of `mixplane serve` in a real headless Chromium.

The demo's catalog is built once; the real server runs as a subprocess over it. Every number
the page must show is computed here without the HTTP API: through the catalog's Python API,
DuckDB over the shards' `.meta.parquet` files, or the processing run's `_stats.json`.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import duckdb
import numpy as np
import pytest
from conftest import Service
from playwright.sync_api import expect, sync_playwright

from mixplane.catalog import Catalog
from mixplane.load import MixtureDataset
from mixplane.load.telemetry import JobReporter

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


@contextmanager
def serving(demo: Path, token: str | None = None):
    """`mixplane serve` over the demo's catalog on a free loopback port; yields its URL.
    Started in the work folder with a relative catalog path, which the header shows."""
    cache = str(demo / "serve-cache")
    service = Service(Path("catalog.duckdb"), "--cache-dir", cache, token=token, cwd=demo)
    try:
        yield service.url
    finally:
        service.stop()


@pytest.fixture(scope="module")
def server(demo: Path):
    with serving(demo) as base:
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
    """A tab of its own (fresh session storage); a JavaScript error on the page fails."""
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
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
    expect(page.locator("#service-info")).to_contain_text("catalog.duckdb")

    row.click()
    expect(page.locator('#dataset-columns li[data-column="source"]')).to_have_text(
        "source: VARCHAR"
    )
    expect(page.locator('#versions-table tbody tr[data-dataset="demo@1"]')).to_have_count(1)


def test_search_counts_samples_and_refusal(page, server, demo):
    where = "language = 'de'"
    selection = Catalog(demo / "catalog.duckdb").select(where)
    assert selection.documents > 0
    page.goto(f"{server}/#search")

    page.fill("#search-where", where)
    page.click("#search-count")
    expect(page.locator("#search-documents")).to_have_text(f"{selection.documents:,}")
    expect(page.locator("#search-tokens")).to_have_text(f"{selection.tokens:,}")
    samples = page.locator("#search-samples li.sample")
    expect(samples).to_have_count(5)

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


def test_screenshot_of_the_composition_view(page, server):
    open_composition(page, server)
    expect(page.locator("#composition-bars")).to_be_visible()
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 10_000


def test_runs_show_excluded_reasons(page, server, demo):
    stats = json.loads((demo / "clean" / "_stats.json").read_text())
    reasons = [
        (stage, reason, count)
        for stage, counts in stats["excluded_by"].items()
        for reason, count in counts.items()
    ]
    assert reasons
    page.goto(f"{server}/#runs")

    page.locator('#runs-table tbody tr[data-kind="process"]').click()
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


def test_token_from_the_fragment(browser, demo):
    token = "dashboard-test-token-0123456789"
    with serving(demo, token=token) as base, new_tab(browser) as page:
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
