"""Which document of a group of semantic duplicates is kept: the order the rule walks.

Members of a k-means cluster are ordered by source preference (`prefer_sources`, best first;
other sources after), then by the `keep` rule, then by id, then by position in the input;
the paper's rule (`rule.py`) then keeps the first of every group. The `keep` rules:

- `farthest`: farthest from the cluster's centroid first (lowest cosine similarity to it),
  the paper's default ("keep hard examples");
- `nearest`: nearest to the centroid first (the paper's "easy" option);
- `longest`: the most characters first;
- `highest:PROPERTY`: the highest value of a numeric document property first (a score an
  earlier stage wrote, say `highest:quality_score`); documents without it come last.

Every rule is a number per document, lower first (`KeepRule.value`, `KeepRule.centroid_key`).

Example:
    >>> rule = KeepRule.parse("highest:quality_score")
    >>> rule.kind, rule.name
    ('highest', 'quality_score')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mixplane.document import Document

KINDS = ("farthest", "nearest", "longest", "highest")


@dataclass(frozen=True)
class KeepRule:
    """A parsed `keep` option."""

    kind: str
    name: str | None = None  # the property of `highest`

    @classmethod
    def parse(cls, text: str) -> KeepRule:
        """Read `farthest`, `nearest`, `longest` or `highest:PROPERTY`; ValueError otherwise.

        Example:
            >>> KeepRule.parse("longest")
            KeepRule(kind='longest', name=None)
        """
        kind, _, name = text.partition(":")
        if kind == "highest" and name:
            return cls(kind, name)
        if kind in KINDS and kind != "highest" and not name:
            return cls(kind)
        raise ValueError(
            f"keep must be farthest, nearest, longest or highest:PROPERTY, got {text!r}"
        )

    @property
    def uses_centroid(self) -> bool:
        return self.kind in ("farthest", "nearest")

    def value(self, doc: Document) -> float:
        """The document's key for `longest` and `highest` (lower first; NaN: last); NaN for
        the centroid rules, whose key is known only after clustering."""
        if self.kind == "longest":
            return -float(len(doc.text))
        if self.kind == "highest":
            score = doc.metadata.get(self.name or "")
            if isinstance(score, bool) or not isinstance(score, int | float):
                return math.nan
            return math.nan if math.isnan(score) else -float(score)
        return math.nan

    def centroid_key(self, similarity: np.ndarray) -> np.ndarray:
        """Keys from each document's cosine similarity to its centroid (lower first).

        Example:
            >>> KeepRule("farthest").centroid_key(np.array([0.9, 0.5], np.float32)).tolist()
            [0.8999999761581421, 0.5]
        """
        keys = similarity.astype(np.float64)
        return keys if self.kind == "farthest" else -keys
