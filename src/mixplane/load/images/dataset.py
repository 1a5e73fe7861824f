"""`ImageTextDataset`: the batches of an image-text mixture for one rank, as numpy dicts.

Example:
    >>> dataset = ImageTextDataset("mixture.yaml", rank=0, world_size=8, batch_size=256,
    ...                            tokenizer=tokenizer)  # doctest: +SKIP
    >>> batch = next(iter(dataset))  # doctest: +SKIP
    >>> batch["images"].shape, batch["input_ids"].shape  # doctest: +SKIP
    ((256, 3, 224, 224), (256, 77))
    >>> state = dataset.state_dict()  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from mixplane.errors import ConfigError
from mixplane.load.channel import WorkerChannel
from mixplane.load.images.batch import (
    CLIP_MEAN,
    CLIP_STD,
    BadImageError,
    CaptionTokenizer,
    ImagePreprocess,
)
from mixplane.load.images.plan import EpochPlan
from mixplane.load.images.resolve import ResolvedImages
from mixplane.load.images.samples import MediaSamples, open_samples
from mixplane.load.plan.partition import Layout
from mixplane.load.plan.state import LoaderState
from mixplane.media import IMAGE_EXTENSIONS
from mixplane.mix.spec import MixtureSpec


class ImageTextDataset(MediaSamples):
    """The image-text mixture's batches as seen by `rank` of `world_size`, from where it was
    left.

    Iterating yields the rest of the current epoch, one batch at a time: `images` float32
    (batch_size, 3, image_size, image_size), `input_ids` int64 (batch_size, context_length),
    `component` int64 (index into `names`) and `index` int64 (the sample's global position:
    epoch x `epoch_length` + position in the epoch). Each epoch has `batches_per_epoch`
    batches on every rank (whole global batches of batch_size x world_size samples; the
    epoch's last samples that do not fill one are dropped). The next iteration starts the
    next epoch.

    `state_dict()` says what the training loop has received; `load_state_dict()` continues
    from there, with any world size, batch size or DataLoader worker count: the global order
    of samples does not depend on them, and the stream continues from the same global
    position. With DataLoader workers, build the loader with `image_text_loader`, which
    follows the batches the loop receives:

        dataset = ImageTextDataset("mixture.yaml", rank=rank, world_size=world_size,
                                   batch_size=256, tokenizer=tokenizer)
        loader = image_text_loader(dataset, num_workers=8)
        if checkpoint:
            dataset.load_state_dict(checkpoint["data"])
        while dataset.epoch < epochs:
            for batch in loader:  # the rest of the current epoch
                ...
                checkpoint = {"data": dataset.state_dict(), ...}

    Without a catalog, `mixture` may instead name image shards, as `webdataset.WebDataset`
    takes them: a folder `mixplane process` wrote (`output_format: webdataset`), a shard's
    `.tar`, a brace or glob pattern, or a list of these (see `shards.resolve_shards`).
    Every sample is read, shuffled by `seed` (default 0), with the same determinism and
    resumable state; nothing is registered. `storage_options` reach remote shards.

    Remote shards of a catalog's datasets are read from the machine's node cache (the one
    token shards use: the spec's `cache_dir`, `cache_limit`), downloaded once per machine
    and checked against the registered sizes and hashes (see `images.files`); shards named
    directly have nothing registered to check and are read in place, uncached.

        dataset = ImageTextDataset("clean-images/", batch_size=256, tokenizer=tokenizer)

    `tokenizer` is a `tokenizers.Tokenizer` or a callable (caption -> token ids); captions
    are truncated or padded with `pad_id` to `context_length`. `transform` (a callable taking
    a PIL image, e.g. a torchvision transform) replaces the default resize, crop and
    normalization with `mean`/`std`. `catalog` is a `Catalog` to query instead of the spec's.
    """

    def __init__(
        self,
        mixture: MixtureSpec | dict[str, Any] | str | Path | Sequence[str | Path],
        rank: int = 0,
        world_size: int = 1,
        *,
        batch_size: int,
        tokenizer: Any,
        image_size: int = 224,
        context_length: int = 77,
        transform: Callable[[Any], Any] | None = None,
        mean: Sequence[float] = CLIP_MEAN,
        std: Sequence[float] = CLIP_STD,
        pad_id: int = 0,
        catalog: Any = None,
        resolved: ResolvedImages | None = None,
        seed: int | None = None,
        storage_options: dict[str, Any] | None = None,
        audit: bool | None = None,
        run_id: str | None = None,
    ):
        if resolved is None:
            resolved, spec = open_samples(
                mixture, catalog, seed, storage_options, audit, run_id, "image_text"
            )
        else:
            spec = None  # a mixture over the catalog, whose trail records this rank
        self.resolved = resolved
        self.spec = self.resolved.spec
        self.plan = EpochPlan(
            self.resolved.counts,
            self.resolved.weights,
            seed=self.spec.seed,
            resolution=self.spec.weight_resolution,
        )
        self.layout = Layout(rank, world_size, block=batch_size)
        if self.batches_per_epoch == 0:
            raise ConfigError(
                f"an epoch of {self.epoch_length} samples holds no global batch of batch_size "
                f"{batch_size} x world_size {world_size} = {self.layout.global_batch} samples; "
                "lower the batch size or select more samples"
            )
        self.images = ImagePreprocess(image_size, mean, std, transform)
        self.captions = CaptionTokenizer(tokenizer, context_length, pad_id)
        self.epoch = 0
        self.position = 0  # samples of the epoch received by all ranks together
        self.generation = 0  # counts loaded states; passes begun before one are stale
        self._passes = 0  # counts passes in this process; an older one may not continue
        # Set up by the PyTorch adapter: how this process reaches its DataLoader workers.
        self.channel: WorkerChannel | None = None
        self._open_files()
        # This rank's entries in the catalog's audit trail (image shards given directly
        # belong to no catalog, so have none).
        if spec is not None:
            datasets = sorted(set(self.resolved.shard_dataset))
            self.begin_trail(spec, catalog, rank, world_size, datasets, kind="image_text")

    def _trail_position(self) -> tuple[int, dict[str, Any]]:
        """For the trail: samples received, as the resume state counts them."""
        return self.epoch * self.epoch_length + self.position, {}

    # -- what the stream is ------------------------------------------------------------------

    @property
    def batch_size(self) -> int:
        return self.layout.block

    @property
    def batches_per_epoch(self) -> int:
        """Batches every rank reads in a whole epoch."""
        return self.layout.whole_batches(0, self.epoch_length)

    def __len__(self) -> int:
        """Batches this rank reads in the rest of the current epoch."""
        return self.layout.whole_batches(self.position, self.epoch_length)

    # -- reading -------------------------------------------------------------------------------

    def read(
        self, index: np.ndarray, allocate: Callable[[tuple[int, ...]], np.ndarray] | None = None
    ) -> dict[str, np.ndarray]:
        """The batch of the samples at global positions `index` (random access, no state).

        `allocate(shape)` gives the float32 array the images are written into (a DataLoader
        worker allocates it in shared memory, so the batch is never copied on its way).
        """
        index = np.asarray(index, dtype=np.int64)
        components, shards, samples = self.sources(index)
        records = self.records(shards, samples)
        allocate = allocate or (lambda shape: np.empty(shape, dtype=np.float32))
        images: np.ndarray | None = None
        captions = []
        rows = zip(shards.tolist(), samples.tolist(), records, strict=True)
        for row, (shard, sample, record) in enumerate(rows):
            where = self.describe(shard, sample, record.get("__key__"))
            data = image_bytes(record, where)
            if images is None:  # the first image gives the shape (a transform may set it)
                first = self.images(data, where)
                images = allocate((len(index), *first.shape))
                images[0] = first
            else:
                self.images(data, where, images[row])
            captions.append(caption_of(record))
        return {
            "images": images if images is not None else allocate((0, 3, 1, 1)),
            "input_ids": self.captions(captions),
            "component": components,
            "index": index,
        }

    def forecast(self) -> list[int]:
        """Shard numbers in the order the rest of the current epoch first reads them (see
        `MediaSamples.forecast_from`)."""
        start = self.epoch * self.epoch_length + self.position
        return self.forecast_from(start, (self.epoch + 1) * self.epoch_length)

    # -- iteration -----------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        """The rest of the current epoch; each batch counts as received when handed out."""
        self._passes += 1
        return self._main_pass(self._passes, self.generation)

    def _main_pass(self, number: int, generation: int) -> Iterator[dict[str, np.ndarray]]:
        epoch, start, layout = self.epoch, self.position, self.layout
        if any(self.files.cached):  # remote shards to download ahead
            self.forecast()
        for batch in range(layout.whole_batches(start, self.epoch_length)):
            read = self.read(epoch * self.epoch_length + layout.batch_positions(start, batch))
            if generation != self.generation or number != self._passes:
                raise ConfigError(
                    "this iteration was overtaken by load_state_dict or a newer iteration of "
                    "the same dataset; start a new one (iter(dataset))"
                )
            self._advance(start + (batch + 1) * layout.global_batch)
            yield read

    def worker_batches(
        self,
        workers: int,
        worker: int,
        allocate: Callable[[tuple[int, ...]], np.ndarray] | None = None,
    ) -> Iterator[dict[str, np.ndarray]]:
        """In a DataLoader worker: its batches (w, w + N, ...) of the rest of the epoch, from
        the start the training process published; the position here does not move."""
        start, first = self.position, self.epoch * self.epoch_length
        layout = dataclasses.replace(self.layout, workers=workers, worker=worker)
        if any(self.files.cached):  # remote shards to download ahead
            self.forecast()
        for batch in layout.own_batches(start, self.epoch_length):
            yield self.read(first + layout.batch_positions(start, batch), allocate)

    def _advance(self, position: int) -> None:
        """Received everything below `position`; past the last whole batch, a new epoch."""
        self.position = position
        if self.layout.whole_batches(position, self.epoch_length) == 0:
            self.epoch, self.position = self.epoch + 1, 0

    # -- DataLoader workers (see images.torch) -----------------------------------------------

    def begin_worker_pass(self) -> int:
        """In the training process, before a DataLoader pass over its workers: the workers
        start from what the loop has received. Returns the generation, for `received`."""
        if self.channel is not None and self.channel.is_owner:
            start = {"epoch": self.epoch, "position": self.position}
            self.channel.publish({"start": start})
        return self.generation

    def sync_with_trainer(self) -> None:
        """In a DataLoader worker starting a pass: take the start the trainer published."""
        message = self.channel.latest() if self.channel is not None else None
        if message is not None and message.get("start") is not None:
            self.epoch = int(message["start"]["epoch"])
            self.position = int(message["start"]["position"])

    def received(self, first: int, count: int, generation: int) -> None:
        """In the training process: the loop received the batch of `count` samples whose
        first global position is `first`; it must be the next one."""
        if generation != self.generation:
            raise ConfigError(
                "a loader state was loaded while this loader was being iterated; start a new "
                "pass (iter(loader)) after load_state_dict"
            )
        layout = self.layout
        expected = self.epoch * self.epoch_length + self.position + layout.rank
        if first != expected or count != layout.block:
            raise ConfigError(
                f"the DataLoader delivered a batch of {count} at position {first} where "
                f"{layout.block} at {expected} was next: batches must arrive whole and in "
                "order (do not pass in_order=False or another batch_size)"
            )
        self._advance(self.position + layout.global_batch)

    # -- state -------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """What the training loop has received: a small dict to save with a checkpoint (the
        text loader's `LoaderState`, counting epoch x epoch_length + position)."""
        if self.channel is not None and self.channel.untracked_workers():
            raise ConfigError(
                "this dataset was read by DataLoader workers through a loader that does not "
                "follow what the training loop received, so its position here is stale; build "
                "the loader with image_text_loader(dataset, num_workers=...)"
            )
        self.checkpointed()
        return LoaderState(self.fingerprint, self._trail_position()[0]).to_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a state saved by any rank, with any world size, batch size or worker
        count: from the same epoch and global position in it (ranks advance in step, so all
        their states are equal). The epoch then holds the whole global batches that fit in
        its remaining samples; if none fits, the next epoch starts."""
        loaded = LoaderState.matching(state, self.fingerprint)
        if loaded.weight_changes or loaded.policy is not None:
            raise ConfigError(
                "the loader state holds weight changes, which image-text mixtures do not take; "
                "it was saved by a text loader"
            )
        self.epoch, position = divmod(loaded.consumed, self.epoch_length)
        self._advance(position)
        self.generation += 1
        if self.channel is not None:
            self.channel.clear_untracked()

    def __repr__(self) -> str:
        where = orjson.dumps({"epoch": self.epoch, "position": self.position}).decode()
        return f"ImageTextDataset(components={self.names}, at={where})"


def image_bytes(record: Mapping[str, Any], where: str) -> bytes:
    """The sample's image member (the first image extension present)."""
    for ext in IMAGE_EXTENSIONS:
        data = record.get(ext)
        if data is not None:
            return bytes(data)
    members = sorted(k for k in record if not k.startswith("__"))
    raise BadImageError(f"{where}: no image member (members: {members})")


def caption_of(record: Mapping[str, Any]) -> str:
    """The sample's caption: its `.txt` member, else its `.json` member's `caption`."""
    text = record.get("txt")
    if text is not None:
        return bytes(text).decode("utf-8", errors="replace")
    meta = record.get("json")
    if meta is not None:
        caption = orjson.loads(bytes(meta)).get("caption")
        if isinstance(caption, str):
            return caption
    return ""
