"""The stream of whole documents of an unpacked mixture: position -> (component, document).

Each position of the global stream is one document, cut to `seq_len` tokens. The blend
(`mix.blend`) chooses the component of every position, as for packed sequences, and each
component hands out its documents in a seeded order reshuffled every epoch.

Weights stay over tokens: a component of weight w is drawn with document weight
w / (its mean document length, cut), renormalized. Each component's count of documents is
then exact in every prefix (within one of N x its document weight), and its share of tokens
is w on average over its documents (exact when every document has its component's mean
length). With `max_epochs`, a component gives at most that many passes over its documents.

Example:
    >>> from mixplane.mix import MixtureSpec, MixtureTree
    >>> spec = MixtureSpec.parse({"seq_len": 8, "packing": "none", "components": {
    ...     "a": {"weight": 0.5}, "b": {"weight": 0.5}}})
    >>> stream = DocumentStream(spec, MixtureTree(spec), [np.full(4, 2), np.full(4, 20)])
    >>> stream.document_weights.round(3).tolist()  # b's documents are 4x longer once cut
    [0.8, 0.2]
    >>> components, documents, lengths = stream.lookup(np.arange(5))
    >>> components.tolist(), lengths.tolist()
    ([0, 0, 0, 0, 1], [2, 2, 2, 2, 8])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.plan.packing import stable_key
from mixplane.load.plan.samples import _cap
from mixplane.mix.blend import Blend
from mixplane.mix.spec import MixtureSpec
from mixplane.mix.tree import MixtureTree

CACHED_EPOCHS = 2


class DocumentStream:
    """The global stream of whole documents; `lengths[c]` are leaf c's token counts (EOS
    included when one is appended), before cutting to `seq_len`."""

    def __init__(self, spec: MixtureSpec, tree: MixtureTree, lengths: Sequence[np.ndarray]):
        if len(lengths) != len(tree.leaves):
            raise ValueError(f"expected {len(tree.leaves)} components, got {len(lengths)}")
        self.spec, self.tree = spec, tree
        self.seq_len = int(spec.seq_len or 0)
        self.lengths = [np.minimum(np.asarray(x, dtype=np.int64), self.seq_len) for x in lengths]
        for leaf, cut in zip(tree.leaves, self.lengths, strict=True):
            if len(cut) == 0:
                raise ConfigError(f"component {leaf.name!r} selects no documents")
            if cut.min() <= 0:
                raise ConfigError(f"component {leaf.name!r} has documents without tokens")
        self.leaf_tokens = np.array([x.sum() for x in self.lengths], dtype=np.float64)
        counts = np.array([len(x) for x in self.lengths], dtype=np.float64)
        token_weights = tree.leaf_weights(self.leaf_tokens)
        weights = token_weights / (self.leaf_tokens / counts)
        self.document_weights = weights / weights.sum()
        caps = np.array(
            [
                _cap(leaf.max_epochs, len(x))
                for leaf, x in zip(tree.leaves, self.lengths, strict=True)
            ],
            dtype=np.int64,
        )
        stop = np.array([leaf.on_exhausted == "stop" for leaf in tree.leaves])
        self.blend = Blend([(0, self.document_weights)], caps, stop, spec.weight_resolution)
        self._orders: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()

    @property
    def names(self) -> list[str]:
        return self.tree.names

    @property
    def length(self) -> int | None:
        """Documents in the stream (None: endless)."""
        return self.blend.length

    def order(self, component: int, epoch: int) -> np.ndarray:
        """Component `component`'s documents in the order of epoch `epoch`."""
        key = (component, epoch)
        found = self._orders.get(key)
        if found is None:
            name = self.tree.leaves[component].name
            seeds = np.random.SeedSequence([self.spec.seed, stable_key(name), epoch])
            found = np.random.Generator(np.random.PCG64(seeds)).permutation(
                len(self.lengths[component])
            )
            self._orders[key] = found
            while len(self._orders) > CACHED_EPOCHS * len(self.lengths):
                self._orders.popitem(last=False)
        return found

    def lookup(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`(component, component-local document, length cut to seq_len)` of each position."""
        positions = np.asarray(positions, dtype=np.int64)
        components, indices = self.blend.lookup(positions)
        documents = np.empty(len(positions), dtype=np.int64)
        lengths = np.empty(len(positions), dtype=np.int64)
        for c in np.unique(components).tolist():
            rows = np.flatnonzero(components == c)
            epochs, within = np.divmod(indices[rows], len(self.lengths[c]))
            for epoch in np.unique(epochs).tolist():
                mine = epochs == epoch
                documents[rows[mine]] = self.order(c, epoch)[within[mine]]
            lengths[rows] = self.lengths[c][documents[rows]]
        return components.astype(np.int64), documents, lengths
