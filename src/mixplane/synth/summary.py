"""What a generated corpus holds, from the tallies kept while it was written."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from mixplane.synth.truth import TRUTH_FILES, Tally


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
    tally: Tally,
    files: dict[str, list[str]],
    faults: dict[str, Any] | None,
    id_root: str,
) -> SynthSummary:
    """The summary of a finished corpus from its tallies and file lists."""
    duplicates = {
        "pairs": sum(tally.pair_kinds.values()),
        "exact": tally.pair_kinds["exact"],
        "near": tally.pair_kinds["near"],
        "near_by_target": dict(sorted(tally.near_by_target.items(), reverse=True)),
        "exact_by_source": _sorted(tally.exact_by_source),
    }
    pii = {"documents_with_pii": tally.documents_with_pii} | _sorted(tally.pii_types)
    sources = {
        source: {"documents": tally.per_source.get(source, 0), "files": names}
        for source, names in sorted(files.items())
    }
    truth = dict(TRUTH_FILES) | ({"faults": "truth/faults.json"} if faults else {})
    return SynthSummary(
        seed=seed,
        documents=tally.documents,
        sources=sources,
        languages=_sorted(tally.languages),
        languages_by_source={s: _sorted(c) for s, c in sorted(tally.languages_by_source.items())},
        programming_languages=_sorted(tally.programming),
        kinds=_sorted(tally.kinds),
        kinds_by_source={s: _sorted(c) for s, c in sorted(tally.kinds_by_source.items())},
        duplicates=duplicates,
        pii=pii,
        faults=faults,
        id_root=id_root,
        truth=truth,
    )
