"""PyTorch adapter: a `MixtureDataset` as a `DataLoader` whose batches follow the stream.

`torch_loader` gives a DataLoader that yields whole batches, in the stream's order whatever
the number of workers, and that follows what the training loop receives: with workers
running ahead, `dataset.state_dict()` (or `loader.state_dict()`) still says exactly which
batches the loop has had. That state resumes exactly with any world size or worker count:

    dataset = MixtureDataset("mixture.yaml", rank=rank, world_size=world_size)
    loader = torch_loader(dataset, batch_size=8, num_workers=2)
    dataset.load_state_dict(checkpoint["data"])  # when resuming
    for batch in loader:
        ...
        checkpoint = {"data": dataset.state_dict(), ...}

Example:
    >>> loader = torch_loader(MixtureDataset("mixture.yaml"), batch_size=8, num_workers=2)
    ... # doctest: +SKIP
    >>> batch = next(iter(loader))  # doctest: +SKIP
    >>> batch["input_ids"].shape  # doctest: +SKIP
    torch.Size([8, 2048])
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from mixplane.errors import ConfigError
from mixplane.load.channel import WorkerChannel
from mixplane.load.dataset import MixtureDataset
from mixplane.load.plan.partition import Layout
from mixplane.load.torch.transfer import WorkerBatch, as_tensors, group_size, split_group

PARENT_CHECK_SECONDS = 0.2


class TorchMixtureDataset(IterableDataset):
    """Yields batches of `batch_size` sequences as dicts of tensors.

    With `batch_size=None` it yields single samples (numpy) instead; then give the
    DataLoader the batch size and the adapter the same number as `block`, so workers still
    take whole batches in turn.

    Use it through `torch_loader` when the loop has DataLoader workers and checkpoints: a
    plain `DataLoader` over this adapter reads in its workers without telling this process
    what the loop received, so `dataset.state_dict()` then refuses (it would be stale).
    """

    def __init__(
        self,
        dataset: MixtureDataset,
        batch_size: int | None = 1,
        block: int = 1,
        batches_per_message: int = 1,
    ):
        super().__init__()
        self.dataset = dataset
        self.batch_size = batch_size
        self.block = batch_size or block
        dataset.check_batch_size(self.block)
        # A DataLoader worker hands out this many consecutive batches in one item (whole
        # batches only; a `MixtureLoader` splits them again).
        self.per_message = batches_per_message if batch_size is not None else 1
        if not isinstance(self.per_message, int) or self.per_message < 1:
            raise ConfigError(
                f"batches_per_message must be a whole number >= 1, got {batches_per_message}"
            )
        self.tracked = False  # set by MixtureLoader, which follows the batches received
        if dataset.channel is None:
            dataset.channel = WorkerChannel()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        dataset = self.dataset
        batched = self.batch_size is not None
        if info is None:
            layout = Layout(dataset.layout.rank, dataset.layout.world_size, block=self.block)
            stream = dataset.iterate(layout, batched=batched)
            return map(as_tensors, stream) if batched else stream
        exit_with_parent()
        if not self.tracked:
            dataset.channel.flag_untracked_workers()
        dataset.sync_with_trainer()
        base = dataset.layout
        layout = Layout(base.rank, base.world_size, info.num_workers, info.id, self.worker_block)
        # A worker is already a process running ahead of training; a reading thread inside it
        # would only compete with it for the interpreter.
        stream = dataset.iterate(layout, batched=batched, poll=dataset.poll_trainer, prefetch=0)
        return map(WorkerBatch, stream) if batched else stream

    @property
    def worker_block(self) -> int:
        """Sequences a DataLoader worker hands out at a time: its turn in the rank's stream."""
        return self.block * self.per_message

    def set_weights(self, step: int, weights: Mapping[str, float]) -> None:
        """Change weights from `step` on, here and in every DataLoader worker.

        Workers read ahead (`MixtureLoader.batches_ahead` batches), so with workers choose a
        step that far ahead of training; a worker that already handed out that step raises.
        """
        self.dataset.set_weights(step, weights)

    # A StatefulDataLoader asks each worker for its own state; that state cannot resume
    # exactly under another layout, so it is refused in workers with what to do instead.
    def state_dict(self) -> dict[str, Any]:
        _refuse_in_worker()
        return self.dataset.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        _refuse_in_worker()
        self.dataset.load_state_dict(state)


def _refuse_in_worker() -> None:
    if get_worker_info() is not None:
        raise ConfigError(
            "per-worker loader states (a StatefulDataLoader with workers) do not resume "
            "exactly under another layout; build the loader with torch_loader(dataset, "
            "batch_size, num_workers=...) and save dataset.state_dict()"
        )


class MixtureLoader(DataLoader):
    """A DataLoader over a `TorchMixtureDataset` that follows the batches the loop receives.

    `state_dict()`, `load_state_dict()` and `set_weights()` are the dataset's, so trainers
    that checkpoint `loader.state_dict()` work unchanged. With workers, each DataLoader item
    may hold `dataset.per_message` consecutive batches; the loop receives them one by one.
    """

    dataset: TorchMixtureDataset

    @property
    def batches_ahead(self) -> int:
        """How many batches past the one the loop has just received the workers may already
        have handed out: a weight change must come later than that (0 without workers).

        The DataLoader keeps `num_workers x prefetch_factor` items requested, each of
        `per_message` batches, and the item the loop is in holds up to `per_message - 1`
        batches more.
        """
        if self.num_workers == 0:
            return 0
        per_message = self.dataset.per_message
        items = self.num_workers * (self.prefetch_factor or 2)
        return (items + 1) * per_message - 1

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self.num_workers == 0:
            # The stream runs in this process and hands out exactly what the loop receives.
            if self.pin_memory:
                return super().__iter__()
            # Straight from the stream: the DataLoader's own loop would add a profiler record
            # and a fetch per batch (about a quarter of the loop's time at 20k batches/s).
            return map(self.collate_fn, iter(self.dataset))
        mixture, adapter = self.dataset.dataset, self.dataset
        generation = mixture.begin_worker_pass(self.num_workers, adapter.worker_block)
        if self._iterator is None or not self.persistent_workers:  # workers start now
            mixture.open_for_workers(self.num_workers, adapter.worker_block)
        inner = super().__iter__()  # the workers have their first batches: this copy goes
        mixture.worker_openings.clear()
        rows = adapter.block if adapter.per_message > 1 else None
        return Received(inner, mixture, generation, rows)

    def state_dict(self) -> dict[str, Any]:
        return self.dataset.dataset.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.dataset.dataset.load_state_dict(state)

    def set_weights(self, step: int, weights: Mapping[str, float]) -> None:
        self.dataset.set_weights(step, weights)


class Received:
    """The DataLoader's iterator, telling the dataset about each batch the loop receives.

    With `rows`, an item of the DataLoader may hold several consecutive batches of `rows`
    sequences: they are handed out one by one, each counted as the loop receives it, so a
    state saved between two of them is exact.
    """

    def __init__(
        self,
        inner: Iterator[dict[str, Any]],
        dataset: MixtureDataset,
        generation: int,
        rows: int | None = None,
    ):
        self.inner = inner
        self.dataset = dataset
        self.generation = generation
        self.rows = rows
        self.waiting: deque[dict[str, Any]] = deque()

    def __iter__(self) -> Received:
        return self

    def __next__(self) -> dict[str, Any]:
        if self.waiting:
            batch = self.waiting.popleft()
        else:
            try:
                batch = next(self.inner)
            except StopIteration:
                self.dataset.finished()  # the loop received the whole stream
                raise
            if self.rows is not None and _index(batch).numel() > self.rows:
                self.waiting.extend(split_group(batch, self.rows))
                batch = self.waiting.popleft()
        index = _index(batch)
        self.dataset.received(int(index[0]), len(index), self.generation)
        if self.rows is not None:
            self.dataset.held = sum(len(waiting["index"]) for waiting in self.waiting)
        return batch

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def close(self) -> None:
        """Stop the DataLoader's workers now (rather than when this iterator is collected)."""
        self.waiting.clear()
        shutdown = getattr(self.inner, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()


def _index(batch: Any) -> Any:
    index = batch.get("index") if isinstance(batch, Mapping) else None
    if index is None:
        raise ConfigError(
            "batches must keep their 'index' field (a collate_fn dropped it): the loader "
            "follows the stream's position with it"
        )
    return index.reshape(-1)


def torch_loader(
    dataset: MixtureDataset,
    batch_size: int | None,
    num_workers: int = 0,
    batches_per_message: int | None = None,
    **options: Any,
) -> MixtureLoader:
    """A DataLoader yielding batches in the stream's order that follows what the loop receives.

    `options` go to the DataLoader (`persistent_workers`, `pin_memory`, `prefetch_factor`,
    `multiprocessing_context`...). Save `dataset.state_dict()` (or `loader.state_dict()`)
    with each checkpoint; it is exact with workers and resumes with any layout.

    With workers, `batches_per_message` consecutive batches travel from a worker in one
    DataLoader item (the loop still receives them one by one), so that small batches share
    the DataLoader's cost per item. By default (None) batches are grouped up to about 512
    KiB a message, at most 4 (one for batches of 512 KiB or more), except with a
    `collate_fn` (it sees whole items) or an adaptive mixture (its `delay` counts on one
    batch per item). The `prefetch_factor` still counts batches: the DataLoader is given
    `ceil(prefetch_factor / batches_per_message)` items per worker. How far the workers then
    read ahead is `loader.batches_ahead`; a `set_weights` step must be further.

    An `UnpackedDataset` (`packing: none`) gets its own loader of padded batches, sized by
    the dataset (give `batch_size=None`; see `mixplane.load.unpacked.torch`).

    Example:
        >>> loader = torch_loader(dataset, 8, num_workers=2)  # 8 x 2048 int64  # doctest: +SKIP
        >>> loader.dataset.per_message, loader.batches_ahead  # doctest: +SKIP
        (2, 5)
    """
    own = getattr(dataset, "torch_loader", None)  # a dataset that builds its own loader
    if own is not None:
        return own(batch_size, num_workers, **options)
    error = "pass batch_size to torch_loader, not to the DataLoader options"
    custom_collate = options.get("collate_fn") is not None
    options = loader_options(options, error)
    if batches_per_message is None:
        automatic = num_workers > 0 and not custom_collate and dataset.adaptive is None
        batches_per_message = group_size(batch_bytes(dataset, batch_size)) if automatic else 1
    elif batches_per_message > 1 and custom_collate:
        raise ConfigError(
            "a collate_fn sees whole DataLoader items, which hold batches_per_message "
            "batches; leave batches_per_message at 1 (or None) with a collate_fn"
        )
    adapter = TorchMixtureDataset(dataset, batch_size, batches_per_message=batches_per_message)
    adapter.tracked = True
    if num_workers > 0 and adapter.per_message > 1:
        prefetch = options.get("prefetch_factor") or 2
        options["prefetch_factor"] = max(1, math.ceil(prefetch / adapter.per_message))
    return MixtureLoader(adapter, batch_size=None, num_workers=num_workers, **options)


def batch_bytes(dataset: MixtureDataset, batch_size: int) -> int:
    """About how many bytes a batch of `batch_size` sequences of this dataset holds."""
    width = dataset.seq_len + int(dataset.spec.shifted_labels)
    per_token = dataset.source.dtype.itemsize
    per_token += 4 * {"both": 2, "none": 0}.get(dataset.context.boundaries, 1)
    if dataset.spec.labels:
        per_token += 8 + 4  # labels and loss_mask (or position_ids), at most
    return batch_size * (width * per_token + 16)  # and the index and component numbers


def loader_options(options: dict[str, Any], batch_size_error: str) -> dict[str, Any]:
    """DataLoader options for an adapter that makes whole batches in the stream's order:
    refuses a batch size (`batch_size_error` says where it goes) and `in_order=False`, and
    takes batches as they come (`as_is`)."""
    if options.get("batch_size") is not None:
        raise ConfigError(batch_size_error)
    if options.get("in_order") is False:
        raise ConfigError(
            "in_order=False lets batches overtake each other, so no position says which "
            "batches the loop has had; leave in_order at True"
        )
    options = {key: value for key, value in options.items() if key != "batch_size"}
    # Batches are already tensors; the DataLoader's default conversion would only inspect
    # every field of every batch again (about 25 µs a batch).
    options.setdefault("collate_fn", as_is)
    return options


def as_is(batch: Any) -> Any:
    """The DataLoader's collate function for batches the adapter has already made."""
    return batch


_watching = False


def exit_with_parent() -> None:
    """In a DataLoader worker: end this process promptly when the training process dies.

    The DataLoader's own check runs only every few seconds while a worker waits; a worker
    reading ahead for a trainer killed by SIGKILL would otherwise live on for that long.
    """
    global _watching
    if _watching:
        return
    _watching = True
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="mixplane-parent-watch", daemon=True).start()


__all__ = [
    "MixtureLoader",
    "TorchMixtureDataset",
    "as_is",
    "as_tensors",
    "torch_loader",
]
