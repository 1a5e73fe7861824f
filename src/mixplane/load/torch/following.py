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

from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from mixplane.load.channel import WorkerChannel
from mixplane.load.torch.adapter import Received, exit_with_parent
from mixplane.load.torch.transfer import as_tensors


class FollowedBatches(IterableDataset):
    """A dataset's whole batches as dicts of tensors, one batch per DataLoader item.

    Without workers, the dataset's own iteration (which counts what it hands out); in a
    worker, `worker_batches` from the start the training process published. A subclass
    says how a worker reads and sends its batches.
    """

    def __init__(self, dataset: Any):
        super().__init__()
        self.dataset = dataset
        self.tracked = False  # set by a FollowingLoader's builder: it follows the batches
        if dataset.channel is None:
            dataset.channel = WorkerChannel()

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        if info is None:
            return map(as_tensors, iter(self.dataset))
        exit_with_parent()
        if not self.tracked:
            self.dataset.channel.flag_untracked_workers()
        self.dataset.sync_with_trainer()
        return self.worker_batches(info.num_workers, info.id)

    def worker_batches(self, workers: int, worker: int) -> Iterator[Any]:
        """In DataLoader worker `worker` of `workers`: its batches, ready to send (each
        adapter says how: a dataset's batches, or its padded batches)."""
        raise TypeError(f"{type(self).__name__} must implement worker_batches()")


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
