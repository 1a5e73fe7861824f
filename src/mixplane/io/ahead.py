"""Work done a bounded number of items ahead, in threads, handed back in order.

For round trips to object storage: many requests in flight, results consumed in the order
they were asked for (a shard's chunks written and hashed in sequence, shards' metadata read
in shard order), never more than `depth` held at once.

Example:
    >>> [value for _, value in in_order(lambda n: n * n, range(4), depth=2)]
    [0, 1, 4, 9]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
K = TypeVar("K")


def in_order(function: Callable[[K], T], items: Iterable[K], depth: int) -> Iterator[tuple[K, T]]:
    """`(item, function(item))` for each item in order, computed up to `depth` ahead."""
    with ThreadPoolExecutor(depth) as pool:
        pending: deque[tuple[K, Future]] = deque()
        for item in items:
            pending.append((item, pool.submit(function, item)))
            if len(pending) >= depth:
                first, future = pending.popleft()
                yield first, future.result()
        while pending:
            first, future = pending.popleft()
            yield first, future.result()
