"""One reader's pass over a rank's stream: blocks read ahead, handed out one by one.

A `Stream` is an iterator whose state is an explicit `Cursor` (owned by its dataset), so a
checkpoint is a dict. Blocks of positions are planned in the consuming thread (array
arithmetic, a few microseconds per sequence) and filled by a background thread in compiled
code that releases the GIL, `prefetch` blocks ahead; a weight change drops what was read
ahead from the position it applies to, and reads that again under the new weights.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.plan.partition import Layout
from mixplane.load.plan.state import Cursor
from mixplane.load.read.assemble import FilledBlock, PlannedBlock, ReadContext, plan_block
from mixplane.load.read.forecast import Forecast

Block = PlannedBlock | FilledBlock


class Stream:
    """Samples (or whole batches) for `layout`, from `cursor.read` on.

    `read_ahead` is the number of sequences planned at once, `prefetch` the number of blocks
    filled ahead in a background thread (0: none), `poll` a function called before each item
    is handed out (it may change the weights, which restarts the stream), `filled` blocks
    already filled elsewhere, by their positions' bytes (taken, not copied: an opening block
    found there is not read again).
    """

    def __init__(
        self,
        context: ReadContext,
        cursor: Cursor,
        layout: Layout,
        read_ahead: int,
        prefetch: int,
        batched: bool = False,
        poll: Callable[[], None] | None = None,
        filled: dict[bytes, dict[str, np.ndarray]] | None = None,
        on_end: Callable[[], None] | None = None,
    ):
        self.context = context
        self.on_end = on_end  # called once the stream has handed out its last item
        self.filled = filled if filled is not None else {}
        self.cursor = cursor
        self.prefetch = prefetch
        self.layout = layout
        self.batched = batched
        self.poll = poll
        blocks = max(1, -(-read_ahead // layout.block))
        self.chunk = blocks * layout.block
        source = context.source
        whole_shards = bool(source.remote.any()) and source.cache_mode == "shards"
        # Until the first item is handed out, remote data may not be here yet: the first
        # block is one layout block (a batch), which large shards let read by ranges (and
        # `cache: ranges` fetches in a few dozen requests, not a whole block's thousands).
        self._opening = bool(source.remote.any())
        self._filler: ThreadPoolExecutor | None = None
        self._pending: deque[tuple[np.ndarray, Block, Future | None]] = deque()
        # Remote shards cached whole: prefetch what comes, evict what comes last.
        self._forecast = (
            Forecast(context, self.block_positions, pinned_blocks=max(prefetch, 1))
            if whole_shards
            else None
        )
        self.restart()

    # -- producing -----------------------------------------------------------------------

    def block_positions(self, start: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(local indices, global positions) of each block from local index `start` on (the
        first one a single layout block while opening; decided now, so that the forecast and
        the reader, which both call this at a restart, see the same blocks)."""
        return self._block_positions(start, self.layout.block if self._opening else self.chunk)

    def _block_positions(self, start: int, size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        base, layout = self.cursor.base, self.layout
        limit = layout.local_limit(base, self.context.plan.length)
        while True:
            local = layout.owned(start, size)
            size = self.chunk
            if limit is not None:
                local = local[local < limit]
            if len(local) == 0:
                return
            yield local, layout.positions(base, local)
            start = int(local[-1]) + 1

    def _blocks(self, start: int) -> Iterator[tuple[np.ndarray, Block]]:
        forecast, opening, source = self._forecast, self._opening, self.context.source
        linger = forecast is not None  # a forecasting stream's next block settles its shards
        if forecast is not None:
            forecast.restart(start)
        for local, positions in self.block_positions(start):
            filled = self.filled.pop(positions.tobytes(), None) if opening else None
            if filled is not None:  # read by the training process: no shard to wait for
                yield local, FilledBlock(filled)
            else:
                by_ranges, block = False, None
                if forecast is not None:
                    shards, block = forecast.advance(int(local[0]))
                    source.settle(keep=shards)  # the last block's shards this one does not read
                    by_ranges = opening and source.opening_by_ranges(shards)
                    forecast.download(("ranges" if by_ranges else "whole") if opening else None)
                yield local, plan_block(self.context, positions, by_ranges, block, linger)
            opening = False

    def _schedule(self) -> None:
        """Plan blocks until `prefetch` of them are being filled in the background (one while
        opening: a block planned now would wait for its shards before the first item)."""
        ahead = 1 if self._opening else max(self.prefetch, 1)
        while self._planned is not None and len(self._pending) < ahead:
            try:
                local, planned = next(self._planned)
            except StopIteration:
                self._planned = None
                return
            future = None
            if self.prefetch > 0:
                if self._filler is None:
                    self._filler = ThreadPoolExecutor(1, thread_name_prefix="mixplane-read")
                future = self._filler.submit(planned.fill)
            self._pending.append((local, planned, future))

    def _next_block(self) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        self._schedule()
        if not self._pending:
            return None
        local, planned, future = self._pending.popleft()
        arrays = planned.fill() if future is None else future.result()
        if not self._opening:
            self._schedule()  # keep the background thread busy while this block is handed out
        return local, arrays

    # -- handing out ---------------------------------------------------------------------

    def restart(self) -> None:
        """Drop everything read ahead; continue from the first local index not handed out."""
        self._drop_pending()
        self._take([], np.zeros(0, dtype=np.int64), {})
        self._planned: Iterator[tuple[np.ndarray, Block]] | None = self._blocks(self.cursor.read)

    def weights_changed(self, position: int) -> None:
        """The weights change from global `position` on: keep what was read ahead before it,
        read the rest again. Raises if a sequence at or after it was already handed out."""
        self.filled.clear()  # filled under the old weights
        base, layout = self.cursor.base, self.layout
        if self.cursor.read > 0:
            last = int(layout.positions(base, np.array([self.cursor.read - 1]))[0])
            if last >= position:
                raise ConfigError(
                    f"the weights change from sequence {position}, but this reader already "
                    f"handed out sequence {last} under the old ones; change weights from a "
                    "later step (a policy's delay must cover how far DataLoader workers "
                    "read ahead)"
                )
        waiting = self._item < len(self._ends)  # items of the current block not handed out
        last = self._local[self._ends[-1] - 1 : self._ends[-1]] if waiting else None
        if waiting and int(layout.positions(base, last)[0]) >= position:
            # Items of the current block wholly before the change stay; the block ends
            # there and the rest is planned again (any position replans exactly).
            starts = [self._next] + self._ends[self._item : -1]
            last_rows = np.array(self._ends[self._item :], dtype=np.int64) - 1
            late = layout.positions(base, self._local[last_rows]) >= position
            first_late = int(np.argmax(late))
            resume = int(self._local[starts[first_late]])
            self._ends = self._ends[: self._item + first_late]
            self._drop_pending()
            self._planned = self._blocks(resume)
            return
        for index, (local, _, _) in enumerate(self._pending):
            if int(layout.positions(base, local[-1:])[0]) >= position:
                for _, planned, future in list(self._pending)[index:]:
                    _drop(planned, future)
                self._pending = deque(list(self._pending)[:index])
                self._planned = self._blocks(int(local[0]))
                return
        # Everything read ahead comes before the change; blocks planned from now on see it.

    def _drop_pending(self) -> None:
        for _, planned, future in self._pending:
            _drop(planned, future)
        self._pending.clear()

    def _take(self, item_ends: list[int], local: np.ndarray, arrays: dict) -> None:
        self._local, self._arrays = local, arrays
        self._ends = item_ends  # where each item handed out ends, in rows of the block
        self._item = 0
        self._next = 0

    def _item_ends(self, local: np.ndarray) -> list[int]:
        if not self.batched:
            return list(range(1, len(local) + 1))
        # A batch is one block of the layout (the last one may be cut short by the end).
        blocks = local // self.layout.block
        return (np.flatnonzero(np.diff(blocks)) + 1).tolist() + [len(local)]

    def close(self) -> None:
        """Stop reading ahead and end the background thread."""
        self._drop_pending()
        self._planned = None
        if self._filler is not None:
            self._filler.shutdown(wait=True)
            self._filler = None
        if self._forecast is not None:
            self.context.source.settle()

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> dict[str, Any]:
        if self.poll is not None:
            self.poll()
        if self._item >= len(self._ends):
            block = self._next_block()
            if block is None:
                self.close()
                if self.on_end is not None:
                    self.on_end()
                raise StopIteration
            self._take(self._item_ends(block[0]), *block)
        start, stop = self._next, self._ends[self._item]
        if self.batched:
            item = {key: value[start:stop] for key, value in self._arrays.items()}
        else:
            item = {key: value[start] for key, value in self._arrays.items()}
        self._item += 1
        self._opening = False
        self._next = stop
        self.cursor.read = int(self._local[stop - 1]) + 1
        return item


def _drop(planned: Block, future: Future | None) -> None:
    """Forget a block read ahead: stop its fill if it has not started, and release what it
    holds (a fill that already started releases it itself)."""
    if future is None or future.cancel():
        planned.release()
