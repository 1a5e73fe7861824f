"""Licence and opt-out detection against the planted truth of `mixplane synth --governance`.

    .venv/bin/python bench/governance/detection.py [--docs 20000] [--seed 0]
        [--web-profile realistic]

Writes a synthetic corpus with licences and opt-outs planted in its web pages (WARC
responses and single HTML files), runs the `license` and `opt_out` stages through
`run_pipeline` before any extraction, and compares each page's properties with
`truth/governance.parquet`:

- licence: a page counts as detected when `license` is not `unknown`; precision is the
  share of detected pages whose identifier is the planted one, recall the share of pages
  with a planted licence given that identifier; per form of statement as well;
- opt-out: precision and recall of `opt_out`, per planted form.

Results go to bench/results/governance-detection-PROFILE.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mixplane import run_pipeline  # noqa: E402
from mixplane.synth import generate_corpus  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "governance-detection.json"


def measure(docs: int, seed: int, profile: str, work: Path) -> dict:
    generate_corpus(str(work / "corpus"), docs, seed, governance=True, web_profile=profile)
    raw = work / "corpus" / "raw"
    config = {
        "input": [
            {"path": str(raw / "web" / "*.warc.gz"), "format": "warc"},
            {"path": str(raw / "web_html" / "*.html"), "format": "html"},
        ],
        "output": str(work / "out"),
        "workers": 1,
        "stages": [{"license": {}}, {"opt_out": {}}],
    }
    started = time.perf_counter()
    result = run_pipeline(config)
    seconds = time.perf_counter() - started
    columns = ["id", "license", "license_source", "opt_out", "opt_out_signal"]
    found = {row["id"]: row for row in pq.read_table(work / "out", columns=columns).to_pylist()}
    truth = pq.read_table(work / "corpus" / "truth" / "governance.parquet").to_pylist()
    return {
        "docs": docs,
        "seed": seed,
        "web_profile": profile,
        "web_pages": len(truth),
        "kept": result.stats["kept"],
        "seconds": round(seconds, 2),
        # CPU seconds per stage, summed over the pipeline's batches (its own stats).
        "stage_seconds": {
            name: round(value, 2)
            for name, value in sorted(result.stats["seconds"].items())
            if name in ("read", "license", "opt_out")
        },
        "license": license_scores(truth, found),
        "opt_out": opt_out_scores(truth, found),
    }


def license_scores(truth: list[dict], found: dict[str, dict]) -> dict:
    detected = correct = planted = 0
    by_form: dict[str, Counter] = {}
    for row in truth:
        got = found[_doc_id(row, found)]["license"]
        form = row["license_form"] or "none"
        tally = by_form.setdefault(form, Counter())
        tally["pages"] += 1
        planted += row["license"] is not None
        if got != "unknown":
            detected += 1
            correct += got == row["license"]
            tally["detected"] += 1
        tally["right"] += got == (row["license"] or "unknown")
    return {
        "planted": planted,
        "detected": detected,
        "precision": _ratio(correct, detected),
        "recall": _ratio(correct, planted),
        "by_form": {form: dict(tally) for form, tally in sorted(by_form.items())},
    }


def opt_out_scores(truth: list[dict], found: dict[str, dict]) -> dict:
    true_pos = false_pos = planted = 0
    by_form: dict[str, Counter] = {}
    for row in truth:
        got = bool(found[_doc_id(row, found)]["opt_out"])
        form = row["opt_out_form"] or "none"
        tally = by_form.setdefault(form, Counter())
        tally["pages"] += 1
        tally["flagged"] += got
        planted += row["opt_out"]
        true_pos += got and row["opt_out"]
        false_pos += got and not row["opt_out"]
    return {
        "planted": planted,
        "flagged": true_pos + false_pos,
        "precision": _ratio(true_pos, true_pos + false_pos),
        "recall": _ratio(true_pos, planted),
        "by_form": {form: dict(tally) for form, tally in sorted(by_form.items())},
    }


def _doc_id(row: dict, found: dict[str, dict]) -> str:
    """A WARC page's id is its record id; a single HTML file's is its path below raw/, which
    the html reader names from the input's folder."""
    if row["id"] in found:
        return row["id"]
    return row["id"].removeprefix("web_html/")


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--web-profile", default="compact", choices=("compact", "realistic"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        results = measure(args.docs, args.seed, args.web_profile, Path(folder))
    out = RESULTS.with_name(f"{RESULTS.stem}-{args.web_profile}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
