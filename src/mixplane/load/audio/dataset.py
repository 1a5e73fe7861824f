"""`AudioTextDataset`: the batches of an audio-text mixture for one rank, as numpy dicts.

Example:
    >>> dataset = AudioTextDataset("speech.yaml", rank=0, world_size=8, batch_seconds=320)
    ... # doctest: +SKIP
    >>> batch = next(iter(dataset))  # doctest: +SKIP
    >>> batch["audio"].shape, batch["lengths"].max() <= batch["audio"].shape[1]  # doctest: +SKIP
    ((23, 218880), True)
    >>> state = dataset.state_dict()  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import orjson

from mixplane.errors import ConfigError
from mixplane.load.audio.batch import ClipDecoder, Features, audio_bytes, pad_clips
from mixplane.load.audio.clips import clip_frames, sample_weights
from mixplane.load.audio.options import LoaderOptions
from mixplane.load.audio.plan import Batching, History, Window, check_budget, plan_window
from mixplane.load.audio.state import (
    AudioCursor,
    AudioState,
    advanced,
    carried_over,
    epoch_steps,
)
from mixplane.load.channel import WorkerChannel
from mixplane.load.images.batch import CaptionTokenizer
from mixplane.load.images.dataset import caption_of
from mixplane.load.images.plan import EpochPlan
from mixplane.load.images.resolve import ResolvedImages
from mixplane.load.images.samples import MediaSamples, Mixture, open_samples
from mixplane.load.plan.partition import Layout
from mixplane.mix.tree import MixtureTree

WINDOWS_KEPT = 3  # the window read, the next, and one planned for a replaced state


class AudioTextDataset(MediaSamples):
    """The audio-text mixture's batches as seen by `rank` of `world_size`, from where it was
    left.

    Iterating yields the rest of the current epoch, one batch at a time (numpy):

    - `audio` float32 (B, T): the clips, mono at `sample_rate`, zero-padded to the batch's
      longest (T rounded up to `pad_multiple`); `attention_mask` bool (B, T), True over a
      clip's frames; `lengths` int64 (B,) frames.
    - `text`: the transcripts (list of str); with a `tokenizer`, `input_ids` int64
      (B, context_length) padded with `pad_id` and `text_mask` bool (B, context_length).
    - `component` int64 (index into `names`), `index` int64 (the clip's global position:
      epoch x `epoch_length` + position in the epoch).
    - with `features` a callable `features(audio, lengths) -> dict`, its arrays too (e.g.
      log-mel features; `features="waveform"`, the default, adds none).

    Give `batch_seconds` (batches of clips of similar length, at most that many seconds of
    padded audio each: length bucketing) or `batch_size` (that many clips a batch, in
    stream order), not both. Every rank gets the same number of batches per window of
    `window` clips (see `audio.plan`). A clip longer than `batch_seconds` is refused when
    the dataset is built, unless `max_seconds` cuts clips to that length.

    The order of clips is the image loader's (`EpochPlan`: the mixture's weights over
    samples, each component's clips shuffled per pass); with `weigh_by: seconds` in the
    mixture, the weights are shares of seconds of audio, turned into shares of clips by
    each component's mean clip length (`audio.clips.sample_weights`).

    `state_dict()` says what the training loop has received; `load_state_dict()` continues
    exactly from there, with the same layout; another world size, batch size, budget or
    window continues without repeating a clip (see `audio.state` for what becomes of the
    window in progress). With DataLoader workers, build the loader with
    `audio_text_loader`, which follows the batches the loop receives.

    `mixture` is an `audio_text` mixture spec (YAML or JSON path, dict, `MixtureSpec`) over
    the catalog (`catalog`: a `Catalog` to query instead of the spec's), or audio shards
    named directly (a folder `mixplane process` wrote with `output_media: audio`, a `.tar`,
    a brace or glob pattern, or a list of these), read whole and shuffled by `seed`.
    """

    def __init__(
        self,
        mixture: Mixture,
        rank: int = 0,
        world_size: int = 1,
        *,
        sample_rate: int = 16000,
        batch_seconds: float | None = None,
        batch_size: int | None = None,
        max_seconds: float | None = None,
        pad_multiple: int = 1,
        window: int = 2048,
        tokenizer: Any = None,
        context_length: int = 256,
        pad_id: int = 0,
        features: str | Features = "waveform",
        resample_quality: str = "HQ",
        catalog: Any = None,
        resolved: ResolvedImages | None = None,
        seed: int | None = None,
        storage_options: dict[str, Any] | None = None,
        audit: bool | None = None,
        run_id: str | None = None,
    ):
        options = LoaderOptions.checked(
            sample_rate, batch_seconds, batch_size, max_seconds, pad_multiple, window, features
        )
        self.options = options
        self.layout = Layout(rank, world_size)
        if resolved is None:
            resolved, spec = open_samples(
                mixture, catalog, seed, storage_options, audit, run_id, "audio_text"
            )
        else:
            spec = None  # a mixture over the catalog, whose trail records this rank
        self.resolved = resolved
        self.spec = resolved.spec
        self.frames = clip_frames(
            resolved.shards, resolved.shard, resolved.sample, sample_rate, resolved.storage_options
        )
        if options.max_frames is not None:
            self.frames = [np.minimum(f, options.max_frames) for f in self.frames]
        self.plan = EpochPlan(
            resolved.counts,
            self.sample_weights(),
            seed=self.spec.seed,
            resolution=self.spec.weight_resolution,
        )
        self.batching = Batching(
            world_size, options.batch_size, options.budget, options.window, options.pad_multiple
        )
        self._open_files()
        self._check_clips_fit()
        if self.epoch_length < self.batching.unit:
            raise ConfigError(
                f"an epoch of {self.epoch_length} clips holds no step of {self.batching.unit} "
                f"clips (batch_size x world_size, or one per rank); select more clips"
            )
        digest = hashlib.sha256(resolved.fingerprint.encode())
        digest.update(orjson.dumps([sample_rate, options.max_frames]))
        self._fingerprint = digest.hexdigest()[:32]
        self.decoder = ClipDecoder(sample_rate, resample_quality)
        self.captions = (
            CaptionTokenizer(tokenizer, context_length, pad_id) if tokenizer is not None else None
        )
        self.features = options.features
        self.cursor = AudioCursor()
        self.generation = 0  # counts loaded states; passes begun before one are stale
        self._passes = 0  # counts passes in this process; an older one may not continue
        self._windows: OrderedDict[tuple[Any, ...], Window] = OrderedDict()
        # Set up by the PyTorch adapter: how this process reaches its DataLoader workers.
        self.channel: WorkerChannel | None = None
        if spec is not None:
            datasets = sorted(set(resolved.shard_dataset))
            self.begin_trail(spec, catalog, rank, world_size, datasets, kind="audio_text")

    def sample_weights(self) -> np.ndarray:
        """The components' shares of clips: the resolved ones, or with `weigh_by: seconds`
        the spec's shares of seconds turned into shares of clips."""
        if self.spec.weigh_by != "seconds":
            return self.resolved.weights
        totals = np.array([f.sum() for f in self.frames], dtype=np.float64)
        counts = np.maximum(np.array(self.resolved.counts, dtype=np.float64), 1)
        seconds = MixtureTree(self.spec).leaf_weights(totals / self.options.sample_rate)
        return sample_weights(seconds, totals / counts / self.options.sample_rate)

    def _check_clips_fit(self) -> None:
        """Refuse a clip no batch can hold, naming it and the option to change."""
        budget = self.options.budget
        if budget is None:
            return
        longest = max(self.frames, key=lambda f: int(f.max()) if len(f) else 0)
        found = check_budget(longest, budget, self.options.pad_multiple)
        if found < 0:
            return
        c = next(i for i, f in enumerate(self.frames) if f is longest)
        shard, sample = int(self.resolved.shard[c][found]), int(self.resolved.sample[c][found])
        key = self.reader(shard).sample(sample).get("__key__")
        seconds = int(longest[found]) / self.options.sample_rate
        raise ConfigError(
            f"the longest clip ({self.describe(shard, sample, key)}, {seconds:.2f} s) does "
            f"not fit a batch of batch_seconds={self.options.batch_seconds}; raise "
            f"batch_seconds to at least {math.ceil(seconds * 100) / 100}, or cut clips with "
            "max_seconds"
        )

    def _trail_position(self) -> tuple[int, dict[str, Any]]:
        """For the trail: the global position below which every clip was received (the
        window in progress's start, or exact with a fixed batch size), and the cursor."""
        cursor = self.cursor
        consumed = cursor.epoch * self.epoch_length + cursor.start
        if self.options.batch_size is not None and not cursor.history:
            consumed += cursor.step * self.batching.unit
        return consumed, {"epoch": cursor.epoch, "start": cursor.start, "step": cursor.step}

    # -- what the stream is ------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """Of the mixture, its data versions, `sample_rate` and `max_seconds`."""
        return self._fingerprint

    @property
    def epoch(self) -> int:
        return self.cursor.epoch

    def lengths_of(self, epoch: int, positions: np.ndarray) -> np.ndarray:
        """Clip lengths (frames at `sample_rate`) of `positions` of `epoch`."""
        components, members = self.members(epoch, positions)
        lengths = np.empty(len(positions), dtype=np.int64)
        for c in np.unique(components).tolist():
            mine = components == c
            lengths[mine] = self.frames[c][members[mine]]
        return lengths

    def window(self, epoch: int, start: int, history: History = ()) -> Window:
        """The window of `epoch` at position `start` as this layout reads it (a few kept)."""
        return self._plan(epoch, start, history, self.batching)

    def _plan(self, epoch: int, start: int, history: History, batching: Batching) -> Window:
        key = (epoch, start, history, batching)
        found = self._windows.get(key)
        if found is None:
            found = plan_window(
                epoch,
                start,
                history,
                batching,
                self.epoch_length,
                lambda positions: self.lengths_of(epoch, positions),
                self.spec.seed,
            )
            self._windows[key] = found
            while len(self._windows) > WINDOWS_KEPT:
                self._windows.popitem(last=False)
        else:
            self._windows.move_to_end(key)
        return found

    def __len__(self) -> int:
        """Batches this rank reads in the rest of the current epoch."""
        return sum(1 for _ in self._steps(self.cursor, 1, 0))

    @property
    def batches_per_epoch(self) -> int:
        """Batches every rank reads in the whole current epoch (bucketed epochs may differ
        by a few: each epoch's clips are drawn and batched anew)."""
        return sum(1 for _ in self._steps(AudioCursor(self.cursor.epoch), 1, 0))

    # -- reading -------------------------------------------------------------------------------

    def read(self, index: np.ndarray) -> dict[str, Any]:
        """The batch of the clips at global positions `index` (random access, no state)."""
        index = np.asarray(index, dtype=np.int64)
        components, shards, samples = self.sources(index)
        length = self.epoch_length
        frames = np.empty(len(index), dtype=np.int64)
        for epoch in np.unique(index // length).tolist():
            mask = index // length == epoch
            frames[mask] = self.lengths_of(epoch, index[mask] % length)
        clips, texts = [], []
        records = self.records(shards, samples)
        rows = zip(shards.tolist(), samples.tolist(), records, frames.tolist(), strict=True)
        for shard, sample, record, limit in rows:
            where = self.describe(shard, sample, record.get("__key__"))
            clips.append(self.decoder(audio_bytes(record, where), where, limit))
            texts.append(caption_of(record))
        audio, mask, lengths = pad_clips(clips, self.options.pad_multiple)
        batch: dict[str, Any] = {
            "audio": audio,
            "attention_mask": mask,
            "lengths": lengths,
            "text": texts,
            "component": components,
            "index": index,
        }
        if self.captions is not None:
            batch["input_ids"], batch["text_mask"] = self.captions.encode(texts)
        if self.features is not None:
            batch.update(self.features(audio, lengths))
        return batch

    def forecast(self) -> list[int]:
        """Shard numbers in the order the rest of the current epoch first reads them (see
        `MediaSamples.forecast_from`)."""
        first = self.cursor.epoch * self.epoch_length
        return self.forecast_from(first + self.cursor.start, first + self.epoch_length)

    # -- iteration -----------------------------------------------------------------------------

    def _steps(
        self, cursor: AudioCursor, workers: int, worker: int
    ) -> Iterator[tuple[Window, int]]:
        """This rank's (window, step) from `cursor` to the end of its epoch; batch j of them
        goes to DataLoader worker j mod `workers`."""
        steps = epoch_steps(cursor, self.batching, self.epoch_length, self._plan)
        for j, found in enumerate(steps):
            if j % workers == worker:
                yield found

    def _batch(self, window: Window, step: int) -> dict[str, Any]:
        first = window.epoch * self.epoch_length
        return self.read(first + window.batch(step, self.layout.rank))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The rest of the current epoch; each batch counts as received when handed out."""
        self._passes += 1
        return self._main_pass(self._passes, self.generation)

    def _main_pass(self, number: int, generation: int) -> Iterator[dict[str, Any]]:
        if any(self.files.cached):  # remote shards to download ahead
            self.forecast()
        for window, step in self._steps(self.cursor, 1, 0):
            batch = self._batch(window, step)
            if generation != self.generation or number != self._passes:
                raise ConfigError(
                    "this iteration was overtaken by load_state_dict or a newer iteration of "
                    "the same dataset; start a new one (iter(dataset))"
                )
            self._advance(window, step)
            yield batch

    def worker_batches(self, workers: int, worker: int) -> Iterator[dict[str, Any]]:
        """In a DataLoader worker: its batches (w, w + N, ...) of the rest of the epoch, from
        the start the training process published; the cursor here does not move."""
        if any(self.files.cached):
            self.forecast()
        for window, step in self._steps(self.cursor, workers, worker):
            yield self._batch(window, step)

    def _advance(self, window: Window, step: int) -> None:
        """Received `step` of `window`: the next step, window, or epoch."""
        cursor = AudioCursor(window.epoch, window.start, step, self.cursor.history)
        self.cursor = advanced(cursor, window, self.batching, self.epoch_length)

    # -- DataLoader workers (see audio.torch) --------------------------------------------------

    def begin_worker_pass(self) -> int:
        """In the training process, before a DataLoader pass over its workers: the workers
        start from what the loop has received. Returns the generation, for `received`."""
        if self.channel is not None and self.channel.is_owner:
            state = AudioState(self.fingerprint, self.cursor, self.batching)
            self.channel.publish({"start": state.to_dict()})
        return self.generation

    def sync_with_trainer(self) -> None:
        """In a DataLoader worker starting a pass: take the start the trainer published."""
        message = self.channel.latest() if self.channel is not None else None
        if message is not None and message.get("start") is not None:
            self.cursor = AudioState.from_dict(message["start"]).cursor

    def received(self, first: int, count: int, generation: int) -> None:
        """In the training process: the loop received the batch of `count` clips whose
        first global position is `first`; it must be the next one."""
        if generation != self.generation:
            raise ConfigError(
                "a loader state was loaded while this loader was being iterated; start a new "
                "pass (iter(loader)) after load_state_dict"
            )
        cursor = self.cursor
        window = self.window(cursor.epoch, cursor.start, cursor.history)
        expected = window.batch(cursor.step, self.layout.rank) if window.steps else None
        at = None if expected is None else cursor.epoch * self.epoch_length + int(expected[0])
        if expected is None or count != len(expected) or first != at:
            raise ConfigError(
                f"the DataLoader delivered a batch of {count} at position {first} where the "
                f"next batch was {0 if expected is None else len(expected)} at {at}: batches "
                "must arrive whole and in order (do not pass in_order=False or a batch_size)"
            )
        self._advance(window, cursor.step)

    # -- state -------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """What the training loop has received: a small dict to save with a checkpoint."""
        if self.channel is not None and self.channel.untracked_workers():
            raise ConfigError(
                "this dataset was read by DataLoader workers through a loader that does not "
                "follow what the training loop received, so its position here is stale; build "
                "the loader with audio_text_loader(dataset, num_workers=...)"
            )
        self.checkpointed()
        return AudioState(self.fingerprint, self.cursor, self.batching).to_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a state saved by any rank (ranks advance in step, so their states
        are equal); another layout continues as `audio.state` says."""
        loaded = AudioState.from_dict(state)
        if loaded.fingerprint != self.fingerprint:
            raise ConfigError(
                "the loader state was saved for another mixture, other data versions, or "
                f"another sample_rate or max_seconds (state {loaded.fingerprint}, this loader "
                f"{self.fingerprint}); resume with the same ones"
            )
        self.cursor = carried_over(loaded, self.batching, self.epoch_length, self._plan)
        self.generation += 1
        if self.channel is not None:
            self.channel.clear_untracked()

    def __repr__(self) -> str:
        c = self.cursor
        where = orjson.dumps({"epoch": c.epoch, "start": c.start, "step": c.step}).decode()
        return f"AudioTextDataset(components={self.names}, at={where})"
