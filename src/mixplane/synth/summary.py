"""What a generated corpus holds, counted from the builder's labels and pairs."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from typing import Any

TRUTH_FILES = {
    "summary": "truth/summary.json",
    "duplicates": "truth/duplicates.jsonl",
    "documents": "truth/documents.parquet",
    "pii": "truth/pii.jsonl",
}


@dataclasses.dataclass(frozen=True)
class SynthSummary:
    """Counts per source, language, kind of page and duplicate, as in `truth/summary.json`.

    `id_root` is the folder (relative to the corpus) against which the pipeline must resolve
    inputs for its record ids to match the ground truth.

    Example:
        >>> summary = generate_corpus("demo", docs=2000, seed=7)  # doctest: +SKIP
        >>> summary.sources["wiki"]["documents"]  # doctest: +SKIP
        400
    """

    seed: int
    documents: int
    sources: dict[str, dict[str, Any]]
    languages: dict[str, int]
    languages_by_source: dict[str, dict[str, int]]
    programming_languages: dict[str, int]
    kinds: dict[str, int]
    kinds_by_source: dict[str, dict[str, int]]
    duplicates: dict[str, Any]
    pii: dict[str, int]
    faults: dict[str, Any] | None
    id_root: str
    truth: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _sorted(counter: Counter) -> dict[str, int]:
    return dict(sorted(counter.items()))


def summarize(
    seed: int,
    labels: list[dict[str, Any]],
    pairs: list[dict[str, Any]],
    pii_rows: list[dict[str, Any]],
    files: dict[str, list[str]],
    faults: dict[str, Any] | None,
    id_root: str,
) -> SynthSummary:
    per_source: Counter = Counter()
    languages: Counter = Counter()
    by_source: dict[str, Counter] = defaultdict(Counter)
    kinds: Counter = Counter()
    kinds_by_source: dict[str, Counter] = defaultdict(Counter)
    programming: Counter = Counter()
    for label in labels:
        source = label["source"]
        per_source[source] += 1
        kinds[label["kind"]] += 1
        kinds_by_source[source][label["kind"]] += 1
        if label["language"] is not None:
            languages[label["language"]] += 1
            by_source[source][label["language"]] += 1
        if label["programming_language"] is not None:
            programming[label["programming_language"]] += 1
    near = Counter(str(pair["target_similarity"]) for pair in pairs if pair["kind"] == "near")
    exact_by_source = Counter(label["source"] for label in labels if label["copy_kind"] == "exact")
    duplicates = {
        "pairs": len(pairs),
        "exact": sum(1 for pair in pairs if pair["kind"] == "exact"),
        "near": sum(near.values()),
        "near_by_target": dict(sorted(near.items(), reverse=True)),
        "exact_by_source": _sorted(exact_by_source),
    }
    pii_types = Counter(item["type"] for row in pii_rows for item in row["pii"])
    pii = {"documents_with_pii": sum(1 for row in pii_rows if row["pii"])} | _sorted(pii_types)
    sources = {
        source: {"documents": per_source.get(source, 0), "files": names}
        for source, names in sorted(files.items())
    }
    truth = dict(TRUTH_FILES) | ({"faults": "truth/faults.json"} if faults else {})
    return SynthSummary(
        seed=seed,
        documents=len(labels),
        sources=sources,
        languages=_sorted(languages),
        languages_by_source={s: _sorted(c) for s, c in sorted(by_source.items())},
        programming_languages=_sorted(programming),
        kinds=_sorted(kinds),
        kinds_by_source={s: _sorted(c) for s, c in sorted(kinds_by_source.items())},
        duplicates=duplicates,
        pii=pii,
        faults=faults,
        id_root=id_root,
        truth=truth,
    )
