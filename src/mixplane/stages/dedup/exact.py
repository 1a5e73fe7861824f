"""`dedup_exact`: drop documents whose normalised text equals an earlier survivor's.

Example pipeline step:

    - dedup_exact: {ignore_punctuation: true, prefer_sources: [wikipedia], index: idx/exact}
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import xxhash
from pydantic import Field

from mixplane.document import Document
from mixplane.stages.dedup.stage import DedupStage
from mixplane.stages.dedup.text import normalize_exact

_LOW = (1 << 64) - 1


class ExactDedup(DedupStage):
    """Removes exact duplicates (after normalisation) across the whole run.

    Each text is reduced to a 128-bit xxh3 hash of its normalised form; documents sharing a
    hash form a cluster whose survivor is chosen by `prefer_sources`, then id. A dropped
    document is excluded with reason `duplicate` and the survivor's id in `duplicate_of`.

    Example:
        >>> keys, _, _ = ExactDedup(ignore_punctuation=True).fingerprint(
        ...     [Document("a", "Hi, there", "s"), Document("b", "hi there!", "s")])
        >>> bool((keys[0] == keys[1]).all())
        True
    """

    name: ClassVar[str] = "dedup_exact"
    key_width: ClassVar[int] = 2

    ignore_case: bool = Field(True, description="compare texts case-insensitively")
    ignore_whitespace: bool = Field(True, description="collapse runs of whitespace, trim ends")
    ignore_punctuation: bool = Field(False, description="ignore punctuation and symbols")

    def index_params(self) -> dict[str, Any]:
        return {
            "kind": "exact",
            "ignore_case": self.ignore_case,
            "ignore_whitespace": self.ignore_whitespace,
            "ignore_punctuation": self.ignore_punctuation,
        }

    def fingerprint(self, docs: list[Document]) -> tuple[np.ndarray, np.ndarray, None]:
        keys = np.empty((len(docs), 1, 2), dtype=np.uint64)
        for row, doc in enumerate(docs):
            text = normalize_exact(
                doc.text, self.ignore_case, self.ignore_whitespace, self.ignore_punctuation
            )
            digest = xxhash.xxh3_128_intdigest(text.encode("utf-8", "surrogatepass"))
            keys[row, 0, 0] = digest >> 64
            keys[row, 0, 1] = digest & _LOW
        return keys, np.ones(len(docs), dtype=bool), None
