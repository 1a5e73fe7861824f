"""`dedup_minhash`: near-duplicate removal with MinHash and locality-sensitive hashing.

Example pipeline step:

    - dedup_minhash: {threshold: 0.8, prefer_sources: [books], index: idx/minhash}
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field, model_validator

from mixplane.document import Document
from mixplane.stages.dedup.hashing import CACHED_POWERS, MAX_NGRAM, ngram_hashes, word_hashes
from mixplane.stages.dedup.minhash import (
    band_keys,
    choose_bands_rows,
    curve_midpoint,
    signatures,
)
from mixplane.stages.dedup.stage import DedupStage
from mixplane.stages.dedup.text import shingle_text


class MinHashDedup(DedupStage):
    """Removes near-duplicates: documents whose word n-gram sets are similar (Jaccard).

    Texts are normalised (lowercase, no accents or punctuation, digits as 0) and cut into
    word n-grams; texts mostly in a script without spaces (Chinese, Japanese, Thai...) into
    character n-grams. Each gets a MinHash signature of `bands * rows` values; documents
    agreeing on all rows of any band are candidates, kept as a pair only if their whole
    signatures agree on at least `verify_threshold` of the values: by default `threshold`
    when it is given (so `threshold: 0.8` joins pairs whose estimated Jaccard similarity is
    at least 0.8), else the similarity where the bands x rows curve rises fastest, about
    (1/bands)^(1/rows) (0.72 for the default 14 x 8). Clusters of pairs keep
    one survivor (by `prefer_sources`, then id), which gets `dup_cluster_id` (its own id)
    and `dup_cluster_size`; the others are excluded with reason `duplicate` and the
    survivor's id in `duplicate_of`.

    Example:
        >>> stage = MinHashDedup(threshold=0.8)
        >>> stage.bands, stage.rows, stage.verify_cutoff()
        (12, 9, 0.8)
    """

    name: ClassVar[str] = "dedup_minhash"
    adds: ClassVar[tuple[str, ...]] = ("dup_cluster_id", "dup_cluster_size")
    cluster_metadata: ClassVar[bool] = True

    ngram: int = Field(5, ge=1, le=MAX_NGRAM, description="words per shingle")
    char_ngram: int = Field(
        5, ge=1, le=MAX_NGRAM, description="characters per shingle in spaceless scripts"
    )
    bands: int = Field(14, ge=1, le=256, description="LSH bands")
    rows: int = Field(8, ge=1, le=64, description="signature values per band")
    threshold: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Jaccard similarity from which documents are duplicates: picks bands "
        "and rows, and is the verify_threshold",
    )
    hashes: int = Field(112, ge=1, le=2048, description="signature budget when picking bands")
    verify_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="agreement a candidate pair needs (default: threshold if given, else the "
        "LSH curve's midpoint; 0: none)",
    )
    seed: int = Field(1, ge=0, description="seed of the hash functions")

    @model_validator(mode="after")
    def _pick_bands(self) -> MinHashDedup:
        if self.threshold is not None:
            if {"bands", "rows"} & self.model_fields_set:
                raise ValueError("give either threshold or bands and rows, not both")
            self.bands, self.rows = choose_bands_rows(self.threshold, self.hashes)
        return self

    def band_count(self) -> int:
        return self.bands

    def verify_cutoff(self) -> float | None:
        if self.verify_threshold is None:
            return self.threshold or curve_midpoint(self.bands, self.rows)
        return self.verify_threshold or None

    def index_params(self) -> dict[str, Any]:
        return {
            "kind": "minhash",
            "ngram": self.ngram,
            "char_ngram": self.char_ngram,
            "bands": self.bands,
            "rows": self.rows,
            "seed": self.seed,
        }

    def fingerprint(self, docs: list[Document]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        count = self.bands * self.rows
        signature = np.zeros((len(docs), count), dtype=np.uint32)
        keyed = np.zeros(len(docs), dtype=bool)
        shingled = [shingle_text(doc.text) for doc in docs]
        for spaceless, size in ((False, self.ngram), (True, self.char_ngram)):
            chosen = [i for i, (_, flag) in enumerate(shingled) if flag == spaceless]
            for group in _by_bytes([shingled[i][0] for i in chosen], chosen):
                batch = b"".join(shingled[i][0] + b"\n" for i in group)
                words, starts = word_hashes(batch, len(group))
                hashes, offsets = ngram_hashes(words, starts, size)
                signature[group] = signatures(hashes, offsets, count, self.seed)
                keyed[group] = np.diff(offsets) > 0
        keys = band_keys(signature, self.bands, self.rows)[:, :, None]
        return keys, keyed, signature


def _by_bytes(texts: list[bytes], positions: list[int]) -> list[list[int]]:
    """Group positions so each group's texts fit the hashing's fast path."""
    groups: list[list[int]] = []
    current: list[int] = []
    size = 0
    for text, position in zip(texts, positions, strict=True):
        if current and size + len(text) + 1 > CACHED_POWERS:
            groups.append(current)
            current, size = [], 0
        current.append(position)
        size += len(text) + 1
    if current:
        groups.append(current)
    return groups
