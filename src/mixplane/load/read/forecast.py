"""Which remote shards a reader needs next, read off the plan before the reading.

The order of a stream is a function of the mixture, so the shards of the blocks after the
ones being read are known exactly. A `Forecast` keeps them for the next `horizon` blocks and
tells the node cache two things: what to download now (in the order it will be needed) and
when each shard is needed next, so eviction drops the one needed farthest ahead. When the
reader had to wait for a download, the horizon doubles: prefetch reaches as far ahead as the
measured speed of reading and downloading requires (and as the cache has room for). The
blocks' plans (`SamplePlan.block`) are kept for the reader, which would otherwise work them
out again a few blocks later.

Example:
    >>> forecast = Forecast(context, stream.block_positions, horizon=8)  # doctest: +SKIP
    >>> forecast.restart(0); shards, block = forecast.advance(0)  # doctest: +SKIP
    >>> forecast.download()  # doctest: +SKIP
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Literal

import numpy as np

from mixplane.errors import ConfigError
from mixplane.io.sizes import size_text
from mixplane.load.plan.samples import Block
from mixplane.load.read.assemble import ReadContext

MAX_HORIZON = 256  # blocks
# How a reader's first block is read: from whole shards, or its pieces by ranges.
Opening = Literal["whole", "ranges"]


def block_shards(context: ReadContext, positions: np.ndarray) -> np.ndarray:
    """The distinct shard numbers the sequences at `positions` read."""
    return shards_of(context, context.plan.block(positions))


def shards_of(context: ReadContext, block: Block) -> np.ndarray:
    """The distinct shard numbers a planned block reads."""
    parts = [
        context.resolved.ranges[c].shard_of(block.spans.document[lo:hi])
        for c, lo, hi in block.groups
    ]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


class Forecast:
    """The remote shards of the `horizon` blocks after the one being planned."""

    def __init__(
        self,
        context: ReadContext,
        blocks: Callable[[int], Iterator[tuple[np.ndarray, np.ndarray]]],
        horizon: int = 8,
        pinned_blocks: int = 1,
    ):
        self.context = context
        self.blocks = blocks  # start -> (local indices, global positions) of each block
        self.horizon = max(horizon, pinned_blocks + 1)
        self.pinned_blocks = pinned_blocks  # blocks planned and not yet filled, at most
        # (first local index, remote shards, plan, blend it was planned under) of each block
        self._ahead: deque[tuple[int, np.ndarray, Block, object]] = deque()
        self._upcoming: Iterator[tuple[np.ndarray, np.ndarray]] | None = None
        self._misses = 0
        self._checked = -1

    def restart(self, start: int) -> None:
        """The reader starts over from local index `start` (a resume or a weight change)."""
        self._ahead.clear()
        self._upcoming = self.blocks(start)
        self._checked = -1  # runs of blocks from this local index on are not checked yet

    def advance(self, start: int) -> tuple[np.ndarray, Block | None]:
        """The reader is planning the block that begins at local index `start`: look the
        horizon ahead from it (further if the reader waited for a download); returns that
        block's remote shards and its plan (None if it is not in the horizon: the weights
        changed since it was planned). `download` acts on it."""
        source = self.context.source
        misses = source.cache.counters["misses"]
        if misses > self._misses:  # it waited for a download: look further ahead
            self.horizon = min(MAX_HORIZON, self.horizon * 2)
        self._misses = misses
        # The block at `start` counts (rank 0): its shards are pinned only once it is planned,
        # after this, so until then they must not look evictable to a prefetch.
        while self._ahead and self._ahead[0][0] < start:
            self._ahead.popleft()
        plan = self.context.plan
        while self._upcoming is not None and len(self._ahead) < self.horizon:
            try:
                local, positions = next(self._upcoming)
            except StopIteration:
                self._upcoming = None
                break
            if int(local[0]) >= start:
                block = plan.block(positions)
                shards = shards_of(self.context, block)
                remote = shards[source.remote[shards]]
                self._ahead.append((int(local[0]), remote, block, plan.blend))
        if self._ahead and self._ahead[0][0] == start:
            _, shards, block, blend = self._ahead[0]
            # A weight change rebuilds the blend: a plan made before it is stale.
            return shards, block if blend is plan.blend else None
        return np.zeros(0, dtype=np.int64), None

    def download(self, opening: Opening | None = None) -> None:
        """Check the room, order eviction by next use and download what comes, for the
        block `advance` reached. A reader's opening block gets the link to itself: read from
        whole shards (`opening="whole"`), only its own shards are downloaded now; read by
        ranges (`"ranges"`), it pins nothing and nothing is downloaded whole while its few
        requests are under way. The room is checked at once either way."""
        source = self.context.source
        cache = source.cache
        self._check_room(1 if opening == "ranges" else 0)
        # Shards of the mixture not needed within the horizon come after those that are,
        # and before files of other mixtures (which have no next use at all).
        next_use = dict.fromkeys(source.remote_urls(), float(len(self._ahead) + 1))
        order: list[int] = []
        for rank, (_, shards, _, _) in enumerate(self._ahead):
            for number in shards.tolist():
                url = source.files.remote_url(number)
                if next_use[url] > rank:
                    next_use[url] = float(rank)
                    order.append(number)
        cache.plan(next_use)
        if opening == "whole":
            order = order[: len(self._ahead[0][1])] if self._ahead else []
        if opening != "ranges":
            cache.prefetch([source.files.remote_file(number) for number in order])

    def _check_room(self, skip: int) -> None:
        """Refuse a limit that cannot hold the shards of `pinned_blocks` consecutive blocks
        (the most ever pinned together) anywhere in the horizon from the `skip`-th block
        ahead on (the start-up check counts shuffle windows, not blocks larger than a
        shard): the cache would otherwise stop the reader mid-run, waiting for room. Each
        run of blocks is checked once, as it enters the horizon."""
        source = self.context.source
        limit = source.cache_limit
        ahead = list(self._ahead)[skip:]
        if limit is None or not ahead:
            return
        for first in range(max(1, len(ahead) - self.pinned_blocks + 1)):
            together = ahead[first : first + self.pinned_blocks]
            if together[0][0] <= self._checked:
                continue
            self._checked = together[0][0]
            shards = np.unique(np.concatenate([numbers for _, numbers, _, _ in together]))
            needed = sum(source.files.remote_file(number).size for number in shards.tolist())
            if needed > limit:
                raise ConfigError(
                    f"cache_limit {size_text(limit)} is too small: the {len(together)} blocks "
                    f"read together from this reader's sequence {together[0][0]:,} on need "
                    f"{len(shards)} shards ({size_text(needed)}); raise cache_limit to at "
                    f"least {needed:,} bytes, or read fewer sequences at once (read_ahead, "
                    "prefetch)"
                )
