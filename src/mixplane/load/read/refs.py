"""Document references: which document each token of a batch comes from, globally.

With `document_refs`, batches carry `document_refs`, an int64 array of shape
(batch, seq_len, 2): for each token, the index of its dataset version in the mixture's
`dataset.resolved.datasets` and the document's number in that version (counting its shards
in the manifest's order, as `TokenizedDataset.document` does). A training loop maps these
to any property of the documents with `mixplane.load.tools.properties.DocumentProperty`,
for instance to sum its loss by language.

Example:
    >>> numbers = DocumentNumbers.of(dataset.resolved)  # doctest: +SKIP
    >>> numbers.refs(np.array([0, 3]), np.array([10, 2]))  # doctest: +SKIP
    (array([0, 1]), array([10, 41872]))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mixplane.load.plan.ranges import expand

if TYPE_CHECKING:
    from mixplane.load.plan.resolved import ResolvedMixture


@dataclass(frozen=True)
class DocumentNumbers:
    """Per shard of a resolved mixture: its dataset's index and the number of its first
    document in that dataset."""

    dataset: np.ndarray  # int64, per shard number
    first: np.ndarray  # int64, per shard number

    @classmethod
    def of(
        cls,
        resolved: ResolvedMixture,
        storage_options: dict[str, Any] | None = None,
        cache_dir: str | None = None,
    ) -> DocumentNumbers:
        """Read each dataset's manifest once for its shards' document counts."""
        from mixplane.store.dataset import TokenizedDataset

        index = {info["uri"]: number for number, info in enumerate(resolved.datasets)}
        firsts: dict[str, dict[str, int]] = {}
        for uri in index:
            found = TokenizedDataset(uri, storage_options, cache_dir)
            counts = np.cumsum([0] + [shard["documents"] for shard in found.shards])
            firsts[uri] = dict(zip(found.shard_names, counts.tolist(), strict=False))
        dataset = np.array([index[uri] for uri, _ in resolved.shards], dtype=np.int64)
        first = np.array([firsts[uri][stem] for uri, stem in resolved.shards], dtype=np.int64)
        return cls(dataset, first)

    def refs(self, shard: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(dataset index, document number) of documents `index` of shards `shard`."""
        return self.dataset[shard], self.first[shard] + index


def fill_refs(
    out: np.ndarray,
    target: np.ndarray,
    lengths: np.ndarray,
    dataset: np.ndarray,
    document: np.ndarray,
) -> None:
    """Write each piece's reference over its tokens: `lengths[i]` tokens from flat position
    `target[i]` of `out` (rows x width x 2)."""
    flat = out.reshape(-1, 2)
    where = expand(target, lengths)
    flat[where, 0] = np.repeat(dataset, lengths)
    flat[where, 1] = np.repeat(document, lengths)
