"""The audio-text journey of the demo, in `WORK/audio/`.

synth (espeak-ng speech in five languages, planted copies and bad files, in WebDataset
tars) -> process (decode and validate, resample to 16 kHz mono FLAC, quality bounds,
acoustic dedup, langid on the transcripts; audio shards out) -> register beside the text
and image data in the catalog -> query -> stream an audio-text mixture, batched by
duration, through a PyTorch DataLoader with two workers.

Example:
    >>> report = run_audio_demo("demo-work")  # doctest: +SKIP
    >>> report["audio_mix"]["padding"] < 0.10  # doctest: +SKIP
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from mixplane.demo_steps import Stepper, component_shares, write_yaml

AUDIO_QUERIES = {
    "clips of 5 s or more": "duration >= 5.0",
    "German transcripts": "language = 'de'",
    "French or Spanish, 16 kHz": "language IN ('fr', 'es') AND sample_rate = 16000",
}


def audio_pipeline_config(work: Path, workers: int) -> dict[str, Any]:
    return {
        "input": str(work / "audio" / "corpus" / "raw" / "webdataset"),
        "output": str(work / "audio" / "clean"),
        "output_format": "webdataset",
        "output_media": "audio",
        "workers": workers,
        "stages": [
            {"decode_audio": {"max_duration": 60}},
            {"resample_audio": {"sample_rate": 16000, "channels": 1}},
            {"audio_quality": {"min_duration": 0.5, "max_silence_ratio": 0.8}},
            "dedup_audio",
            "langid",
        ],
    }


def audio_mixture_config(work: Path) -> dict[str, Any]:
    return {
        "kind": "audio_text",
        "catalog": str(work / "catalog.duckdb"),
        "datasets": ["speech"],
        "seed": 1234,
        "weigh_by": "seconds",
        "components": {
            "english": {"where": "language = 'en'", "weight": 0.4},
            "other_languages": {"where": "language <> 'en'", "weight": 0.6},
        },
    }


def run_audio_demo(
    work: str | Path,
    clips: int = 120,
    seed: int = 7,
    workers: int = 2,
    batches: int = 8,
    on_step: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the audio-text steps in `work` (the catalog is `work/catalog.duckdb`, shared
    with the other journeys). Returns a report per step."""
    from mixplane.catalog import Catalog
    from mixplane.process.pipeline import run_pipeline
    from mixplane.synth.audio import generate_audio_corpus, read_audio_truth

    work = Path(work)
    corpus = work / "audio" / "corpus"
    report: dict[str, Any] = {}
    step = Stepper(report, on_step)

    with step("audio_synth") as out:
        summary = generate_audio_corpus(str(corpus), clips, seed, overwrite=True)
        out["clips"] = sum(summary.kinds.values())
        out["kinds"] = dict(summary.kinds)

    with step("audio_process") as out:
        config = audio_pipeline_config(work, workers)
        write_yaml(work / "audio" / "pipeline.yaml", config)
        stats = run_pipeline(config).stats
        out |= {k: stats[k] for k in ("documents_in", "kept", "excluded", "quarantined")}
        out["excluded_by"] = stats["excluded_by"]
        out["dedup"] = dedup_outcome(read_audio_truth(str(corpus)), work / "audio" / "clean")

    with step("audio_catalog") as out:
        catalog = Catalog(work / "catalog.duckdb")
        version = catalog.register(str(work / "audio" / "clean"), "speech")
        out["dataset"] = version.ref
        out["queries"] = {
            title: {"where": where, "clips": catalog.select(where, ["speech"]).documents}
            for title, where in AUDIO_QUERIES.items()
        }

    with step("audio_mix") as out:
        mixture = audio_mixture_config(work)
        write_yaml(work / "audio" / "mixture.yaml", mixture)
        out |= stream_audio_batches(mixture, batches, workers)
    return report


def dedup_outcome(truth, clean: Path) -> dict[str, Any]:
    """How `dedup_audio` did against the planted copies: each group (an original and its
    copies) that reached it should keep exactly one clip. Recall: copies removed of those
    to remove; false removals: clips removed beyond that (a group left with none)."""
    excluded = pq.read_table(clean / "_excluded", columns=["id", "stage"]).to_pylist()
    earlier = {row["id"] for row in excluded if row["stage"] != "dedup_audio"}
    removed = {row["id"] for row in excluded if row["stage"] == "dedup_audio"}
    by_sample = dict(zip(truth.sample_id, truth.doc_id, strict=True))
    groups: dict[str, list[str]] = {}
    for doc, kind, original in zip(truth.doc_id, truth.kind, truth.duplicate_of, strict=True):
        if kind != "bad" and doc not in earlier:
            groups.setdefault(by_sample[original] if kind == "duplicate" else doc, []).append(doc)
    to_remove = sum(len(members) - 1 for members in groups.values())
    hits = [(len(removed.intersection(members)), len(members)) for members in groups.values()]
    caught = sum(min(hit, size - 1) for hit, size in hits)
    return {
        "planted_copies": to_remove,
        "recall": round(caught / max(1, to_remove), 3),
        "false_removals": sum(hit for hit, _ in hits) - caught,
    }


def stream_audio_batches(mixture: dict[str, Any], batches: int, workers: int) -> dict[str, Any]:
    """Stream `batches` duration-bucketed batches through a DataLoader with `workers`
    workers: the clips' seconds per component, and the share of padding."""
    from mixplane.load.audio import AudioTextDataset
    from mixplane.load.audio.torch import audio_text_loader

    dataset = AudioTextDataset(mixture, batch_seconds=24.0, sample_rate=16000)
    loader = audio_text_loader(dataset, num_workers=workers)
    names = dataset.names
    seconds = np.zeros(len(names))
    clips = padded = real = seen = 0
    started = time.perf_counter()
    while seen < batches:
        for batch in loader:
            lengths = np.asarray(batch["lengths"])
            components = np.asarray(batch["component"])
            seconds += np.bincount(components, weights=lengths, minlength=len(names)) / 16000
            clips += len(lengths)
            real += int(lengths.sum())
            padded += int(np.asarray(batch["audio"]).size)
            seen += 1
            if seen == batches:
                break
    elapsed = time.perf_counter() - started
    return {
        "batches": seen,
        "clips": clips,
        "audio_seconds": round(real / 16000, 1),
        "padding": round(1 - real / max(1, padded), 4),
        "clips_per_second": round(clips / elapsed, 1),
        "components": component_shares(mixture, names, np.round(seconds * 1000), "audio ms"),
    }
