"""The ground truth, streamed to `truth/` while documents are written, and its tallies.

Nothing grows with the corpus in memory: labels go to Parquet in row groups, pairs and PII
to JSON Lines, and the summary is built from counters.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.io.atomic import atomic_open, join_url

TRUTH_FILES = {
    "summary": "truth/summary.json",
    "duplicates": "truth/duplicates.jsonl",
    "documents": "truth/documents.parquet",
    "pii": "truth/pii.jsonl",
}
LABEL_COLUMNS = (
    "id", "source", "file", "language", "programming_language", "kind", "copy_of", "copy_kind",
)  # fmt: skip
LABEL_SCHEMA = pa.schema([(name, pa.string()) for name in LABEL_COLUMNS])
LABEL_ROW_GROUP = 50_000


@dataclass
class Tally:
    """Counts for the summary, updated document by document."""

    documents: int = 0
    per_source: Counter = field(default_factory=Counter)
    languages: Counter = field(default_factory=Counter)
    languages_by_source: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    kinds: Counter = field(default_factory=Counter)
    kinds_by_source: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    programming: Counter = field(default_factory=Counter)
    pair_kinds: Counter = field(default_factory=Counter)
    near_by_target: Counter = field(default_factory=Counter)
    exact_by_source: Counter = field(default_factory=Counter)
    pii_types: Counter = field(default_factory=Counter)
    documents_with_pii: int = 0


class TruthWriter:
    """Writes `truth/documents.parquet`, `truth/duplicates.jsonl` and `truth/pii.jsonl`."""

    def __init__(self, out: str):
        self._stack = ExitStack()
        self._pairs = self._stack.enter_context(
            atomic_open(join_url(out, TRUTH_FILES["duplicates"]))
        )
        self._pii = self._stack.enter_context(atomic_open(join_url(out, TRUTH_FILES["pii"])))
        labels = self._stack.enter_context(atomic_open(join_url(out, TRUTH_FILES["documents"])))
        self._labels = pq.ParquetWriter(labels, LABEL_SCHEMA, compression="zstd")
        self._rows: dict[str, list[Any]] = {name: [] for name in LABEL_COLUMNS}
        self.tally = Tally()

    def document(self, label: dict[str, Any], pii: list[dict], lookalikes: list[dict]) -> None:
        """Record one document's labels (and planted PII, if any)."""
        for name, values in self._rows.items():
            values.append(label[name])
        if len(self._rows["id"]) >= LABEL_ROW_GROUP:
            self._flush()
        tally, source = self.tally, label["source"]
        tally.documents += 1
        tally.per_source[source] += 1
        tally.kinds[label["kind"]] += 1
        tally.kinds_by_source[source][label["kind"]] += 1
        if label["language"] is not None:
            tally.languages[label["language"]] += 1
            tally.languages_by_source[source][label["language"]] += 1
        if label["programming_language"] is not None:
            tally.programming[label["programming_language"]] += 1
        if label["copy_kind"] == "exact":
            tally.exact_by_source[source] += 1
        if pii or lookalikes:
            row = {"id": label["id"], "pii": pii, "lookalikes": lookalikes}
            self._pii.write(orjson.dumps(row) + b"\n")
            tally.documents_with_pii += bool(pii)
            tally.pii_types.update(item["type"] for item in pii)

    def pair(self, pair: dict[str, Any]) -> None:
        """Record one generated duplicate pair."""
        self._pairs.write(orjson.dumps(pair) + b"\n")
        self.tally.pair_kinds[pair["kind"]] += 1
        if pair["kind"] == "near":
            self.tally.near_by_target[str(pair["target_similarity"])] += 1

    def close(self) -> Tally:
        self._flush()
        self._labels.close()
        self._stack.close()
        return self.tally

    def _flush(self) -> None:
        if self._rows["id"]:
            self._labels.write_table(pa.table(self._rows, schema=LABEL_SCHEMA))
            self._rows = {name: [] for name in LABEL_COLUMNS}
