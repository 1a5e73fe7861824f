"""PyTorch adapter: an `ImageTextDataset` as a `DataLoader` whose batches follow the stream.

DataLoader workers take whole batches in turn (worker w of N: batches w, w + N, ...), so the
DataLoader, which asks its workers in turn, yields the batches in the stream's order; the
training process counts each batch the loop receives, so `dataset.state_dict()` is exact
although workers read ahead:

    dataset = ImageTextDataset("mixture.yaml", rank=rank, world_size=world_size,
                               batch_size=256, tokenizer=tokenizer)
    loader = image_text_loader(dataset, num_workers=8)
    if checkpoint:
        dataset.load_state_dict(checkpoint["data"])
    while dataset.epoch < epochs:
        for batch in loader:  # the rest of the current epoch
            ...
            checkpoint = {"data": dataset.state_dict(), ...}

Example:
    >>> loader = image_text_loader(dataset, num_workers=2)  # doctest: +SKIP
    >>> next(iter(loader))["images"].shape  # doctest: +SKIP
    torch.Size([256, 3, 224, 224])
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch

from mixplane.load.images.dataset import ImageTextDataset
from mixplane.load.torch.adapter import as_tensors, loader_options
from mixplane.load.torch.following import FollowedBatches, FollowingLoader


class TorchImageTextDataset(FollowedBatches):
    """Yields the dataset's batches as dicts of tensors (one batch per item).

    Use it through `image_text_loader` when the loop has DataLoader workers and checkpoints:
    a plain `DataLoader` over it reads in workers without telling this process what the loop
    received, so `dataset.state_dict()` then refuses (it would be stale).
    """

    dataset: ImageTextDataset

    def worker_batches(self, workers: int, worker: int) -> Iterator[dict[str, torch.Tensor]]:
        shared = SharedBatches()
        batches = self.dataset.worker_batches(workers, worker, shared.allocate)
        return map(shared.tensors, batches)

    def __len__(self) -> int:
        return len(self.dataset)


class ImageTextLoader(FollowingLoader):
    """A DataLoader over a `TorchImageTextDataset` that follows the batches the loop receives.

    `state_dict()` and `load_state_dict()` are the dataset's, so trainers that checkpoint
    `loader.state_dict()` work unchanged.
    """

    dataset: TorchImageTextDataset


class SharedBatches:
    """Batch images in shared memory, handed over as the tensors that own that memory.

    Images decoded straight into a shared array reach the training process without a copy
    (only the file's handle travels), provided the tensor sent is the shared one: a tensor
    made with `torch.from_numpy` over the same memory is not known to torch as shared, and
    the DataLoader would copy the whole batch into a new segment to send it.
    """

    def __init__(self) -> None:
        self._owners: dict[int, torch.Tensor] = {}  # data address -> its shared tensor

    def allocate(self, shape: tuple[int, ...]) -> np.ndarray:
        """A float32 array over a new shared-memory tensor."""
        tensor = torch.empty(shape, dtype=torch.float32).share_memory_()
        array = tensor.numpy()
        self._owners[array.ctypes.data] = tensor
        return array

    def tensors(self, batch: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """The batch as tensors, its images as the shared tensor `allocate` made."""
        tensors = as_tensors(batch)
        images = batch["images"]
        owner = self._owners.pop(images.ctypes.data, None)
        if owner is not None and tuple(owner.shape) == images.shape:
            tensors["images"] = owner
        return tensors


def image_text_loader(
    dataset: ImageTextDataset, num_workers: int = 0, **options: Any
) -> ImageTextLoader:
    """A DataLoader yielding the dataset's batches in order that follows what the loop
    receives. `options` go to the DataLoader (`persistent_workers`, `pin_memory`,
    `prefetch_factor`, `multiprocessing_context`...); the batch size is the dataset's."""
    error = "the batch size is the dataset's (ImageTextDataset(batch_size=...))"
    options = loader_options(options, error)
    adapter = TorchImageTextDataset(dataset)
    adapter.tracked = True
    return ImageTextLoader(adapter, batch_size=None, num_workers=num_workers, **options)


__all__ = ["ImageTextLoader", "TorchImageTextDataset", "image_text_loader"]
