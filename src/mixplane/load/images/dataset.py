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
import os
from collections import OrderedDict
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
from mixplane.load.images.files import ImageShardFiles
from mixplane.load.images.plan import EpochPlan
from mixplane.load.images.resolve import ResolvedImages, resolve_images
from mixplane.load.images.shards import is_shards, resolve_shards
from mixplane.load.plan.partition import Layout
from mixplane.load.plan.state import LoaderState
from mixplane.load.remote.shard_cache import cache_limit
from mixplane.load.trail import RecordsRun, with_options
from mixplane.media import IMAGE_EXTENSIONS
from mixplane.mix.spec import MixtureSpec, load_mixture
from mixplane.store.images import ImageShardReader

FORECAST_POSITIONS = 1 << 16  # positions whose shards are ordered by first use; then the rest
READERS_KEPT = 256  # open shard readers per process (each may hold a file descriptor)


class ImageTextDataset(RecordsRun):
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
        spec = None  # a mixture over the catalog, whose trail records this rank
        if resolved is None and is_shards(mixture):
            if catalog is not None:
                raise ConfigError("give image shards or a catalog, not both")
            resolved = resolve_shards(mixture, seed or 0, storage_options)  # type: ignore[arg-type]
        elif resolved is None:
            if seed is not None or storage_options is not None:
                raise ConfigError(
                    "seed and storage_options are for image shards given directly; a mixture "
                    "spec sets its own seed and storage_options"
                )
            spec = with_options(load_mixture(mixture), audit, run_id)  # type: ignore[arg-type]
            if spec.kind == "audio_text":
                raise ConfigError(
                    "this is an audio-text mixture (kind: audio_text): read it with "
                    "mixplane.load.audio.AudioTextDataset"
                )
            resolved = resolve_images(spec, catalog)
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
        self.files = ImageShardFiles(
            self.resolved.shards,
            self.resolved.manifests,
            self.resolved.storage_options,
            self.spec.cache_dir,
            cache_limit(self.spec.cache_limit),
            ranges=self.spec.cache == "ranges",
        )
        self._readers: OrderedDict[int, ImageShardReader] = OrderedDict()
        self._pid = os.getpid()
        # This rank's entries in the catalog's audit trail (image shards given directly
        # belong to no catalog, so have none).
        if spec is not None:
            datasets = sorted(set(self.resolved.shard_dataset))
            self.begin_trail(
                spec,
                catalog,
                rank,
                world_size,
                datasets,
                kind="image_text",
                batching={"batch_size": batch_size},
            )

    def _trail_position(self) -> tuple[int, dict[str, Any]]:
        """For the trail: samples received, as the resume state counts them."""
        return self.epoch * self.epoch_length + self.position, {}

    def __getstate__(self) -> dict[str, Any]:
        # A copy for a DataLoader worker opens its own readers.
        return self.__dict__ | {"_readers": OrderedDict()}

    # -- what the stream is ------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """Component names; `batch["component"]` indexes this list."""
        return self.resolved.names

    @property
    def fingerprint(self) -> str:
        return self.resolved.fingerprint

    @property
    def epoch_length(self) -> int:
        """Sample positions in an epoch (the components' samples together)."""
        return self.plan.length

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

    def sources(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`(component, shard number, sample in shard)` of global positions `index` (as in
        `batch["index"]`); `resolved.shards[n]` is the (folder, stem) of shard number n."""
        index = np.asarray(index, dtype=np.int64)
        length = self.epoch_length
        components = np.empty(index.shape, dtype=np.int64)
        shards = np.empty(index.shape, dtype=np.int64)
        samples = np.empty(index.shape, dtype=np.int64)
        for epoch in np.unique(index // length).tolist():
            mask = index // length == epoch
            chosen, members = self.plan.lookup(epoch, index[mask] % length)
            components[mask] = chosen
            got_shards, got_samples = np.empty_like(members), np.empty_like(members)
            for c in np.unique(chosen).tolist():
                mine = chosen == c
                got_shards[mine] = self.resolved.shard[c][members[mine]]
                got_samples[mine] = self.resolved.sample[c][members[mine]]
            shards[mask], samples[mask] = got_shards, got_samples
        return components, shards, samples

    def locate(self, index: int) -> dict[str, Any]:
        """Where the sample at global position `index` is stored."""
        components, shards, samples = self.sources(np.array([index]))
        uri, stem = self.resolved.shards[int(shards[0])]
        return {
            "component": self.names[int(components[0])],
            "dataset": self.resolved.shard_dataset[int(shards[0])],
            "folder": uri,
            "shard": stem,
            "sample": int(samples[0]),
        }

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
        records: list[dict[str, Any]] = [{}] * len(index)
        for shard in np.unique(shards).tolist():
            rows = np.flatnonzero(shards == shard)
            found = self.reader(shard).samples(samples[rows].tolist())
            for row, record in zip(rows.tolist(), found, strict=True):
                records[row] = record
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
        """Shard numbers in the order the rest of the current epoch first reads them (those
        first read beyond the next `FORECAST_POSITIONS` positions after, by number); remote
        shards start downloading in that order, ahead of the reads."""
        start = self.epoch * self.epoch_length + self.position
        stop = (self.epoch + 1) * self.epoch_length
        _, shards, _ = self.sources(np.arange(start, min(stop, start + FORECAST_POSITIONS)))
        found, first = np.unique(shards, return_index=True)
        soonest = found[np.argsort(first, kind="stable")].tolist()
        listed = set(soonest)
        order = soonest + [n for n in range(len(self.resolved.shards)) if n not in listed]
        self.files.prefetch(order)
        return order

    def reader(self, shard: int) -> ImageShardReader:
        """The reader of shard number `shard` (opened once per process, a few hundred kept;
        a remote shard's cached files stay pinned while its reader is kept)."""
        if self._pid != os.getpid():  # a forked copy shares no open files or pins
            self._readers, self._pid = OrderedDict(), os.getpid()
        found = self._readers.get(shard)
        if found is None:
            found = self.files.open(shard)
            self._readers[shard] = found
            while len(self._readers) > READERS_KEPT:
                dropped, _ = self._readers.popitem(last=False)
                self.files.release(dropped)
        else:
            self._readers.move_to_end(shard)
        return found

    def cache_stats(self) -> dict[str, Any]:
        """What this process's node cache did (`ShardCache.stats`: downloads, hits, bytes,
        retries, `peak_bytes`); empty when no shard is cached."""
        return self.files.stats()

    def close(self) -> None:
        """Close this process's shard readers and drop their pins in the node cache (a
        later read opens them again)."""
        if self._pid == os.getpid():
            for shard in list(self._readers):
                del self._readers[shard]
                self.files.release(shard)
        self._readers = OrderedDict()
        self.files.close()
        self.stopped()

    def describe(self, shard: int, sample: int, key: str | None = None) -> str:
        uri, stem = self.resolved.shards[shard]
        named = f" (key {key})" if key else ""
        return (
            f"dataset {self.resolved.shard_dataset[shard]}, shard {uri}/{stem}, "
            f"sample {sample}{named}"
        )

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
