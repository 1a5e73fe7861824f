"""`generate_corpus`: a realistic multi-source raw corpus with its ground truth.

Layout under the output folder:

- `raw/web/web-NNNN.warc.gz` (WARC responses, compact or realistic: see `webdress`) and
  `raw/web_html/page-NNNNNN.html`
- `raw/wiki/wiki-NNNN.jsonl.zst`, `raw/code/code-NNNN.jsonl.gz`, `raw/forum/forum-NNNN.parquet`
- `truth/summary.json`, `truth/duplicates.jsonl` (one line per generated pair),
  `truth/documents.parquet` (labels per document), `truth/pii.jsonl` (planted PII and
  look-alikes per document), with faults `truth/faults.json`, and with governance
  `truth/governance.parquet` (the licence and opt-out planted in each web page).

The same arguments give byte-identical files.
"""

from __future__ import annotations

from collections.abc import Callable

from mixplane.errors import ConfigError, InputError
from mixplane.io.atomic import join_url
from mixplane.io.urls import url_filesystem
from mixplane.synth.builder import CorpusBuilder
from mixplane.synth.faults import write_faults
from mixplane.synth.layout import ID_ROOT
from mixplane.synth.sinks import write_json
from mixplane.synth.summary import SynthSummary, summarize
from mixplane.synth.truth import TRUTH_FILES, TruthWriter
from mixplane.synth.webdress import PROFILES

PROGRESS_EVERY = 500


def generate_corpus(
    out: str,
    docs: int,
    seed: int,
    faults: bool = False,
    *,
    overwrite: bool = False,
    on_progress: Callable[[int], None] | None = None,
    web_profile: str = "compact",
    governance: bool = False,
) -> SynthSummary:
    """Write `docs` documents under `out` and return what was written.

    `faults` adds broken files beside the clean ones (their records are not counted in
    `docs`). An existing `raw/` or `truth/` folder is an error unless `overwrite` is set.
    `on_progress(done)` is called every few hundred documents. `web_profile` "realistic"
    writes the WARC pages as a crawl holds them (20-200 KB of boilerplate, legacy charsets,
    a few cut at a size limit: see `webdress`) with the same documents, ids and truth;
    "compact" (the default) writes them small and in UTF-8. `governance` plants licence
    statements and AI opt-outs in web pages (see `synth.governance`); the other documents,
    their ids and the other truth files are the same as without it.

    Example:
        >>> summary = generate_corpus("/tmp/corpus", docs=2000, seed=1)  # doctest: +SKIP
        >>> summary.documents  # doctest: +SKIP
        2000
    """
    if docs < 0:
        raise ConfigError(f"--docs must be zero or more, got {docs}")
    if web_profile not in PROFILES:
        raise ConfigError(f"web profile must be one of {', '.join(PROFILES)}, got {web_profile!r}")
    _prepare(out, overwrite)
    truth = TruthWriter(out)
    builder = CorpusBuilder(out, docs, seed, truth, web_profile, governance)
    for done, source in enumerate(builder.order, 1):
        builder.add(source)
        if on_progress is not None and (done % PROGRESS_EVERY == 0 or done == docs):
            on_progress(done)
    builder.close()
    tally = truth.close()
    fault_info = write_faults(out, seed) if faults else None
    summary = summarize(seed, tally, builder.file_names(), fault_info, ID_ROOT)
    if fault_info is not None:
        write_json(join_url(out, "truth/faults.json"), fault_info)
    write_json(join_url(out, TRUTH_FILES["summary"]), summary.to_dict())
    return summary


def _prepare(out: str, overwrite: bool) -> None:
    fs, path = url_filesystem(out)
    for folder in ("raw", "truth"):
        target = f"{path.rstrip('/')}/{folder}"
        if fs.exists(target):
            if not overwrite:
                raise InputError(
                    f"{join_url(out, folder)} already exists; pass --overwrite to replace it"
                )
            fs.rm(target, recursive=True)
