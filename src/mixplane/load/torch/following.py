"""A DataLoader over a dataset that hands out whole batches and follows what the loop gets.

The image-text and unpacked text loaders share it: with workers, each pass starts where the
loop is (`begin_worker_pass`) and every batch the loop receives is checked and counted
(`Received`, by its `index`); without workers, the pass runs in this process and counts
what it hands out. `state_dict()` and `load_state_dict()` are the dataset's, so trainers
that checkpoint `loader.state_dict()` work unchanged.

Example:
    >>> loader = FollowingLoader(adapter, batch_size=None, num_workers=2)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from torch.utils.data import DataLoader

from mixplane.load.torch.adapter import Received


class FollowingLoader(DataLoader):
    """`dataset` is an adapter whose own `dataset` has `begin_worker_pass`, `received`,
    `state_dict` and `load_state_dict`."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self.num_workers == 0:
            return super().__iter__()  # the pass runs here and counts what it hands out
        followed = self.dataset.dataset  # type: ignore[attr-defined]
        generation = followed.begin_worker_pass()
        return Received(super().__iter__(), followed, generation)

    def state_dict(self) -> dict[str, Any]:
        return self.dataset.dataset.state_dict()  # type: ignore[attr-defined]

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.dataset.dataset.load_state_dict(state)  # type: ignore[attr-defined]
