"""Scoring an image dedup run against the planted duplicates of a synthetic corpus.

Only samples the dedup saw count (those in `kept_ids` or `removed_ids`): a planted pair is
in play when both its members were seen, and it is caught when at least one of them was
removed. Every other seen sample is unique and should be kept, as should one member of
each pair; removing one of those is a false removal.

Example:
    >>> report = evaluate_image_dedup("corpus/truth", kept, removed)  # doctest: +SKIP
    >>> report["recall"] >= 0.95 and report["false_removal_rate"] < 0.01  # doctest: +SKIP
    True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import pyarrow.parquet as pq

from mixplane.errors import InputError
from mixplane.io.urls import url_filesystem
from mixplane.synth.images.truth import DUPLICATE_KINDS

SHOWN_MISSES = 20


def _truth_rows(truth_dir: str) -> list[dict[str, Any]]:
    fs, path = url_filesystem(truth_dir)
    path = path.rstrip("/")
    for candidate in (f"{path}/images.parquet", f"{path}/truth/images.parquet"):
        if fs.exists(candidate):
            with fs.open(candidate, "rb") as handle:
                columns = ["sample_id", "doc_id", "source", "kind", "copy_of", "copy_kind"]
                return pq.read_table(handle, columns=columns).to_pylist()
    raise InputError(f"{truth_dir}: no images.parquet (pass the corpus's truth/ folder)")


def evaluate_image_dedup(
    truth_dir: str, kept_ids: Iterable[str], removed_ids: Iterable[str]
) -> dict[str, Any]:
    """Recall on planted duplicates and the false removal rate among samples to keep.

    Ids may be sample ids, document ids as read from the source's folder, or
    `SOURCE/doc_id` (document ids read with `OUT/raw` as the input root). `truth_dir` is
    the corpus's `truth/` folder or the corpus folder itself.

    Example:
        >>> kept, removed = ["img-000001"], ["img-000007"]
        >>> report = evaluate_image_dedup("corpus", kept, removed)  # doctest: +SKIP
        >>> sorted(report)[:3]  # doctest: +SKIP
        ['caught', 'false_removal_rate', 'false_removals']
    """
    rows = _truth_rows(truth_dir)
    alias: dict[str, str] = {}
    for row in rows:
        alias[row["sample_id"]] = row["sample_id"]
        if row["doc_id"]:
            alias[row["doc_id"]] = row["sample_id"]
            alias[f"{row['source']}/{row['doc_id']}"] = row["sample_id"]
    unmatched = 0
    kept: set[str] = set()
    removed: set[str] = set()
    for ids, into in ((kept_ids, kept), (removed_ids, removed)):
        for doc_id in ids:
            if doc_id in alias:
                into.add(alias[doc_id])
            else:
                unmatched += 1
    seen = kept | removed
    pairs = [
        (row["copy_of"], row["sample_id"], row["copy_kind"])
        for row in rows
        if row["kind"] in DUPLICATE_KINDS and row["copy_of"] in seen and row["sample_id"] in seen
    ]
    in_pairs = {member for original, copy, _ in pairs for member in (original, copy)}
    unique = seen - in_pairs
    caught: Counter = Counter()
    total: Counter = Counter()
    misses, both_removed = [], 0
    for original, copy, kind in pairs:
        total[kind] += 1
        hits = (original in removed) + (copy in removed)
        if hits:
            caught[kind] += 1
        else:
            misses.append({"original": original, "copy": copy, "kind": kind})
        both_removed += hits == 2
    false_removals = len(unique & removed) + both_removed
    should_keep = len(unique) + len(pairs)
    return {
        "pairs": len(pairs),
        "caught": sum(caught.values()),
        "recall": sum(caught.values()) / len(pairs) if pairs else 1.0,
        "recall_by_kind": {k: caught[k] / n for k, n in sorted(total.items())},
        "unique": len(unique),
        "false_removals": false_removals,
        "false_removal_rate": false_removals / should_keep if should_keep else 0.0,
        "seen": len(seen),
        "unmatched_ids": unmatched,
        "missed": misses[:SHOWN_MISSES],
    }
