"""`UnpackedDataset`: an unpacked text mixture's padded batches for one rank, as numpy dicts.

Example:
    >>> dataset = UnpackedDataset("sft.yaml", rank=0, world_size=8)  # doctest: +SKIP
    >>> batch = next(iter(dataset))  # doctest: +SKIP
    >>> batch["input_ids"].shape, batch["attention_mask"].shape  # doctest: +SKIP
    ((52, 312), (52, 312))
    >>> state = dataset.state_dict()  # doctest: +SKIP
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.channel import WorkerChannel
from mixplane.load.dataset import READ_AHEAD_TOKENS, output_dtype
from mixplane.load.plan.buckets import BatchPlan, Window
from mixplane.load.plan.documents import DocumentStream
from mixplane.load.plan.partition import Layout
from mixplane.load.plan.resolved import ResolvedMixture
from mixplane.load.read.source import token_source
from mixplane.load.resolve.query import resolve_mixture
from mixplane.load.trail import RecordsRun, with_options
from mixplane.load.unpacked.batch import Located, locate, pad_id_of, padded_batches
from mixplane.load.unpacked.read_ahead import ReadAhead
from mixplane.load.unpacked.state import StepCursor, UnpackedState
from mixplane.mix.spec import MixtureSpec, load_mixture

FIXED_WINDOW_BATCHES = 64  # global batches per window of a fixed batch size (resume unit)
WINDOWS_KEPT = 3  # the window read, the next, and one planned for a replaced state


@dataclass(frozen=True)
class Step:
    """This rank's batch of step `step` of `window`: `rows` index the window's documents."""

    window: Window
    located: Located
    step: int
    rows: np.ndarray


class UnpackedDataset(RecordsRun):
    """The `packing: none` mixture's batches as seen by `rank` of `world_size`.

    Iterating yields batches: `input_ids` (rows, width) padded with the pad id,
    `attention_mask` (1 over tokens, 0 over padding), `component` and `index` (each row's
    global document position). Without `bucketing` in the mixture, give `batch_size`: rows
    are documents in the blended stream's order; with it, batches hold documents of similar
    length up to `max_tokens_per_batch` padded tokens. Every rank receives one batch per
    step, so all ranks get the same number of batches.

    `state_dict()` says what the training loop has received; `load_state_dict()` continues
    exactly from there. Another world size resumes a fixed batch size anywhere, and a
    bucketed stream at the start of a window (see `unpacked.state`); elsewhere it is
    refused. With DataLoader workers use `torch_loader(dataset, batch_size=None,
    num_workers=...)`, which follows the batches the loop receives.
    """

    def __init__(
        self,
        mixture: MixtureSpec | dict[str, Any] | str | Path,
        rank: int = 0,
        world_size: int = 1,
        *,
        batch_size: int | None = None,
        catalog: Any = None,
        dtype: str | np.dtype = "int64",
        resolved: ResolvedMixture | None = None,
        prefetch: int = 2,
        audit: bool | None = None,
        run_id: str | None = None,
    ):
        spec = with_options(load_mixture(mixture), audit, run_id)
        if spec.packing != "none":
            raise ConfigError(
                "this mixture packs documents into sequences (packing: sequences); read it "
                "with MixtureDataset, or set packing: none"
            )
        if (spec.bucketing is None) == (batch_size is None):
            raise ConfigError(
                "give UnpackedDataset a batch_size (fixed batches), or bucketing in the "
                "mixture (batches sized by max_tokens_per_batch), not both"
                if batch_size is not None
                else "an unpacked mixture without bucketing needs UnpackedDataset(batch_size=N)"
            )
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.layout = Layout(rank=rank, world_size=world_size)
        self.resolved = resolved or resolve_mixture(spec, catalog)
        self.spec = self.resolved.spec
        self.stream = DocumentStream(self.spec, self.resolved.tree, self.resolved.lengths)
        self.source = token_source(self.resolved, output_dtype(dtype, self.resolved.datasets))
        self.pad_id = pad_id_of(self.spec.pad_id, self.resolved.datasets, self.source.dtype)
        self.batch_size = batch_size
        self.cursor = StepCursor()
        self.generation = 0  # counts loaded states; passes begun before one are stale
        self._passes = 0  # counts passes in this process; an older one may not continue
        self.channel: WorkerChannel | None = None  # set up by the PyTorch adapter
        self._windows: OrderedDict[tuple[int, int], tuple[Window, Located]] = OrderedDict()
        self.prefetch = prefetch
        bucketing = self.spec.bucketing
        per_batch = bucketing.max_tokens_per_batch if bucketing else None
        per_batch = per_batch or (batch_size or 1) * self.stream.seq_len
        self.chunk = max(1, READ_AHEAD_TOKENS // per_batch)  # batches read together
        self._reading: ReadAhead | None = None  # the running pass's reading thread
        datasets = [info["dataset"] for info in self.resolved.datasets]
        self.begin_trail(spec, catalog, rank, world_size, datasets, kind="unpacked")

    def __getstate__(self) -> dict[str, Any]:
        # A copy for a DataLoader worker starts without this process's reading thread.
        return self.__dict__ | {"_reading": None}

    def _trail_position(self) -> tuple[int, dict[str, Any]]:
        """For the trail: the global position (in documents) before which the loop received
        every document (exact with fixed batches; a bucketed window's start otherwise), and
        the resume state's cursor."""
        cursor = self.cursor
        plan = self.plan
        consumed = cursor.base + cursor.window * plan.window_size
        if self.batch_size is not None:
            consumed += cursor.step * plan.unit
        return consumed, {"base": cursor.base, "window": cursor.window, "step": cursor.step}

    # -- what the stream is ------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """Component names; `batch["component"]` indexes this list."""
        return self.stream.names

    @property
    def fingerprint(self) -> str:
        return self.resolved.fingerprint

    def torch_loader(self, batch_size: int | None, num_workers: int = 0, **options: Any):
        """The PyTorch loader of this dataset's padded batches, as `torch_loader(dataset,
        ...)` builds it (see `mixplane.load.unpacked.torch`)."""
        from mixplane.load.unpacked.torch import unpacked_loader

        return unpacked_loader(self, batch_size, num_workers, **options)

    @property
    def plan(self) -> BatchPlan:
        """How the stream becomes steps from the cursor's base."""
        return self._plan(self.cursor.base)

    def _plan(self, base: int) -> BatchPlan:
        world = self.layout.world_size
        return batch_plan(self.spec, world, self.batch_size, base, self.stream.length)

    def window(self, number: int) -> Window:
        """Window `number` from the cursor's base, planned (the last few kept)."""
        return self._window(self.cursor.base, number)[0]

    def planned_window(self, number: int) -> tuple[Window, Located]:
        """Window `number` from the cursor's base with the documents it lays out (their
        components, document numbers and row lengths, in the window's order)."""
        return self._window(self.cursor.base, number)

    def _window(self, base: int, number: int) -> tuple[Window, Located]:
        # Keyed by base too: a reading thread may still plan for a state just replaced.
        found = self._windows.get((base, number))
        if found is None:
            plan = self._plan(base)
            located = locate(self.stream, self.resolved, plan.window_positions(number))
            found = (plan.plan_window(number, located.lengths), located)
            self._windows[(base, number)] = found
            while len(self._windows) > WINDOWS_KEPT:
                self._windows.popitem(last=False)
        return found

    def explain(self, position: int, properties: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Where the document at global `position` (a batch's `index`) comes from, as the one
        entry of the packed `explain`'s list: its dataset version, folder, shard, document
        index and id, the token range its row holds, its source and url, and the
        `properties` asked for (columns of the shards' metadata)."""
        from mixplane.load.read.pieces import ShardMetadata
        from mixplane.load.unpacked.forensics import document_pieces

        metadata = ShardMetadata(self, properties)
        return document_pieces(self, np.array([position], dtype=np.int64), metadata)[0]

    def read(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        """The padded batch of the documents at global `positions` (random access)."""
        located = locate(self.stream, self.resolved, positions)
        return self._fill(located, np.arange(len(located.positions)))

    def _fill(self, located: Located, rows: np.ndarray) -> dict[str, np.ndarray]:
        return self._fill_all(located, [rows])[0]

    def _fill_all(self, located: Located, batches: list[np.ndarray]) -> list[dict[str, Any]]:
        multiple = self.spec.pad_to_multiple_of
        labels = self.spec.labels == "huggingface"
        return padded_batches(located, batches, self.source, self.pad_id, multiple, labels).fill()

    # -- iteration -----------------------------------------------------------------------------

    def steps(self, workers: int = 1, worker: int = 0) -> Iterator[Step]:
        """This rank's batches from the cursor on, as `Step`s; batch j of them goes to
        DataLoader worker j mod `workers`, so the workers' batches, taken in turn, are the
        rank's stream in order."""
        cursor = self.cursor  # taken now: the iterator may run in a reading thread
        return self._steps(cursor.base, cursor.window, cursor.step, workers, worker)

    def _steps(self, base: int, number: int, step: int, workers: int, worker: int):
        rank, j = self.layout.rank, 0
        while True:
            window, located = self._window(base, number)
            if window.steps == 0:  # past the end of the stream
                return
            for s in range(step, window.steps):
                if j % workers == worker:
                    rows = window.batches[s * window.world_size + rank]
                    yield Step(window, located, s, rows)
                j += 1
            number, step = number + 1, 0

    def _chunks(self, steps: Iterator[Step]) -> Iterator[list[Step]]:
        """Steps grouped to be read together: consecutive ones of a window, up to about
        `READ_AHEAD_TOKENS` (planning and filling a batch at a time costs more than its
        copy)."""
        chunk: list[Step] = []
        for step in steps:
            if chunk and (step.window is not chunk[0].window or len(chunk) == self.chunk):
                yield chunk
                chunk = []
            chunk.append(step)
        if chunk:
            yield chunk

    def _read_chunk(self, chunk: list[Step]) -> list[dict[str, Any]]:
        return self._fill_all(chunk[0].located, [step.rows for step in chunk])

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        """The batches from where the loop is; each counts as received when handed out."""
        self._passes += 1
        self._stop_reading()
        return self._main_pass(self._passes, self.generation)

    def _main_pass(self, number: int, generation: int) -> Iterator[dict[str, np.ndarray]]:
        chunks = self._chunks(self.steps())
        if self.prefetch > 0:
            ahead = ReadAhead(chunks, self._read_chunk, self.prefetch)
            self._reading, made = ahead, iter(ahead)
        else:
            made = ((chunk, self._read_chunk(chunk)) for chunk in chunks)
        try:
            for chunk, batches in made:
                for step, batch in zip(chunk, batches, strict=True):
                    self._check_pass(number, generation)
                    self._advance(step.window, step.step)
                    yield batch
            self._check_pass(number, generation)  # a pass stopped by a newer one ends here
        finally:
            if self.prefetch > 0:
                ahead.close()

    def _check_pass(self, number: int, generation: int) -> None:
        if generation != self.generation or number != self._passes:
            raise ConfigError(
                "this iteration was overtaken by load_state_dict or a newer iteration of the "
                "same dataset; start a new one (iter(dataset))"
            )

    def _stop_reading(self) -> None:
        reading, self._reading = self._reading, None
        if reading is not None:
            reading.close()

    def worker_batches(self, workers: int, worker: int) -> Iterator[dict[str, np.ndarray]]:
        """In a DataLoader worker: its batches from the start the trainer published (a
        worker is already a process reading ahead: no thread here)."""
        for chunk in self._chunks(self.steps(workers, worker)):
            yield from self._read_chunk(chunk)

    def _advance(self, window: Window, step: int) -> None:
        if step + 1 < window.steps:
            self.cursor.window, self.cursor.step = window.number, step + 1
        else:
            self.cursor.window, self.cursor.step = window.number + 1, 0

    # -- DataLoader workers (see unpacked.torch) -----------------------------------------------

    def begin_worker_pass(self) -> int:
        """In the training process, before a DataLoader pass over its workers: the workers
        start from what the loop has received. Returns the generation, for `received`."""
        if self.channel is not None and self.channel.is_owner:
            cursor = self.cursor
            start = {"base": cursor.base, "window": cursor.window, "step": cursor.step}
            self.channel.publish({"start": start})
        return self.generation

    def sync_with_trainer(self) -> None:
        """In a DataLoader worker starting a pass: take the start the trainer published."""
        message = self.channel.latest() if self.channel is not None else None
        if message is not None and message.get("start") is not None:
            start = message["start"]
            if int(start["base"]) != self.cursor.base:
                self._windows.clear()
            self.cursor = StepCursor(int(start["base"]), int(start["window"]), int(start["step"]))

    def received(self, first: int, count: int, generation: int) -> None:
        """In the training process: the loop received the batch of `count` documents whose
        first global position is `first`; it must be the next one."""
        if generation != self.generation:
            raise ConfigError(
                "a loader state was loaded while this loader was being iterated; start a new "
                "pass (iter(loader)) after load_state_dict"
            )
        window = self.window(self.cursor.window)
        expected = window.batch(self.cursor.step, self.layout.rank)
        if window.steps == 0 or count != len(expected) or first != int(expected[0]):
            raise ConfigError(
                f"the DataLoader delivered a batch of {count} at position {first} where "
                f"the next batch was {len(expected)} at {int(expected[0])}: batches must "
                "arrive whole and in order (do not pass in_order=False or a batch_size)"
            )
        self._advance(window, self.cursor.step)

    # -- state -------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """What the training loop has received: a small dict to save with a checkpoint."""
        if self.channel is not None and self.channel.untracked_workers():
            raise ConfigError(
                "this dataset was read by DataLoader workers through a loader that does not "
                "follow what the training loop received, so its position here is stale; build "
                "the loader with torch_loader(dataset, batch_size=None, num_workers=...)"
            )
        cursor = self.cursor
        state = UnpackedState(
            self.fingerprint,
            self.layout.world_size,
            self.batch_size,
            cursor.base,
            cursor.window,
            cursor.step,
        ).to_dict()
        self.checkpointed()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a state saved by any rank (ranks advance in step, so their states
        are equal). Another world size or batch size continues from the first document not
        yet received when that is a clean cut (fixed batches, or a bucketed window's start)."""
        loaded = UnpackedState.from_dict(state)
        if loaded.fingerprint != self.fingerprint:
            raise ConfigError(
                "the loader state was saved for another mixture or other data versions "
                f"(state {loaded.fingerprint}, this loader {self.fingerprint}); resume with "
                "the same mixture spec and catalog versions"
            )
        same = (loaded.world_size, loaded.batch_size) == (self.layout.world_size, self.batch_size)
        if same:
            cursor = StepCursor(loaded.base, loaded.window, loaded.step)
        else:
            cursor = StepCursor(self._received_before(loaded))
        self._stop_reading()
        self.cursor = cursor
        self._windows.clear()
        self.generation += 1
        if self.channel is not None:
            self.channel.clear_untracked()

    def _received_before(self, loaded: UnpackedState) -> int:
        """The global position below which every document was received, for a state of
        another layout; refused where no such position exists (mid bucketed window)."""
        old = batch_plan(self.spec, loaded.world_size, loaded.batch_size, loaded.base)
        start = loaded.base + loaded.window * old.window_size
        if loaded.batch_size is not None:
            return start + loaded.step * old.unit
        if loaded.step:
            raise ConfigError(
                f"this state was saved with world_size {loaded.world_size} in the middle of a "
                f"bucketing window (step {loaded.step} of window {loaded.window}), whose "
                "batches are planned for that world size; resume it with world_size "
                f"{loaded.world_size}, or from a checkpoint saved at a window's start "
                "(state['step'] == 0)"
            )
        return start

    def close(self) -> None:
        """Stop reading ahead and let go of the shards this process holds (iterating again
        reopens them)."""
        self._stop_reading()
        self.source.close()
        self.stopped()

    def __repr__(self) -> str:
        c = self.cursor
        where = f"base {c.base}, window {c.window}, step {c.step}"
        return f"UnpackedDataset(components={self.names}, at=({where}))"


def batch_plan(
    spec: MixtureSpec,
    world_size: int,
    batch_size: int | None,
    base: int = 0,
    length: int | None = None,
) -> BatchPlan:
    """The batch plan of an unpacked mixture for a layout, from global position `base`."""
    bucketing = spec.bucketing
    if bucketing is None:
        window = FIXED_WINDOW_BATCHES * world_size * (batch_size or 1)
    else:
        window = bucketing.window
    return BatchPlan(
        world_size=world_size,
        window=window,
        seed=spec.seed,
        multiple=spec.pad_to_multiple_of,
        batch_size=batch_size,
        budget=bucketing.max_tokens_per_batch if bucketing else None,
        base=base,
        length=length,
    )
