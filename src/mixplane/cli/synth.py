"""`mixplane synth`: write a synthetic multi-source raw corpus with its ground truth."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from mixplane.cli.common import JSON_OPTION, console, print_json, progress
from mixplane.errors import ConfigError

if TYPE_CHECKING:
    from mixplane.synth import ImageSynthSummary, SynthSummary

DEFAULT_DOCS = 10_000
DEFAULT_IMAGE_SAMPLES = 2_000
DEFAULT_AUDIO_SAMPLES = 200


def register(app: typer.Typer) -> None:
    app.command("synth")(synth)


def synth(
    out: str = typer.Argument(..., help="Output folder (raw/ and truth/ are written in it)."),
    docs: int | None = typer.Option(
        None,
        "--docs",
        "-n",
        min=0,
        help="Number of documents (default 10,000), or of samples with --images (default "
        "2,000) or --audio (default 200).",
    ),
    seed: int = typer.Option(0, "--seed", "-s", help="Random seed; same seed, same bytes."),
    faults: bool = typer.Option(
        False, "--faults", help="Also write broken files (bad JSON, truncated archives...)."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing raw/ and truth/ under OUT."
    ),
    images: bool = typer.Option(
        False,
        "--images",
        help="Write an image-caption corpus instead (WebDataset, img2dataset, image folder, "
        "URL list; planted near-duplicates and broken images; truth in truth/images.parquet).",
    ),
    url_base: str = typer.Option(
        "http://127.0.0.1:8765/",
        "--url-base",
        help="With --images: prefix of the URLs in raw/urls/urls.jsonl (serve raw/urls there).",
    ),
    web_profile: str = typer.Option(
        "compact",
        "--web-profile",
        help="compact: small UTF-8 pages; realistic: 20-200 KB pages with boilerplate, legacy "
        "charsets (windows-1252, Shift_JIS, GB2312) and a few cut at a size limit, as crawled.",
    ),
    governance: bool = typer.Option(
        False,
        "--governance",
        help="Plant licence statements and AI opt-outs (robots noai, TDMRep headers and meta) "
        "in web pages; truth in truth/governance.parquet.",
    ),
    audio: bool = typer.Option(
        False,
        "--audio",
        help="Write an audio-text corpus instead: espeak-ng speech with transcripts in "
        "WebDataset tars, planted duplicates and bad files; truth in truth/audio.parquet.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Generate web (WARC and HTML), wiki, code and forum files in several languages, with
    planted duplicates, spam, low-quality pages and PII, and their ground truth in truth/.

    Point the pipeline at OUT/raw so record ids match truth/duplicates.jsonl. With
    --images, point it at one source folder (OUT/raw/webdataset...) so ids match the
    doc_id column of truth/images.parquet; with --audio, at OUT/raw/webdataset.
    """
    if audio:
        if images or governance or faults:
            raise ConfigError(
                "--audio makes its own corpus: without --images, --governance, --faults"
            )
        from mixplane.synth.audio import generate_audio_corpus

        samples = DEFAULT_AUDIO_SAMPLES if docs is None else docs
        make = partial(generate_audio_corpus, out, samples, seed, overwrite=overwrite)
        _generate(out, samples, make, print_audio_summary, as_json)
        return
    if images:
        if governance:
            raise ConfigError("--governance is for the text corpus (its web pages)")
        if faults:
            raise ConfigError("--faults is for the text corpus; --images always has bad files")
        from mixplane.synth import generate_image_corpus

        samples = DEFAULT_IMAGE_SAMPLES if docs is None else docs
        make = partial(
            generate_image_corpus, out, samples, seed, url_base=url_base, overwrite=overwrite
        )
        _generate(out, samples, make, print_image_summary, as_json)
        return
    from mixplane.synth import generate_corpus

    docs = DEFAULT_DOCS if docs is None else docs
    make = partial(
        generate_corpus,
        out,
        docs,
        seed,
        faults,
        overwrite=overwrite,
        web_profile=web_profile,
        governance=governance,
    )
    _generate(out, docs, make, print_summary, as_json)


def _generate(
    out: str,
    total: int,
    generate: Callable[..., Any],
    show: Callable[[str, Any, float], None],
    as_json: bool,
) -> None:
    """`generate(on_progress=...)` under a progress bar of `total`, then its summary."""
    started = time.perf_counter()
    with progress(quiet=as_json) as bar:
        handle = bar.add_task("generating", total=total)
        summary = generate(on_progress=lambda done: bar.update(handle, completed=done))
    seconds = time.perf_counter() - started
    if as_json:
        print_json({"out": out, "seconds": round(seconds, 3), **summary.to_dict()})
    else:
        show(out, summary, seconds)


def print_summary(out: str, summary: SynthSummary, seconds: float) -> None:
    table = Table(title=f"{summary.documents:,} documents in {seconds:.1f}s", title_justify="left")
    table.add_column("source")
    table.add_column("documents", justify="right")
    table.add_column("files", justify="right")
    table.add_column("kinds")
    for source, info in summary.sources.items():
        kinds = summary.kinds_by_source.get(source, {})
        described = ", ".join(f"{kind} {n:,}" for kind, n in kinds.items())
        table.add_row(source, f"{info['documents']:,}", f"{len(info['files']):,}", described)
    console.print(table)
    languages = ", ".join(f"{code} {n:,}" for code, n in summary.languages.items())
    console.print(f"languages: {languages}")
    dupes = summary.duplicates
    console.print(f"duplicate pairs: {dupes['exact']:,} exact, {dupes['near']:,} near")
    if summary.faults:
        console.print(f"fault files: {summary.faults['bad_records']} bad records planted")
    console.print(f"ground truth: {out.rstrip('/')}/truth/  (ids relative to {out}/raw)")


def print_image_summary(out: str, summary: ImageSynthSummary, seconds: float) -> None:
    table = Table(
        title=f"{summary.samples:,} image samples in {seconds:.1f}s", title_justify="left"
    )
    table.add_column("source")
    table.add_column("samples", justify="right")
    table.add_column("files", justify="right")
    table.add_column("layout")
    for source, info in summary.sources.items():
        table.add_row(
            source, f"{info['samples']:,}", f"{len(info['files']):,}", summary.layout[source]
        )
    console.print(table)
    kinds = ", ".join(f"{kind} {n:,}" for kind, n in summary.kinds.items())
    console.print(f"kinds: {kinds}")
    copies = ", ".join(f"{kind} {n:,}" for kind, n in summary.copy_kinds.items())
    console.print(f"planted copies: {summary.duplicates['pairs']:,} ({copies})")
    languages = ", ".join(f"{code} {n:,}" for code, n in summary.languages.items())
    console.print(f"caption languages: {languages}")
    captions = ", ".join(f"{kind} {n:,}" for kind, n in summary.caption_kinds.items())
    console.print(f"captions: {captions}; EXIF-rotated: {summary.exif_rotated['samples']:,}")
    console.print(
        f"ground truth: {out.rstrip('/')}/truth/images.parquet  (doc_id relative to each "
        f"{out.rstrip('/')}/raw/SOURCE; URLs under {summary.url_base})"
    )


def print_audio_summary(out: str, summary, seconds: float) -> None:
    console.print(f"{summary.samples:,} clips in {summary.shards} shards in {seconds:.1f}s")
    for label, counts in (
        ("kinds", summary.kinds),
        ("made as", summary.transforms),
        ("bad files should be", summary.expected),
        ("languages", summary.languages),
        ("formats", summary.formats),
    ):
        console.print(f"{label}: " + ", ".join(f"{key} {n:,}" for key, n in counts.items()))
    console.print(f"ground truth: {summary.truth}  (doc_id relative to {out}/raw/webdataset)")
