"""Extraction quality and CPU cost of the `extract` engines against known answers.

    .venv/bin/python -m bench.extract.quality [--pages 700] [--seed 7] [--real-step 1]
    [--install-docs]

Two page sets, each page run through every engine in the same process, the engines' order
alternating from page to page, each call timed with time.process_time (CPU seconds, so "per
core"), after a warm-up on ten pages:

- synthetic: `mixplane.synth.extraction.known_answer_pages`: the main content is known
  exactly (heading, paragraphs, every table cell and list item) and wrapped in boilerplate
  (cookie banner, menu, search form, share links, comments, sidebar of link lists, footer,
  styles, scripts), in English, German, French, Spanish, Chinese and Japanese.
- real: every distinct (by content) .html file under /usr/share/doc. `--install-docs`
  first runs `apt-get install -y python3-doc postgresql-doc git-doc` for more pages. The
  known answer of a real page is the text of its main element (the first of `<main>`, `[role=main]`,
  `<article>`, Sphinx's `div.body`, `#content`, else `<body>`), without `<nav>`, `<header>`,
  `<footer>`, `<aside>`, scripts, styles, navigation roles, Sphinx's sidebars and related
  bars, and the pilcrow links of headings; parsed with lxml, neither engine's parser. Pages
  whose answer has fewer than 20 words are left out. A real page is table-heavy when its
  table cells hold over 30% of its answer's words.

Scores are bag-of-tokens precision, recall and F1 against the answer (`token_scores`; one
token per Chinese or Japanese character), reported per group (prose, tables, lists) and the
agreement of the engines with each other (F1 of one's text against the other's). Engines:
`trafilatura` and `resiliparse` as the stage runs them, and `resiliparse_raw`: resiliparse's
main-content text before the stage puts back what it dropped (`stages/extract/recover.py`).
The same run sweeps the recovery's threshold (`recover.KEPT_SHARE`, the share of the main
container's words below which resiliparse's text is replaced) over 0.3 to 0.9 and reports
resiliparse's mean F1 per group at each value. Results go to
bench/results/extract-quality.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from mixplane.stages.extract import Extract, recover  # noqa: E402
from mixplane.stages.extract.resiliparse_engine import ResiliparseEngine  # noqa: E402
from mixplane.stages.extract.trafilatura_engine import TrafilaturaEngine  # noqa: E402
from mixplane.synth.extraction import known_answer_pages, token_scores  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "extract-quality.json"
DOCS = Path("/usr/share/doc")
MIN_ANSWER_WORDS = 20
_MAIN = (
    "//main",
    "//*[@role='main']",
    "//article",
    "//div[contains(concat(' ', @class, ' '), ' body ')]",
    "//*[@id='content']",
    "//body",
)
_NOT_CONTENT = (
    ".//nav | .//header | .//footer | .//aside | .//script | .//style | .//noscript"
    " | .//*[@role='navigation'] | .//*[@role='banner'] | .//*[@role='contentinfo']"
    " | .//*[contains(concat(' ', @class, ' '), ' sphinxsidebar ')]"
    " | .//*[contains(concat(' ', @class, ' '), ' related ')]"
    " | .//*[contains(concat(' ', @class, ' '), ' headerlink ')]"
)


def engines() -> dict:
    return {
        "trafilatura": TrafilaturaEngine(Extract()),
        "resiliparse": ResiliparseEngine(Extract(engine="resiliparse")),
        "resiliparse_raw": ResiliparseEngine(Extract(engine="resiliparse"), recover=False),
    }


def real_answer(html: str) -> tuple[str, bool]:
    """The known answer of a real page (see the module's docstring) and whether it is
    table-heavy."""
    import lxml.html

    root = lxml.html.fromstring(html.encode("utf-8"))
    node = next((found[0] for path in _MAIN if (found := root.xpath(path))), root)
    for element in node.xpath(_NOT_CONTENT):
        if element.getparent() is not None:
            element.drop_tree()
    answer = node.text_content()
    cell_words = sum(len(cell.text_content().split()) for cell in node.xpath(".//td | .//th"))
    return answer, cell_words > 0.3 * len(answer.split())


def real_pages(step: int) -> Iterator[tuple[str, str, str, str]]:
    """(name, html, answer, group) of distinct HTML files under /usr/share/doc."""
    seen = set()
    for path in sorted(DOCS.rglob("*.html"))[::step]:
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        digest = hashlib.sha256(raw).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        html = raw.decode("utf-8", errors="replace")
        try:
            answer, heavy = real_answer(html)
        except ValueError:  # not parseable by lxml: no known answer
            continue
        if len(answer.split()) >= MIN_ANSWER_WORDS:
            yield str(path.relative_to(DOCS)), html, answer, "tables" if heavy else "other"


def run_page(engines: dict, order: list[str], html: str, answer: str) -> dict:
    """Scores, CPU milliseconds and text of each engine on one page."""
    row: dict = {}
    texts = {}
    for name in order:
        started = time.process_time()
        page = engines[name].extract(html)
        cpu = time.process_time() - started
        texts[name] = page.text if page else ""
        precision, recall, f1 = token_scores(answer, texts[name])
        row[name] = {"precision": precision, "recall": recall, "f1": f1, "cpu_ms": cpu * 1e3}
    row["agreement"] = token_scores(texts["trafilatura"], texts["resiliparse"])[2]
    return row


def measure(pages: list[tuple[str, str, str, str]], engines: dict) -> list[dict]:
    names = list(engines)
    for _, html, answer, _ in pages[:10]:  # warm-up: imports, caches
        run_page(engines, names, html, answer)
    rows = []
    for index, (name, html, answer, group) in enumerate(pages):
        order = names[index % len(names) :] + names[: index % len(names)]
        rows.append({"page": name, "group": group, **run_page(engines, order, html, answer)})
    return rows


def summarize(rows: list[dict], engine_names: list[str]) -> dict:
    """Per group and overall: mean precision/recall/F1, median and 10th-percentile F1, CPU."""
    groups = sorted({row["group"] for row in rows})
    summary = {}
    for group in ["all", *groups]:
        chosen = [row for row in rows if group in ("all", row["group"])]
        if not chosen:
            continue
        entry: dict = {"pages": len(chosen)}
        for engine in engine_names:
            values = [row[engine] for row in chosen]
            f1s = sorted(value["f1"] for value in values)
            cpu = [value["cpu_ms"] for value in values]
            entry[engine] = {
                "precision": round(statistics.fmean(v["precision"] for v in values), 4),
                "recall": round(statistics.fmean(v["recall"] for v in values), 4),
                "f1": round(statistics.fmean(f1s), 4),
                "f1_median": round(statistics.median(f1s), 4),
                "f1_p10": round(f1s[len(f1s) // 10], 4),
                "cpu_ms_mean": round(statistics.fmean(cpu), 3),
                "cpu_ms_median": round(statistics.median(cpu), 3),
            }
        agreement = [row["agreement"] for row in chosen]
        entry["agreement_f1_mean"] = round(statistics.fmean(agreement), 4)
        entry["agreement_f1_median"] = round(statistics.median(agreement), 4)
        summary[group] = entry
    return summary


def sweep_kept_share(sets: dict[str, list], shares: tuple[float, ...]) -> dict:
    """resiliparse's mean F1 per set and group for each recovery threshold."""
    engine = ResiliparseEngine(Extract(engine="resiliparse"))
    measured = recover.KEPT_SHARE
    found: dict = {}
    try:
        for share in shares:
            recover.KEPT_SHARE = share
            for label, pages in sets.items():
                for group in sorted({page[3] for page in pages}):
                    chosen = [page for page in pages if page[3] == group]
                    f1s = [token_scores(a, engine.extract(h).text)[2] for _, h, a, _ in chosen]
                    found.setdefault(f"{label}/{group}", {})[str(share)] = round(
                        statistics.fmean(f1s), 4
                    )
    finally:
        recover.KEPT_SHARE = measured
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=700, help="synthetic pages")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--real-step", type=int, default=1, help="every n-th real page")
    parser.add_argument("--install-docs", action="store_true", help="apt-get -doc packages")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.install_docs:
        subprocess.run(
            ["apt-get", "install", "-y", "python3-doc", "postgresql-doc", "git-doc"], check=True
        )
    chosen = engines()
    synthetic = [
        (f"synthetic-{i}-{page.kind}-{page.language}", page.html, page.answer, page.group)
        for i, page in enumerate(known_answer_pages(args.seed, args.pages))
    ]
    real = list(real_pages(args.real_step))
    results = {
        "command": "python -m bench.extract.quality " + " ".join(sys.argv[1:]),
        "versions": {name: type(engine).version() for name, engine in chosen.items()},
        "seed": args.seed,
        "known_answer_real": "text of the main element without navigation (bench docstring)",
        "sets": {},
    }
    for label, pages in (("synthetic", synthetic), ("real", real)):
        rows = measure(pages, chosen)
        results["sets"][label] = {
            "summary": summarize(rows, list(chosen)),
            "worst_resiliparse": sorted(
                (
                    {
                        "page": row["page"],
                        "resiliparse": round(row["resiliparse"]["f1"], 3),
                        "trafilatura": round(row["trafilatura"]["f1"], 3),
                    }
                    for row in rows
                ),
                key=lambda item: item["resiliparse"] - item["trafilatura"],
            )[:10],
        }
        print(label, json.dumps(results["sets"][label]["summary"], indent=1))
    results["kept_share_sweep"] = sweep_kept_share(
        {"synthetic": synthetic, "real": real}, (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    )
    print("kept_share_sweep", json.dumps(results["kept_share_sweep"], indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
