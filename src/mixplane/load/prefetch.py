"""Run an iterator ahead of its consumer in a background thread.

Reading memory-mapped pages and packing arrays overlap with the training step; numpy releases
the GIL for the copies. `depth` bounds how many items wait, so memory stays flat.

Example:
    >>> ahead = Prefetcher(iter(range(5)), depth=2)
    >>> list(ahead)
    [0, 1, 2, 3, 4]
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
_END = object()


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


class Prefetcher(Generic[T]):
    """Iterate `source` in a daemon thread, at most `depth` items ahead (0: no thread)."""

    def __init__(self, source: Iterator[T], depth: int = 2):
        self.source = source
        self.depth = depth
        self._stop = threading.Event()
        self._queue: queue.Queue = queue.Queue(maxsize=max(depth, 1))
        self._thread: threading.Thread | None = None
        if depth > 0:
            self._thread = threading.Thread(target=self._run, name="mixplane-prefetch", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            for item in self.source:
                if not self._put(item):
                    return
            self._put(_END)
        except BaseException as error:  # handed to the consumer, raised there
            self._put(_Failure(error))

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Prefetcher[T]:
        return self

    def __next__(self) -> T:
        if self._thread is None:
            return next(self.source)
        item = self._queue.get()
        if item is _END:
            self._queue.put(_END)  # later calls end too
            raise StopIteration
        if isinstance(item, _Failure):
            raise item.error
        return item

    def close(self) -> None:
        """Stop the thread and drop what it read ahead."""
        self._stop.set()
        if self._thread is not None:
            while self._thread.is_alive():
                with contextlib.suppress(queue.Empty):
                    self._queue.get(timeout=0.05)
            self._thread = None
