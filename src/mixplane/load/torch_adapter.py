"""PyTorch adapter: a `MixtureDataset` as an `IterableDataset` for `DataLoader`s.

Give the adapter the batch size and the DataLoader `batch_size=None`: each item is then a
whole batch, and workers take whole batches in turn, so a DataLoader with any number of
workers yields the same batches in the same order as one without. Works with
`torch.utils.data.DataLoader` (also with persistent workers) and torchdata's
`StatefulDataLoader`, whose `state_dict()` then holds each worker's exact position.

Example:
    >>> loader = torch_loader(MixtureDataset("mixture.yaml"), batch_size=8, num_workers=2,
    ...                       stateful=True)  # doctest: +SKIP
    >>> batch = next(iter(loader))  # doctest: +SKIP
    >>> batch["input_ids"].shape  # doctest: +SKIP
    torch.Size([8, 2048])
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from mixplane.errors import ConfigError
from mixplane.load.channel import WeightChannel
from mixplane.load.dataset import MixtureDataset
from mixplane.load.partition import Layout
from mixplane.load.state import merge_states
from mixplane.load.transfer import WorkerBatch


class TorchMixtureDataset(IterableDataset):
    """Yields batches of `batch_size` sequences as dicts of tensors.

    With `batch_size=None` it yields single samples (numpy) instead; then give the
    DataLoader the batch size and the adapter the same number as `block`, so workers still
    take whole batches in turn.

    State: with `num_workers=0`, or through a `StatefulDataLoader`, `state_dict()` is exact.
    With a plain `DataLoader` and workers the readers live in the workers, so this object's
    own state does not move; use a `StatefulDataLoader` (and `loader_state` to resume with
    another world size) there.
    """

    def __init__(self, dataset: MixtureDataset, batch_size: int | None = 1, block: int = 1):
        super().__init__()
        self.dataset = dataset
        self.batch_size = batch_size
        self.block = batch_size or block
        self.channel = WeightChannel()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        base = self.dataset.layout
        layout = Layout(base.rank, base.world_size, workers, worker, self.block)
        batched = self.batch_size is not None
        if info is None:
            stream = self.dataset.iterate(layout, batched=batched)
            return map(as_tensors, stream) if batched else stream
        # A worker is already a process running ahead of training; a reading thread inside it
        # would only compete with it for the interpreter.
        stream = self.dataset.iterate(layout, batched=batched, poll=self._poll, prefetch=0)
        return map(WorkerBatch, stream) if batched else stream

    def _poll(self, dataset: MixtureDataset) -> None:
        changes = self.channel.receive()
        if not changes:
            return
        known = {c["step"]: c["weights"] for c in dataset.plan.weight_changes}
        for change in changes:
            step, weights = int(change["step"]), change["weights"]
            if known.get(step) != weights:
                dataset.set_weights(step, weights)

    def set_weights(self, step: int, weights: Mapping[str, float]) -> None:
        """Change weights from `step` on, here and in every DataLoader worker.

        Workers read ahead (`prefetch_factor` batches each), so with workers choose a step
        that far ahead of training; a worker that already handed out that step raises.
        """
        self.dataset.set_weights(step, weights)
        self.channel.publish([dict(c) for c in self.dataset.plan.weight_changes])

    def state_dict(self) -> dict[str, Any]:
        return self.dataset.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.dataset.load_state_dict(state)


def as_tensors(batch: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """The batch's arrays as tensors over the same memory (cheaper than the DataLoader's
    own conversion, which inspects every value)."""
    return {key: torch.from_numpy(array) for key, array in batch.items()}


def torch_loader(
    dataset: MixtureDataset,
    batch_size: int,
    num_workers: int = 0,
    stateful: bool = False,
    **options: Any,
) -> DataLoader:
    """A DataLoader (or torchdata `StatefulDataLoader`) yielding batches in the stream's order."""
    adapter = TorchMixtureDataset(dataset, batch_size)
    if options.get("batch_size") is not None:
        raise ConfigError("pass batch_size to torch_loader, not to the DataLoader options")
    options.pop("batch_size", None)
    # Batches are already tensors; the DataLoader's default conversion would only inspect
    # every field of every batch again (about 25 µs a batch).
    options.setdefault("collate_fn", as_is)
    if stateful:
        from torchdata.stateful_dataloader import StatefulDataLoader

        return StatefulDataLoader(adapter, batch_size=None, num_workers=num_workers, **options)
    return DataLoader(adapter, batch_size=None, num_workers=num_workers, **options)


def as_is(batch: Any) -> Any:
    """The DataLoader's collate function for batches the adapter has already made."""
    return batch


def loader_state(loader_state_dict: Mapping[str, Any]) -> dict[str, Any]:
    """The mixture's own state inside a `StatefulDataLoader.state_dict()`.

    Load it into a fresh `MixtureDataset` (before building its loader) to resume with a
    different world size or worker count; for the same layout, load the loader's state.
    """
    found: list[dict[str, Any]] = []
    _collect(loader_state_dict, found)
    if not found:
        raise ConfigError("no mixplane loader state in this DataLoader state")
    return merge_states(found)


def _collect(value: Any, found: list[dict[str, Any]]) -> None:
    if isinstance(value, Mapping):
        if value.get("format") == "mixplane-loader":
            found.append(dict(value))
            return
        for item in value.values():
            _collect(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, found)


__all__ = [
    "TorchMixtureDataset",
    "as_is",
    "as_tensors",
    "loader_state",
    "torch",
    "torch_loader",
]
