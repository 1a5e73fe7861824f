"""The ground truth of an image-caption corpus: one row per planted sample, the duplicate
pairs, and the summary's counts.

Columns of `truth/images.parquet` (see `TRUTH_SCHEMA`): `sample_id` (the stable id also in
each sample's JSON), `doc_id` (the id the mixplane reader gives the sample when the input
is the source's folder, e.g. `OUT/raw/webdataset`; null when no reader sees it), `source`,
`file` (relative to the corpus folder), `key`, `kind`, `expected`, `copy_of` and
`copy_of_doc` (the original's sample and document ids), `copy_kind`, `copy_detail`,
`language`, `caption_kind`, `caption`, `email`, `image_format`, `width` and `height` (as
displayed, after the EXIF orientation), `stored_width`, `stored_height`,
`exif_orientation` (0 when untagged), `image_bytes`, `sha256`, `url`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.io.atomic import atomic_open, join_url

TRUTH_FILES = {
    "samples": "truth/images.parquet",
    "duplicates": "truth/image_duplicates.jsonl",
    "summary": "truth/images_summary.json",
}
# What the pipeline should do with each kind of sample.
EXPECTED = {
    "original": "keep",
    "near_duplicate": "duplicate",
    "exact_duplicate": "duplicate",
    "corrupt": "undecodable",
    "truncated": "undecodable",
    "empty": "undecodable",
    "bomb": "undecodable",
    "tiny": "too_small",
    "extreme_aspect": "bad_aspect",
    "truncated_member": "quarantined_by_reader",
    "lost_in_truncation": "not_read",
    "failed_download": "not_read",
    "missing_url": "fetch_failed",
}
DUPLICATE_KINDS = ("near_duplicate", "exact_duplicate")
_STRING = pa.string()
_INT = pa.int64()
TRUTH_SCHEMA = pa.schema(
    [
        ("sample_id", _STRING),
        ("doc_id", _STRING),
        ("source", _STRING),
        ("file", _STRING),
        ("key", _STRING),
        ("kind", _STRING),
        ("expected", _STRING),
        ("copy_of", _STRING),
        ("copy_of_doc", _STRING),
        ("copy_kind", _STRING),
        ("copy_detail", _STRING),
        ("language", _STRING),
        ("caption_kind", _STRING),
        ("caption", _STRING),
        ("email", _STRING),
        ("image_format", _STRING),
        ("width", _INT),
        ("height", _INT),
        ("stored_width", _INT),
        ("stored_height", _INT),
        ("exif_orientation", _INT),
        ("image_bytes", _INT),
        ("sha256", _STRING),
        ("url", _STRING),
    ]
)


class ImageTruth:
    """Rows and pairs gathered while the corpus is written; `write` stores them."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.pairs: list[dict[str, Any]] = []
        self.by_id: dict[str, dict[str, Any]] = {}

    def add(self, row: dict[str, Any]) -> None:
        row = {name: row.get(name) for name in TRUTH_SCHEMA.names}
        row["expected"] = EXPECTED[row["kind"]]
        self.rows.append(row)
        self.by_id[row["sample_id"]] = row
        if row["kind"] in DUPLICATE_KINDS:
            self.pairs.append(
                {
                    "a": row["copy_of"],
                    "b": row["sample_id"],
                    "a_doc": row["copy_of_doc"],
                    "b_doc": row["doc_id"],
                    "kind": row["copy_kind"],
                    "detail": row["copy_detail"],
                }
            )

    def counts(self) -> dict[str, dict[str, int]]:
        def tally(column: str) -> dict[str, int]:
            return dict(sorted(Counter(r[column] for r in self.rows if r[column]).items()))

        return {
            "kinds": tally("kind"),
            "sources": tally("source"),
            "languages": tally("language"),
            "caption_kinds": tally("caption_kind"),
            "copy_kinds": tally("copy_kind"),
            "image_formats": tally("image_format"),
            "expected": tally("expected"),
            "exif_rotated": {"samples": sum(1 for r in self.rows if r["exif_orientation"])},
        }

    def write(self, out: str) -> None:
        columns = {name: [row[name] for row in self.rows] for name in TRUTH_SCHEMA.names}
        with atomic_open(join_url(out, TRUTH_FILES["samples"])) as handle:
            pq.write_table(pa.table(columns, TRUTH_SCHEMA), handle, compression="zstd")
        with atomic_open(join_url(out, TRUTH_FILES["duplicates"])) as handle:
            for pair in self.pairs:
                handle.write(orjson.dumps(pair, option=orjson.OPT_SORT_KEYS) + b"\n")
