"""Batches made ahead by a background thread, handed out in order.

The thread runs `make(job)` for each job in turn and keeps up to `depth` results waiting;
filling a batch (allocating, copying tokens, the attention mask) is numpy and compiled code
that releases the GIL, so it overlaps with the training loop. An error in the thread is
raised where its result would have been handed out.

Example:
    >>> ahead = ReadAhead(iter(range(4)), lambda job: job * job, depth=2)
    >>> list(ahead)
    [(0, 0), (1, 1), (2, 4), (3, 9)]
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")
_END = object()
_CLOSED = object()


class ReadAhead(Generic[Job, Result]):
    """`(job, make(job))` for each job of `jobs`, made up to `depth` ahead in a thread."""

    def __init__(self, jobs: Iterator[Job], make: Callable[[Job], Result], depth: int):
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(jobs, make), name="mixplane-unpacked-read", daemon=True
        )
        self._thread.start()

    def _run(self, jobs: Iterator[Job], make: Callable[[Job], Result]) -> None:
        try:
            for job in jobs:
                item = (job, make(job))
                if not self._put(item):
                    return
        except BaseException as error:  # handed to the reader, raised there
            self._put(error)
            return
        self._put(_END)

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[tuple[Job, Result]]:
        while True:
            item = self._queue.get()
            if item is _END or item is _CLOSED:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]

    def close(self) -> None:
        """Stop the thread; what it made and nobody took is dropped, and iterating ends (the
        reader checks why)."""
        self._stop.set()
        self._thread.join()
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put(_CLOSED)
