"""The image-text journey of the demo, in `WORK/images/`.

synth (WebDataset shards, an img2dataset folder, an image folder, a URL list served on
loopback) -> process (fetch, decode and validate, caption filters, langid, pHash dedup,
resize; image shards out) -> register beside the text data in the catalog -> query -> stream
an image-text mixture through a PyTorch DataLoader with two workers.

Example:
    >>> report = run_image_demo("demo-work", "demo-work/tokenizer.json")  # doctest: +SKIP
    >>> report["image_mix"]["batches"]  # doctest: +SKIP
    20
"""

from __future__ import annotations

import functools
import http.server
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from mixplane.demo_steps import Stepper, component_shares, write_yaml

IMAGE_QUERIES = {
    "English captions of large originals": "language = 'en' AND original_width >= 400",
    "German captions": "language = 'de'",
    "near-duplicate survivors": "dup_cluster_size > 1",
}


def image_pipeline_config(work: Path, workers: int) -> dict[str, Any]:
    raw = work / "images" / "corpus" / "raw"
    return {
        "input": [
            {"path": str(raw / "webdataset"), "source": "webdataset"},
            {"path": str(raw / "img2dataset"), "source": "img2dataset"},
            {"path": str(raw / "folder"), "format": "image_folder", "source": "folder"},
            {
                "path": str(raw / "urls" / "urls.jsonl"),
                "url_key": "url",
                "text_key": "caption",
                "source": "urls",
            },
        ],
        "output": str(work / "images" / "clean"),
        "output_format": "webdataset",
        "workers": workers,
        "stages": [
            {"fetch_images": {"sources": ["urls"], "timeout": 5}},
            {"decode_image": {"min_image_size": 64, "max_aspect_ratio": 3}},
            "caption_filter",
            "normalize",
            "langid",
            "pii",
            "dedup_image",
            {"resize_image": {"size": 256, "mode": "keep_ratio"}},
        ],
    }


def image_mixture_config(work: Path) -> dict[str, Any]:
    return {
        "kind": "image_text",
        "catalog": str(work / "catalog.duckdb"),
        "datasets": ["images"],
        "seed": 1234,
        "components": {
            "english": {"where": "language = 'en'", "weight": 0.5},
            "other_languages": {"where": "language <> 'en'", "weight": 0.5},
        },
    }


def run_image_demo(
    work: str | Path,
    tokenizer: str,
    samples: int = 600,
    seed: int = 7,
    workers: int = 2,
    batches: int = 20,
    on_step: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the image-text steps in `work` (the catalog is `work/catalog.duckdb`, shared with
    the text journey); `tokenizer` tokenizes the captions. Returns a report per step."""
    from mixplane.catalog import Catalog
    from mixplane.process.pipeline import run_pipeline
    from mixplane.synth.images import evaluate_image_dedup, generate_image_corpus

    work = Path(work)
    corpus = work / "images" / "corpus"
    report: dict[str, Any] = {}
    step = Stepper(report, on_step)

    with serve_folder(corpus / "raw" / "urls") as url_base:
        with step("image_synth") as out:
            summary = generate_image_corpus(
                str(corpus), samples, seed, url_base=url_base, overwrite=True
            )
            out["samples"] = summary.samples
            out["kinds"] = summary.kinds
            out["sources"] = {name: s["samples"] for name, s in summary.sources.items()}

        with step("image_process") as out:
            config = image_pipeline_config(work, workers)
            write_yaml(work / "images" / "pipeline.yaml", config)
            stats = run_pipeline(config).stats
            out |= {k: stats[k] for k in ("documents_in", "kept", "excluded", "quarantined")}
            out["excluded_by"] = stats["excluded_by"]
            out["quarantined_by"] = stats.get("quarantined_by", {})
            kept, removed = _dedup_outcome(work / "images" / "clean")
            dedup = evaluate_image_dedup(str(corpus), kept, removed)
            out["dedup"] = {k: dedup[k] for k in ("recall", "false_removal_rate") if k in dedup}

    with step("image_catalog") as out:
        catalog = Catalog(work / "catalog.duckdb")
        version = catalog.register(str(work / "images" / "clean"), "images")
        out["dataset"] = version.ref
        out["queries"] = {
            title: {"where": where, "samples": catalog.select(where, ["images"]).documents}
            for title, where in IMAGE_QUERIES.items()
        }

    with step("image_mix") as out:
        mixture = image_mixture_config(work)
        write_yaml(work / "images" / "mixture.yaml", mixture)
        out |= stream_image_batches(mixture, tokenizer, batches, workers)
    return report


def stream_image_batches(
    mixture: dict[str, Any], tokenizer: str, batches: int, workers: int, batch_size: int = 16
) -> dict[str, Any]:
    """Stream `batches` image-text batches through a DataLoader with `workers` workers."""
    from tokenizers import Tokenizer

    from mixplane.load.images import ImageTextDataset
    from mixplane.load.images.torch import image_text_loader

    dataset = ImageTextDataset(
        mixture,
        batch_size=batch_size,
        tokenizer=Tokenizer.from_file(tokenizer),
        image_size=224,
        context_length=32,
    )
    loader = image_text_loader(dataset, num_workers=workers)
    names = dataset.names
    counts = np.zeros(len(names), dtype=np.int64)
    started = time.perf_counter()
    seen, shape = 0, None
    while seen < batches:
        for batch in loader:
            shape = tuple(batch["images"].shape)
            counts += np.bincount(np.asarray(batch["component"]), minlength=len(names))
            seen += 1
            if seen == batches:
                break
    seconds = time.perf_counter() - started
    images = int(counts.sum())
    return {
        "batches": seen,
        "images": images,
        "batch_shape": shape,
        "images_per_second": round(images / seconds, 1),
        "components": component_shares(mixture, names, counts, "images"),
    }


def _dedup_outcome(clean: Path) -> tuple[list[str], list[str]]:
    """Ids the run kept, and ids `dedup_image` removed."""
    kept = [
        doc_id
        for path in sorted(clean.glob("part-*.meta.parquet"))
        for doc_id in pq.read_table(path, columns=["id"]).column("id").to_pylist()
    ]
    removed = []
    for path in sorted((clean / "_excluded").glob("*.parquet")):
        table = pq.read_table(path, columns=["id", "stage"]).to_pylist()
        removed += [row["id"] for row in table if row["stage"] == "dedup_image"]
    return kept, removed


@contextmanager
def serve_folder(folder: Path) -> Iterator[str]:
    """Serve `folder` over HTTP on loopback (the URL list's images); yields the base URL."""
    folder.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # the demo prints its own summary
        pass
