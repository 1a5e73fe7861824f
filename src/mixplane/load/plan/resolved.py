"""`ResolvedMixture`: a mixture's components as concrete documents (the output of
`resolve`, and what the plan cache stores)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mixplane.load.plan.ranges import DocumentRanges, ShardKey
from mixplane.mix.spec import MixtureSpec
from mixplane.mix.tree import MixtureTree


@dataclass
class ResolvedMixture:
    """The documents of every leaf component, over one shared list of shards."""

    spec: MixtureSpec
    tree: MixtureTree
    shards: tuple[ShardKey, ...]
    ranges: list[DocumentRanges]
    lengths: list[np.ndarray]  # per leaf, per document: tokens (+1 when an EOS is appended)
    starts: list[np.ndarray]  # per leaf, per document: its first token's offset in its shard
    appended: np.ndarray  # per shard: 1 when an EOS is appended to its documents, else 0
    eos_id: int | None
    # ref, folder, fingerprint, tokenizer of every dataset used (and the registered manifest
    # of a remote one: `resolve.registered_manifest`)
    datasets: list[dict[str, Any]]
    fingerprint: str  # of the spec and the exact data versions
    folder: str | None = None  # its plan-cache entry, when cached
    used: list[np.ndarray] | None = None  # per leaf, the shards it reads (when cached)

    def runs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per leaf, the shard and document count of each run of its documents."""
        return [(r.shard, r.end - r.start) for r in self.ranges]

    def shards_of(self, c: int) -> np.ndarray:
        """The shard numbers leaf `c` reads, in order (cached with the plan: finding them is
        a pass over its ranges, which may number half its documents)."""
        if self.used is not None:
            return self.used[c]
        return np.flatnonzero(np.bincount(self.ranges[c].shard, minlength=len(self.shards)))


def registered_manifests(datasets: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The registered manifests a plan records of its remote datasets, by folder."""
    return {info["uri"]: info["manifest"] for info in datasets if "manifest" in info}
