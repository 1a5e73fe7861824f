"""What the image and audio loaders share: a media mixture's samples, from a catalog or from
shards named directly, found by global position and read through per-process shard readers.

A loader built on `MediaSamples` gives its epoch plan (`self.plan`, an `EpochPlan`) and says
how it batches and where it stands; the samples themselves (which component, shard and
sample fills a position, the readers kept open, the node cache of remote shards) are here.

Example:
    >>> resolved, spec = open_samples("clean-images/", None, 0, None, None, None, "image_text")
    ... # doctest: +SKIP
    >>> resolved.names  # doctest: +SKIP
    ['shards']
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.images.files import ImageShardFiles
from mixplane.load.images.plan import EpochPlan
from mixplane.load.images.resolve import ResolvedImages, resolve_images
from mixplane.load.images.shards import is_shards, resolve_shards
from mixplane.load.remote.shard_cache import cache_limit
from mixplane.load.trail import RecordsRun, with_options
from mixplane.mix.spec import MixtureSpec, load_mixture
from mixplane.store.images import ImageShardReader

FORECAST_POSITIONS = 1 << 16  # positions whose shards are ordered by first use; then the rest
READERS_KEPT = 256  # open shard readers per process (each may hold a file descriptor)
# The loader of each media kind, for the message refusing a mixture of another kind.
LOADERS = {
    "image_text": "mixplane.load.images.ImageTextDataset",
    "audio_text": "mixplane.load.audio.AudioTextDataset",
}

Mixture = MixtureSpec | dict[str, Any] | str | Path | Sequence[str | Path]


def open_samples(
    mixture: Mixture,
    catalog: Any,
    seed: int | None,
    storage_options: dict[str, Any] | None,
    audit: bool | None,
    run_id: str | None,
    kind: str,
) -> tuple[ResolvedImages, MixtureSpec | None]:
    """The samples of `mixture` (a spec over the catalog, or `kind` shards named directly)
    and the spec whose trail records the run (None for shards named directly)."""
    if is_shards(mixture):
        if catalog is not None:
            raise ConfigError(f"give {kind.split('_')[0]} shards or a catalog, not both")
        return resolve_shards(mixture, seed or 0, storage_options, kind), None  # type: ignore[arg-type]
    if seed is not None or storage_options is not None:
        raise ConfigError(
            f"seed and storage_options are for {kind.split('_')[0]} shards given directly; a "
            "mixture spec sets its own seed and storage_options"
        )
    spec = with_options(load_mixture(mixture), audit, run_id)  # type: ignore[arg-type]
    if spec.kind != kind and spec.kind in LOADERS:
        raise ConfigError(
            f"this is an {spec.kind} mixture (kind: {spec.kind}): read it with {LOADERS[spec.kind]}"
        )
    return resolve_images(spec, catalog), spec  # a text spec is refused there


class MediaSamples(RecordsRun):
    """The samples of `resolved` by global position (epoch x `epoch_length` + position),
    read through this process's shard readers. A subclass sets `self.plan` (an `EpochPlan`)
    and calls `_open_files` once resolved."""

    resolved: ResolvedImages
    spec: MixtureSpec
    plan: EpochPlan
    files: ImageShardFiles

    def _open_files(self) -> None:
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

    def __getstate__(self) -> dict[str, Any]:
        # A copy for a DataLoader worker opens its own readers.
        return self.__dict__ | {"_readers": OrderedDict()}

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

    def members(self, epoch: int, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`(component, sample within the component)` of `positions` of `epoch`."""
        return self.plan.lookup(epoch, positions)

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
            chosen, members = self.members(epoch, index[mask] % length)
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

    def records(self, shards: np.ndarray, samples: np.ndarray) -> list[dict[str, Any]]:
        """The stored samples (members by extension, and `__key__`), shard by shard."""
        records: list[dict[str, Any]] = [{}] * len(shards)
        for shard in np.unique(shards).tolist():
            rows = np.flatnonzero(shards == shard)
            found = self.reader(shard).samples(samples[rows].tolist())
            for row, record in zip(rows.tolist(), found, strict=True):
                records[row] = record
        return records

    def forecast_from(self, start: int, stop: int) -> list[int]:
        """Shard numbers in the order global positions `start` to `stop` first read them
        (those first read beyond the next `FORECAST_POSITIONS` positions after, by number);
        remote shards start downloading in that order, ahead of the reads."""
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
