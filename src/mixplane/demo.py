"""The whole journey on a built-in synthetic corpus, in a work folder you can inspect.

synth -> process (extract, normalize, langid, quality filters, pii, dedup) -> train a tokenizer
-> tokenize -> register in the catalog -> query -> mix -> stream batches through a PyTorch
DataLoader with two workers -> a governance report (`report.html`); then the same for
image-caption data (`mixplane.demo_images`).
Every step writes its files (and YAML configs) into the work folder, so each can be rerun by
hand with the `mixplane` command.

Example:
    >>> report = run_demo("demo-work", docs=3000)  # doctest: +SKIP
    >>> report["stream"]["batches"]  # doctest: +SKIP
    300
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mixplane.demo_steps import Stepper, component_shares, write_yaml

# Stop words per language let the Gopher quality filter judge non-English pages fairly.
STOP_WORDS = {
    "de": ["der", "die", "und", "das", "ist", "nicht", "mit", "zu", "den", "von"],
    "fr": ["le", "la", "et", "les", "des", "est", "que", "pour", "une", "dans"],
    "es": ["el", "la", "de", "que", "y", "en", "los", "es", "por", "una"],
    "zh": ["的", "是", "在", "了", "和", "有", "我", "这", "不", "人"],
    "ja": ["の", "に", "は", "を", "た", "が", "で", "て", "と", "し"],
}

QUERIES = {
    "German documents": "language = 'de'",
    "English web pages with good punctuation": (
        "source = 'web' AND language = 'en' AND fineweb_line_punct_ratio > 0.5"
    ),
    "Python code under a permissive license": (
        "source = 'code' AND language = 'python' AND license IN ('MIT', 'Apache-2.0')"
    ),
    "near-duplicate survivors": "dup_cluster_size > 1",
}


def pipeline_config(work: Path, workers: int) -> dict[str, Any]:
    raw = work / "corpus" / "raw"
    return {
        "input": [
            {"path": str(raw / "web" / "*.warc.gz"), "source": "web"},
            {"path": str(raw / "web_html" / "*.html"), "source": "web"},
            str(raw / "wiki" / "*.jsonl.zst"),
            str(raw / "code" / "*.jsonl.gz"),
            str(raw / "forum" / "*.parquet"),
        ],
        "output": str(work / "clean"),
        "workers": workers,
        "stages": [
            "extract",
            "normalize",
            {"langid": {"sources": ["web", "wiki", "forum"]}},
            {"gopher_repetition": {"sources": ["web"]}},
            {"gopher_quality": {"sources": ["web"], "stop_words_by_language": STOP_WORDS}},
            {"c4": {"sources": ["web"]}},
            {"fineweb": {"sources": ["web"]}},
            "pii",
            "dedup_exact",
            "dedup_minhash",
        ],
    }


def mixture_config(work: Path) -> dict[str, Any]:
    return {
        "catalog": str(work / "catalog.duckdb"),
        "seq_len": 256,
        "seed": 1234,
        "global_batch_size": 8,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.4},
            "code": {"where": "source = 'code'", "weight": 0.2},
            "web_en": {"where": "source = 'web' AND language = 'en'", "weight": 0.3},
            "forum": {"where": "source = 'forum'", "weight": 0.1},
        },
    }


def run_demo(
    work: str | Path,
    docs: int = 3000,
    seed: int = 7,
    workers: int = 2,
    batches: int = 300,
    on_step: Callable[[str, dict[str, Any]], None] | None = None,
    images: int = 600,
    audio: int = 120,
) -> dict[str, Any]:
    """Run every step in `work` (created if needed); returns a report per step. `images`
    image-caption samples go through the image-text journey after the text one, then `audio`
    spoken clips through the audio-text one (0: none; it needs espeak-ng to speak them)."""
    from mixplane.catalog import Catalog
    from mixplane.process.pipeline import run_pipeline
    from mixplane.synth import generate_corpus
    from mixplane.tokenize import tokenize_dataset, train_tokenizer

    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"work": str(work)}
    step = Stepper(report, on_step)

    with step("synth") as out:
        summary = generate_corpus(str(work / "corpus"), docs=docs, seed=seed, overwrite=True)
        out["documents"] = summary.documents
        out["sources"] = {name: s["documents"] for name, s in summary.sources.items()}

    with step("process") as out:
        config = pipeline_config(work, workers)
        write_yaml(work / "pipeline.yaml", config)
        stats = run_pipeline(config).stats
        out |= {k: stats[k] for k in ("documents_in", "kept", "excluded", "quarantined")}
        out["excluded_by"] = stats["excluded_by"]

    with step("tokenizer") as out:
        tokenizer = str(work / "tokenizer.json")
        out |= train_tokenizer(str(work / "clean"), vocab_size=4096, out=tokenizer)

    with step("tokenize") as out:
        stats = tokenize_dataset(
            {
                "input": str(work / "clean"),
                "output": str(work / "tokens"),
                "tokenizer": tokenizer,
                "eos": True,
                "workers": workers,
            }
        ).stats
        out |= {k: stats[k] for k in ("documents", "tokens", "shards")}

    with step("catalog") as out:
        catalog = Catalog(work / "catalog.duckdb")
        version = catalog.register(str(work / "tokens"), "demo")
        out["dataset"] = version.ref
        out["queries"] = {}
        for title, where in QUERIES.items():
            selection = catalog.select(where)
            out["queries"][title] = {
                "where": where,
                "documents": selection.documents,
                "tokens": selection.tokens,
            }

    with step("mix") as out:
        mixture = mixture_config(work)
        write_yaml(work / "mixture.yaml", mixture)
        out |= stream_batches(mixture, batches, workers)

    with step("report") as out:
        out |= write_report(work, version.ref)

    if images:
        from mixplane.demo_images import run_image_demo

        report |= run_image_demo(work, tokenizer, images, seed, workers, on_step=on_step)
    if audio:
        from mixplane.demo_audio import run_audio_demo

        report |= run_audio_demo(work, audio, seed, workers, on_step=on_step)
    return report


def write_report(work: Path, ref: str) -> dict[str, Any]:
    """The governance report of the registered version: `report.html` and the attribution
    list `attribution.csv` in `work`."""
    from mixplane.report import report_dataset
    from mixplane.report.html import render_html

    report = report_dataset(work / "catalog.duckdb", ref, attribution=str(work / "attribution.csv"))
    (work / "report.html").write_text(render_html(report), encoding="utf-8")
    return {
        "html": str(work / "report.html"),
        "csv": str(work / "attribution.csv"),
        "documents": report.documents,
        "licenses": len(report.by_license.rows),
        "removed": sum(removal.documents for removal in report.removals),
    }


def stream_batches(mixture: dict[str, Any], batches: int, workers: int) -> dict[str, Any]:
    """Stream `batches` batches through a torch DataLoader; compare realized with requested."""
    from mixplane.load import MixtureDataset
    from mixplane.load.torch import torch_loader

    dataset = MixtureDataset(mixture)
    names = dataset.names
    batch_size = mixture["global_batch_size"]
    loader = torch_loader(dataset, batch_size=batch_size, num_workers=workers)
    counts = np.zeros(len(names), dtype=np.int64)
    started = time.perf_counter()
    first_batch = None
    seen = 0
    for batch in loader:
        if first_batch is None:
            first_batch = time.perf_counter() - started
        counts += np.bincount(np.asarray(batch["component"]), minlength=len(names))
        seen += 1
        if seen == batches:
            break
    seconds = time.perf_counter() - started
    sequences = int(counts.sum())
    return {
        "batches": seen,
        "sequences": sequences,
        "tokens": sequences * mixture["seq_len"],
        "seconds_to_first_batch": round(first_batch or 0.0, 3),
        "sequences_per_second": round(sequences / seconds, 1),
        "components": component_shares(mixture, names, counts, "sequences"),
    }
