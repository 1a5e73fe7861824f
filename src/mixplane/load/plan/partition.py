"""Who reads which position of the global stream: ranks, then workers within a rank.

From a starting offset `base`, rank r of W takes global positions base + r, base + r + W, ...
(its local index i is the i-th of these). A rank's DataLoader workers split its local indices
in blocks of `block` (the batch size): worker w of N takes blocks w, w + N, w + 2N, ... so that
a DataLoader, which takes batches from its workers in turn, yields the rank's stream in order
whatever N is. Only whole rows of W positions are handed out, so every rank gets as many
sequences as the others even when the stream ends.

Text and image-text loaders split their streams this same way. A loader that hands out whole
batches of an epoch (image-text) counts in global batches of `block x world_size` positions:
batch b of rank r is its local indices [b x block, (b + 1) x block), and worker w of N reads
batches w, w + N, ...

Example:
    >>> layout = Layout(rank=1, world_size=4, workers=2, worker=1, block=2)
    >>> local = layout.owned(start=0, count=6)
    >>> local.tolist()
    [2, 3, 6, 7, 10, 11]
    >>> layout.positions(base=100, local=local).tolist()
    [109, 113, 125, 129, 141, 145]
    >>> layout.whole_batches(base=0, length=35), list(layout.own_batches(base=0, length=35))
    (4, [1, 3])
    >>> layout.batch_positions(base=0, batch=1).tolist()
    [9, 13]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixplane.errors import ConfigError


@dataclass(frozen=True)
class Layout:
    rank: int = 0
    world_size: int = 1
    workers: int = 1
    worker: int = 0
    block: int = 1

    def __post_init__(self) -> None:
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise ConfigError(
                f"rank must be in [0, world_size), got rank {self.rank} of {self.world_size}"
            )
        if self.workers < 1 or not 0 <= self.worker < self.workers:
            raise ConfigError(f"worker {self.worker} of {self.workers} is out of range")
        if self.block < 1:
            raise ConfigError(f"batch size must be >= 1, got {self.block}")

    def owned(self, start: int, count: int) -> np.ndarray:
        """The first `count` local indices >= `start` that this worker reads, in order."""
        block, workers = self.block, self.workers
        first_block = start // block
        # The first block at or after `first_block` that belongs to this worker.
        first_block += (self.worker - first_block) % workers
        needed = -(-(count + block) // block) + 1
        blocks = first_block + workers * np.arange(needed, dtype=np.int64)
        local = (blocks[:, None] * block + np.arange(block, dtype=np.int64)).ravel()
        return local[local >= start][:count]

    def positions(self, base: int, local: np.ndarray) -> np.ndarray:
        """Global positions of local indices."""
        return base + self.rank + self.world_size * np.asarray(local, dtype=np.int64)

    def local_limit(self, base: int, length: int | None) -> int | None:
        """How many local indices this rank may read before the stream ends (None: endless)."""
        if length is None:
            return None
        return max(0, (length - base) // self.world_size)

    @property
    def global_batch(self) -> int:
        """Positions in one batch of every rank together."""
        return self.block * self.world_size

    def whole_batches(self, base: int, length: int) -> int:
        """Batches of `block` every rank gets from `base` to a stream end at `length`."""
        return max(0, (length - base) // self.global_batch)

    def batch_positions(self, base: int, batch: int) -> np.ndarray:
        """Global positions of this rank's `batch`-th batch after `base`."""
        local = np.arange(batch * self.block, (batch + 1) * self.block, dtype=np.int64)
        return self.positions(base, local)

    def own_batches(self, base: int, length: int) -> range:
        """The batch numbers (after `base`) that this worker reads, in order."""
        return range(self.worker, self.whole_batches(base, length), self.workers)
