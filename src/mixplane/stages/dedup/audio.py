"""`dedup_audio`: near-duplicate clip removal on acoustic landmarks, with MinHash and LSH.

Example pipeline step:

    - dedup_audio: {threshold: 0.25, prefer_sources: [studio]}
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field, PrivateAttr, model_validator

from mixplane.document import Document, Drop
from mixplane.stages.audio.decode import decoded_clip
from mixplane.stages.audio.fingerprint import landmarks, to_analysis_rate
from mixplane.stages.dedup.minhash import band_keys, choose_bands_rows, signatures
from mixplane.stages.dedup.stage import DedupStage

DEFAULT_THRESHOLD = 0.25


class AudioDedup(DedupStage):
    """Removes clips that are copies of one recording: re-encoded, trimmed, louder or
    quieter, at another sample rate (see `mixplane.stages.audio.fingerprint`).

    Each clip's landmark set gets a MinHash signature of `bands * rows` values, picked
    from `threshold` and `hashes` as `dedup_minhash` does; clips agreeing on all rows of a
    band are candidates, kept as a pair when their whole signatures agree on at least
    `threshold` of the values (their estimated landmark Jaccard similarity). Distinct
    recordings share few landmarks (below 0.15 on the synthetic speech corpus) and copies
    many (above 0.3 after trimming a tenth of each end), hence the default 0.25. Every
    removed clip passes that check against its survivor itself (pairs that only chain are
    redrawn as stars, as in `dedup_image`). Clusters keep one survivor (by
    `prefer_sources`, then id) with `dup_cluster_id` and `dup_cluster_size`; the others are
    excluded with reason `duplicate` and the survivor's id in `duplicate_of`. A document
    whose clip does not decode is not compared and passes (`decode_audio` excludes it).

    Example:
        >>> stage = AudioDedup()
        >>> stage.bands, stage.rows, stage.verify_cutoff()
        (48, 2, 0.25)
    """

    name: ClassVar[str] = "dedup_audio"
    adds: ClassVar[tuple[str, ...]] = ("dup_cluster_id", "dup_cluster_size")
    cluster_metadata: ClassVar[bool] = True
    direct_survivors: ClassVar[bool] = True

    threshold: float = Field(
        DEFAULT_THRESHOLD, gt=0, lt=1, description="landmark Jaccard similarity of copies"
    )
    hashes: int = Field(256, ge=16, le=2048, description="signature budget when picking bands")
    seed: int = Field(1, ge=0, description="seed of the hash functions")
    _shape: tuple[int, int] = PrivateAttr((1, 1))

    @model_validator(mode="after")
    def _pick_bands(self) -> AudioDedup:
        self._shape = choose_bands_rows(self.threshold, self.hashes)
        return self

    @property
    def bands(self) -> int:
        return self._shape[0]

    @property
    def rows(self) -> int:
        return self._shape[1]

    def band_count(self) -> int:
        return self.bands

    def verify_cutoff(self) -> float | None:
        return self.threshold

    def index_params(self) -> dict[str, Any]:
        # The landmark scheme's version: stored keys of another scheme never match.
        return {"kind": "audio_landmarks", "version": 1, "bands": self.bands, "rows": self.rows,
                "seed": self.seed}  # fmt: skip

    def fingerprint(self, docs: list[Document]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sets = [clip_landmarks(doc) for doc in docs]
        sizes = np.array([len(found) for found in sets], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        flat = np.concatenate(sets) if sets else np.zeros(0, np.uint64)
        signature = signatures(flat, offsets, self.bands * self.rows, self.seed)
        keys = band_keys(signature, self.bands, self.rows)[:, :, None]
        return keys, sizes > 0, signature


def clip_landmarks(doc: Document) -> np.ndarray:
    """The landmark hashes of the document's clip (none when it has no clip that decodes)."""
    clip = decoded_clip(doc)
    if isinstance(clip, Drop):
        return np.zeros(0, dtype=np.uint64)
    info, samples = clip
    return landmarks(to_analysis_rate(samples, info.sample_rate))
