"""What every heuristic quality filter shares: the two modes and how signals are stored.

A filter is a list of checks run in a fixed order. Each check measures one signal (a count or
a ratio) and compares it with its threshold.

- `mode: filter` (default): the first failing check drops the document with that check's
  reason; the drop's detail names the signal, its value and the threshold. Documents that pass
  keep every measured signal as metadata (`keep_signals: false` turns that off), so the
  catalog can later select by them, e.g. `fineweb_line_punct_ratio > 0.5`.
- `mode: annotate`: nothing is dropped. Every signal is stored as metadata, plus
  `<stage>_reason`: the reason the filter would have dropped the document, or "" if it would
  have kept it.

Example:
    >>> from mixplane.stages.quality.fineweb import FineWeb
    >>> stage = FineWeb(mode="annotate")
    >>> doc = stage.apply(Document("d", "Short line\\nAnother one", "web"))
    >>> doc.metadata["fineweb_reason"]
    'too_few_punctuated_lines'
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

from mixplane.document import Document, Drop
from mixplane.stages.base import Result, Stage
from mixplane.stages.text import TextAnalysis, analyze


@dataclass(frozen=True, slots=True)
class Check:
    """One measured signal and whether it fails its threshold.

    `final` marks a failure after which later signals cannot be measured (an empty text);
    `detail` is added to the drop's detail when this check fails (the listed terms found).
    """

    signal: str
    value: float | int | bool | str | None
    limit: float | int | bool | None
    failed: bool
    reason: str
    final: bool = False
    detail: dict[str, Any] | None = None


def at_most(signal: str, value: float, limit: float | None, reason: str) -> Check:
    """A check that fails when `value` exceeds `limit` (None turns it off)."""
    return Check(signal, value, limit, limit is not None and value > limit, reason)


def at_least(signal: str, value: float, limit: float | None, reason: str) -> Check:
    """A check that fails when `value` is below `limit` (None turns it off)."""
    return Check(signal, value, limit, limit is not None and value < limit, reason)


def ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


class QualityFilter(Stage):
    """Base class: subclasses set `name` and `signal_prefix` and implement `checks`."""

    signal_prefix: ClassVar[str] = ""

    mode: Literal["filter", "annotate"] = Field(
        "filter",
        description="filter: drop documents failing a check; annotate: keep all, add signals",
    )
    keep_signals: bool = Field(
        True, description="in filter mode, store the measured signals on the documents kept"
    )
    language_aware: bool = Field(
        True,
        description="split text written without spaces (Chinese, Japanese, Thai) into "
        "characters; false splits all text like English",
    )

    def checks(self, doc: Document, analysis: TextAnalysis) -> Iterator[Check]:
        """The checks of this filter, in the order they are applied."""
        raise TypeError(f"{type(self).__name__} must implement checks()")

    def keep(self, doc: Document, analysis: TextAnalysis) -> Document:
        """Called in filter mode for a document that passed; may rewrite it."""
        return doc

    def prefix(self) -> str:
        """What the names of this filter's metadata signals start with."""
        return self.signal_prefix

    def analysis(self, doc: Document) -> TextAnalysis:
        """The shared analysis of the document's text, in its language when known."""
        return analyze(doc.text, doc.metadata.get("language") if self.language_aware else "en")

    def apply(self, doc: Document) -> Result:
        analysis = self.analysis(doc)
        prefix = self.prefix()
        signals: dict[str, float | int | bool] = {}
        if self.mode == "annotate":
            reason = ""
            for check in self.checks(doc, analysis):
                signals[prefix + check.signal] = check.value
                if check.failed and not reason:
                    reason = check.reason
                if check.failed and check.final:
                    break
            doc.metadata.update(signals)
            doc.metadata[f"{self.stage_name()}_reason"] = reason
            return doc
        for check in self.checks(doc, analysis):
            if check.failed:
                detail = {"signal": prefix + check.signal, "value": check.value}
                return Drop(check.reason, detail | {"limit": check.limit} | (check.detail or {}))
            signals[prefix + check.signal] = check.value
        if self.keep_signals:
            doc.metadata.update(signals)
        return self.keep(doc, analysis)
