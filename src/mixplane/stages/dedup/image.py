"""`dedup_image`: exact and near-duplicate image removal on a 64-bit perceptual hash.

Example pipeline step:

    - dedup_image: {threshold: 10, prefer_sources: [curated], index: idx/images}
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, model_validator

from mixplane.document import Document, Drop
from mixplane.stages.dedup.hashing import mix64
from mixplane.stages.dedup.stage import DedupStage
from mixplane.stages.image.background import flatten
from mixplane.stages.image.decode import upright_image
from mixplane.stages.image.imaging import DEFAULT_MAX_PIXELS
from mixplane.stages.image.phash import phash

BITS = 64
_HEX = re.compile(r"[0-9a-f]{16}")
_SHIFTS = np.arange(BITS - 1, -1, -1, dtype=np.uint64)


class ImageDedup(DedupStage):
    """Removes images whose perceptual hashes differ in at most `threshold` bits.

    The hash is the document's `phash` metadata (written by `decode_image`), else computed
    from its image; a document without a readable image is not compared and passes. The 64
    bits are cut into `bands` interleaved bands: documents with an equal band are
    candidates, kept as a pair when their whole hashes differ in at most `threshold` bits
    (the signature holds one value per bit, so agreement = 1 - distance / 64). Two hashes
    within `threshold` always share a band when `bands > threshold`; with fewer bands,
    pairs at larger distances may be missed (and more bits per band keep the candidate
    groups of a large corpus small). `threshold: 0` removes images with equal hashes.
    Clusters keep one survivor (by `prefer_sources`, then id) with `dup_cluster_id` and
    `dup_cluster_size`; the others are excluded with reason `duplicate` and the
    survivor's id in `duplicate_of`.

    Every removed image is within `threshold` bits of its `duplicate_of` itself: pairs
    chain (A near B, B near C, A and C far apart), so a group where a member is farther
    from the survivor than that is redrawn as stars: in survivor order, each image not yet
    taken survives and takes the images within `threshold` of it. Two images kept from one
    group are then more than `threshold` apart (unless both are in the index).

    Example:
        >>> ImageDedup(threshold=10).verify_cutoff()
        0.84375
    """

    name: ClassVar[str] = "dedup_image"
    adds: ClassVar[tuple[str, ...]] = ("dup_cluster_id", "dup_cluster_size")
    cluster_metadata: ClassVar[bool] = True
    direct_survivors: ClassVar[bool] = True

    threshold: int = Field(10, ge=0, le=32, description="largest Hamming distance (bits)")
    bands: int | None = Field(
        None, ge=1, le=BITS, description="LSH bands of hash bits (default: 1 if exact, else 8)"
    )
    window: int = Field(
        64,
        ge=1,
        description="neighbours a document that failed against its group's first "
        "member is compared with, on each side, in each band group",
    )
    max_pixels: int = Field(DEFAULT_MAX_PIXELS, gt=0, description="refuse larger headers")

    @model_validator(mode="after")
    def _default_bands(self) -> ImageDedup:
        if self.bands is None:
            self.bands = 1 if self.threshold == 0 else 8
        return self

    def recheck_window(self) -> int:
        # Hash bits are few and unevenly spread, so band groups are larger than MinHash's;
        # verifying a pair costs 64 comparisons, so a wide second look is cheap.
        return self.window

    def band_count(self) -> int:
        return int(self.bands or 1)

    def verify_cutoff(self) -> float | None:
        return 1.0 - self.threshold / BITS

    def index_params(self) -> dict[str, Any]:
        return {"kind": "phash", "bands": self.band_count()}

    def fingerprint(self, docs: list[Document]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        hashes = np.zeros(len(docs), dtype=np.uint64)
        keyed = np.zeros(len(docs), dtype=bool)
        for row, doc in enumerate(docs):
            value = self._hash(doc)
            if value is not None:
                hashes[row], keyed[row] = value, True
        bits = ((hashes[:, None] >> _SHIFTS) & np.uint64(1)).astype(np.uint32)
        return band_keys(bits, self.band_count()), keyed, bits

    def _hash(self, doc: Document) -> int | None:
        stored = doc.metadata.get("phash")
        if isinstance(stored, str) and _HEX.fullmatch(stored):
            return int(stored, 16)
        image = upright_image(doc, self.max_pixels)
        return None if isinstance(image, Drop) else phash(flatten(image))


def band_keys(bits: np.ndarray, bands: int) -> np.ndarray:
    """Keys `(n, bands, 1)`: band b holds bits b, b + bands, b + 2 * bands... of each hash.

    Interleaving spreads every band over low and higher frequencies of the DCT.

    Example:
        >>> bits = np.zeros((2, 64), np.uint32); bits[1, 0] = 1
        >>> keys = band_keys(bits, 8)
        >>> (keys[0, :, 0] == keys[1, :, 0]).tolist()
        [False, True, True, True, True, True, True, True]
    """
    keys = np.empty((len(bits), bands, 1), dtype=np.uint64)
    for band in range(bands):
        chosen = bits[:, band::bands].astype(np.uint64)
        weights = np.left_shift(np.uint64(1), np.arange(chosen.shape[1], dtype=np.uint64))
        value = (chosen * weights).sum(axis=1, dtype=np.uint64)
        keys[:, band, 0] = mix64(value + np.uint64(band + 1))
    return keys
