"""The numbers of a governance report, typed: what `report_dataset` and `report_mixture`
return, `to_json` gives, and the HTML shows.

Example:
    >>> Row("CC-BY-4.0", 12, 3400).to_json()
    {'key': 'CC-BY-4.0', 'documents': 12, 'tokens': 3400}
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Row:
    """Documents and tokens under one value (a licence, a source, a domain...)."""

    key: str
    documents: int
    tokens: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Breakdown:
    """Documents and tokens by the values of one property, most tokens first; `distinct`
    counts the values before the smallest were folded into `other`."""

    name: str
    rows: tuple[Row, ...]
    distinct: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distinct": self.distinct,
            "rows": [row.to_json() for row in self.rows],
        }


@dataclass(frozen=True)
class PiiKind:
    """Personal data of one kind: in the documents kept (`documents` holding any, `found`
    in all), how much of it was replaced (`redacted`: the pii stage's mode was `redact`),
    and documents the stage dropped for holding it (`dropped`, its `drop` mode)."""

    kind: str
    documents: int
    found: int
    redacted: int
    dropped: int


@dataclass(frozen=True)
class Removal:
    """Documents a step of a dataset's lineage excluded (or quarantined) for one reason."""

    dataset: str
    folder: str
    outcome: str  # "excluded" or "quarantined"
    stage: str
    reason: str
    documents: int


@dataclass(frozen=True)
class OptOut:
    """Opted-out documents by signal: `excluded` by the opt_out stage's `drop` mode, or
    kept with the annotation (its `annotate` mode)."""

    dataset: str
    signal: str
    outcome: str  # "excluded" or "kept"
    documents: int


@dataclass(frozen=True)
class Takedown:
    """A takedown request applied in a dataset's lineage, as its manifest records it."""

    dataset: str
    folder: str
    request: str
    reference: str | None
    criteria: dict[str, Any]
    at: str | None
    documents: int
    tokens: int
    shards_rewritten: int


@dataclass(frozen=True)
class Step:
    """One step of a dataset's lineage, with what its statistics say it did."""

    dataset: str
    folder: str
    kind: str
    created_at: str | None
    documents_in: int | None
    kept: int | None
    excluded: int | None
    quarantined: int | None


@dataclass(frozen=True)
class Lineage:
    """What a dataset version's whole lineage removed, redacted and took down."""

    steps: tuple[Step, ...] = ()
    removals: tuple[Removal, ...] = ()
    opt_outs: tuple[OptOut, ...] = ()
    takedowns: tuple[Takedown, ...] = ()
    pii_modes: dict[str, str] = field(default_factory=dict)  # dataset -> mode of its pii stage
    pii_dropped: dict[str, int] = field(default_factory=dict)  # kind -> documents dropped


@dataclass(frozen=True)
class Report:
    """A governance report of a dataset version, or of what a mixture's first steps read.

    Example:
        >>> report = report_dataset("catalog.duckdb", "web@2")  # doctest: +SKIP
        >>> report.by_license.rows[0]  # doctest: +SKIP
        Row(key='unknown', documents=147, tokens=180211)
    """

    subject: str
    kind: str  # "dataset" or "mixture"
    datasets: tuple[str, ...]
    documents: int
    tokens: int
    by_dataset: Breakdown
    by_license: Breakdown
    by_source: Breakdown
    by_domain: Breakdown
    by_language: Breakdown
    pii: tuple[PiiKind, ...]
    lineage: Lineage
    reads: dict[str, Any] | None = None  # a mixture: steps, sequences, tokens per sequence

    @property
    def removals(self) -> tuple[Removal, ...]:
        return self.lineage.removals

    @property
    def dedup(self) -> tuple[Removal, ...]:
        """The removals of deduplication stages."""
        return tuple(r for r in self.lineage.removals if r.stage.startswith("dedup"))

    @property
    def breakdowns(self) -> tuple[Breakdown, ...]:
        return (self.by_dataset, self.by_license, self.by_source, self.by_domain, self.by_language)

    def to_json(self) -> dict[str, Any]:
        """Every number, as plain JSON types."""
        lineage = self.lineage
        return {
            "subject": self.subject,
            "kind": self.kind,
            "datasets": list(self.datasets),
            "reads": self.reads,
            "documents": self.documents,
            "tokens": self.tokens,
            **{f"by_{b.name}": b.to_json() for b in self.breakdowns},
            "pii": [asdict(kind) for kind in self.pii],
            "pii_modes": dict(lineage.pii_modes),
            "removals": [asdict(r) for r in lineage.removals],
            "dedup": [asdict(r) for r in self.dedup],
            "opt_outs": [asdict(o) for o in lineage.opt_outs],
            "takedowns": [asdict(t) for t in lineage.takedowns],
            "steps": [asdict(s) for s in lineage.steps],
        }
