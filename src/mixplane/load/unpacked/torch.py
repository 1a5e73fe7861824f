"""PyTorch adapter: an `UnpackedDataset` as a `DataLoader` whose batches follow the stream.

`torch_loader(dataset, batch_size=None, num_workers=...)` builds it. DataLoader workers take
the rank's batches in turn (worker w of N: batches w, w + N, ...), so the DataLoader, which
asks its workers in turn, yields them in the stream's order; the training process checks
and counts each batch the loop receives, so `dataset.state_dict()` is exact although the
workers read ahead.

Example:
    >>> loader = torch_loader(UnpackedDataset("sft.yaml"), None, num_workers=2)  # doctest: +SKIP
    >>> next(iter(loader))["attention_mask"].shape  # doctest: +SKIP
    torch.Size([52, 312])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from mixplane.errors import ConfigError
from mixplane.load.torch.adapter import loader_options
from mixplane.load.torch.following import FollowedBatches, FollowingLoader
from mixplane.load.torch.transfer import WorkerBatch

if TYPE_CHECKING:
    from mixplane.load.unpacked.dataset import UnpackedDataset


class TorchUnpackedDataset(FollowedBatches):
    """Yields the dataset's padded batches as dicts of tensors (one batch per item)."""

    dataset: UnpackedDataset

    def worker_batches(self, workers: int, worker: int) -> Iterator[WorkerBatch]:
        return map(WorkerBatch, self.dataset.worker_batches(workers, worker))


class UnpackedLoader(FollowingLoader):
    """A DataLoader over a `TorchUnpackedDataset` that follows the batches the loop receives;
    `state_dict()` and `load_state_dict()` are the dataset's."""

    dataset: TorchUnpackedDataset

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        if self.num_workers == 0 and not self.pin_memory:
            # Straight from the dataset, as `MixtureLoader` does: the DataLoader's own loop
            # would add a profiler record and a fetch per batch.
            return map(self.collate_fn, iter(self.dataset))
        return super().__iter__()


def unpacked_loader(
    dataset: UnpackedDataset, batch_size: int | None = None, num_workers: int = 0, **options: Any
) -> UnpackedLoader:
    """The loader `torch_loader` builds for an unpacked dataset; the batch size is the
    dataset's (`batch_size` may repeat it, or be None)."""
    if batch_size is not None and batch_size != dataset.batch_size:
        sized = dataset.batch_size or "bucketed by max_tokens_per_batch"
        raise ConfigError(
            f"the batches of an unpacked mixture are the dataset's ({sized}); pass "
            f"batch_size=None to torch_loader, not {batch_size}"
        )
    error = "the batch size is the dataset's (UnpackedDataset(batch_size=...) or bucketing)"
    options = loader_options(options, error)
    adapter = TorchUnpackedDataset(dataset)
    adapter.tracked = True
    return UnpackedLoader(adapter, batch_size=None, num_workers=num_workers, **options)


__all__ = ["TorchUnpackedDataset", "UnpackedLoader", "unpacked_loader"]
