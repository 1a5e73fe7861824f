"""`generate_image_corpus`: image-caption samples in four raw layouts, with ground truth.

Layout under the output folder (paths relative to it):

- `raw/webdataset/shard-NNNNN.tar`: WebDataset tars of 500 samples, members `KEY.jpg`
  (or `.png`, `.webp`), `KEY.json` (`sample_id`, `url`, and `caption` when there is one)
  and `KEY.txt` (the caption; absent when the sample has none). KEY is a six-digit serial
  without dots. The LAST shard is cut in the middle of one sample's image: the samples
  before the cut are readable originals, the cut one is `truncated_member`, the ones after
  it `lost_in_truncation`.
- `raw/img2dataset/NNNNN.tar` + `NNNNN.parquet` + `NNNNN_stats.json`, as img2dataset
  writes them: the tar holds only successful samples (`KEY.jpg`, `KEY.txt`, `KEY.json`
  with key, status, error_message, width, height, original_width, original_height,
  sha256, url, caption, sample_id); the parquet holds every row, including the
  `failed_to_download` ones (no image anywhere). KEY is the shard number then a
  four-digit index (`000000012`).
- `raw/folder/photo_NNNNNN.EXT` with a caption sidecar `photo_NNNNNN.txt` and/or
  `photo_NNNNNN.json` (`sample_id`, `url`, `caption`); no caption, no `.txt`.
- `raw/urls/urls.jsonl`: records `{"id", "url", "caption"}` with `url` =
  `URL_BASE + "images/NAME.EXT"` (URL_BASE defaults to `http://127.0.0.1:8765/`, so
  `python -m http.server 8765 --directory OUT/raw/urls` serves them), and the served files
  under `raw/urls/images/`. The `missing_url` samples' files are not written (404).
- `truth/images.parquet`: one row per planted sample (columns in
  `mixplane.synth.images.truth`), `truth/image_duplicates.jsonl`: one line per planted
  copy (`a` original, `b` copy, as sample ids and as `a_doc`/`b_doc` document ids,
  `kind`, `detail`), `truth/images_summary.json`: the summary.

Ids: every sample has a stable `sample_id` (`img-NNNNNN`, also in its JSON and as the
URL record's `id`). The truth's `doc_id` is the id mixplane's readers give the sample
when the input is the source's folder: `shard-00000.tar/000123` for input
`OUT/raw/webdataset` (the tar's path relative to that folder, a slash, the key),
`00000.tar/000000012` for `OUT/raw/img2dataset`, `photo_000045.jpg` for
`OUT/raw/folder`, and the record's `id` for `OUT/raw/urls/urls.jsonl`. With `OUT/raw` as
the common input root, the id is `SOURCE/doc_id` (e.g. `webdataset/shard-00000.tar/...`);
`evaluate_image_dedup` accepts every one of these forms.

The same arguments give byte-identical files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from mixplane.errors import ConfigError
from mixplane.io.atomic import join_url
from mixplane.synth.corpus import _prepare
from mixplane.synth.images.builder import ImageCorpusBuilder
from mixplane.synth.images.truth import TRUTH_FILES
from mixplane.synth.sinks import write_json

DEFAULT_URL_BASE = "http://127.0.0.1:8765/"
PROGRESS_EVERY = 250
ID_ROOTS = {
    "webdataset": "raw/webdataset",
    "img2dataset": "raw/img2dataset",
    "folder": "raw/folder",
    "urls": "raw/urls/urls.jsonl",
}
LAYOUT = {
    "webdataset": "raw/webdataset/shard-NNNNN.tar (the last one truncated mid-member)",
    "img2dataset": "raw/img2dataset/NNNNN.tar + NNNNN.parquet + NNNNN_stats.json",
    "folder": "raw/folder/photo_NNNNNN.EXT + .txt and/or .json caption sidecars",
    "urls": "raw/urls/urls.jsonl ({id, url, caption}) + raw/urls/images/",
}


@dataclasses.dataclass(frozen=True)
class ImageSynthSummary:
    """What an image corpus holds, as in `truth/images_summary.json`.

    Example:
        >>> summary = generate_image_corpus("demo", samples=2000, seed=7)  # doctest: +SKIP
        >>> summary.kinds["exact_duplicate"]  # doctest: +SKIP
        72
    """

    seed: int
    samples: int
    url_base: str
    sources: dict[str, dict[str, Any]]
    kinds: dict[str, int]
    expected: dict[str, int]
    languages: dict[str, int]
    caption_kinds: dict[str, int]
    copy_kinds: dict[str, int]
    image_formats: dict[str, int]
    exif_rotated: dict[str, int]
    duplicates: dict[str, int]
    truncated_shard: dict[str, Any] | None
    id_roots: dict[str, str]
    layout: dict[str, str]
    truth: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def generate_image_corpus(
    out: str,
    samples: int,
    seed: int,
    *,
    url_base: str = DEFAULT_URL_BASE,
    overwrite: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> ImageSynthSummary:
    """Write `samples` image-caption samples under `out` and return what was written.

    An existing `raw/` or `truth/` folder is an error unless `overwrite` is set;
    `on_progress(done)` is called every few hundred samples.

    Example:
        >>> summary = generate_image_corpus("/tmp/images", samples=2000, seed=1)  # doctest: +SKIP
        >>> summary.samples  # doctest: +SKIP
        2000
    """
    if samples < 0:
        raise ConfigError(f"--docs must be zero or more, got {samples}")
    if not url_base.endswith("/"):
        url_base += "/"
    _prepare(out, overwrite)
    builder = ImageCorpusBuilder(out, samples, seed, url_base)
    for done, source in enumerate(builder.order, 1):
        builder.add(source)
        if on_progress is not None and (done % PROGRESS_EVERY == 0):
            on_progress(done)
    builder.close()
    if on_progress is not None:
        on_progress(samples)
    builder.truth.write(out)
    summary = _summarize(builder, seed, url_base)
    write_json(join_url(out, TRUTH_FILES["summary"]), summary.to_dict())
    return summary


def _summarize(builder: ImageCorpusBuilder, seed: int, url_base: str) -> ImageSynthSummary:
    truth = builder.truth
    counts = truth.counts()
    per_source = counts["sources"]
    sources = {
        source: {"samples": per_source.get(source, 0), "files": builder.files.get(source, [])}
        for source in sorted(builder.counts)
    }
    rows = truth.rows
    truncated = None
    if builder.truncated_count:
        cut = [r for r in rows if r["kind"] == "truncated_member"][0]
        truncated = {
            "file": cut["file"],
            "readable": sum(
                1 for r in rows if r["file"] == cut["file"] and r["kind"] == "original"
            ),
            "truncated_member": cut["key"],
            "lost": counts["kinds"].get("lost_in_truncation", 0),
        }
    duplicates = {"pairs": len(truth.pairs)} | counts["copy_kinds"]
    return ImageSynthSummary(
        seed=seed,
        samples=len(rows),
        url_base=url_base,
        sources=sources,
        kinds=counts["kinds"],
        expected=counts["expected"],
        languages=counts["languages"],
        caption_kinds=counts["caption_kinds"],
        copy_kinds=counts["copy_kinds"],
        image_formats=counts["image_formats"],
        exif_rotated=counts["exif_rotated"],
        duplicates=duplicates,
        truncated_shard=truncated,
        id_roots=ID_ROOTS,
        layout=LAYOUT,
        truth=TRUTH_FILES,
    )
