"""`MixtureDataset`: the packed, blended stream of a mixture for one rank, as numpy dicts.

Example:
    >>> dataset = MixtureDataset("mixture.yaml", rank=0, world_size=8)  # doctest: +SKIP
    >>> sample = next(iter(dataset))  # doctest: +SKIP
    >>> sample["input_ids"].shape, sample["component"], sample["document_ids"][:4]  # doctest: +SKIP
    ((2048,), 1, array([0, 0, 0, 0], dtype=int32))
    >>> state = dataset.state_dict()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.channel import WorkerChannel
from mixplane.load.plan.partition import Layout
from mixplane.load.plan.resolved import ResolvedMixture
from mixplane.load.plan.samples import SamplePlan
from mixplane.load.plan.state import Cursor, LoaderState
from mixplane.load.read.assemble import ReadContext, plan_block
from mixplane.load.read.forecast import block_shards
from mixplane.load.read.refs import DocumentNumbers
from mixplane.load.read.source import TokenSource, token_source
from mixplane.load.read.stream import Stream
from mixplane.load.resolve.plan_cache import epoch_orders
from mixplane.load.resolve.query import resolve_mixture
from mixplane.load.trail import RecordsRun, weight_details, with_options
from mixplane.mix.adaptive import AdaptiveMixer
from mixplane.mix.spec import MixtureSpec, load_mixture

Boundaries = Literal["document_ids", "position_ids", "both", "none"]
READ_AHEAD_TOKENS = 1 << 21
WORKER_BLOCK_DIVISOR = 8


# What a PyTorch DataLoader given the dataset itself (which it takes for an indexed one)
# would need instead.
_NO_INDEX = (
    "To train with PyTorch, build the loader with torch_loader(dataset, batch_size, "
    "num_workers=...) from mixplane.load.torch.adapter, not DataLoader(dataset); "
    "read_positions(positions) reads given positions"
)


class MixtureDataset(RecordsRun):
    """The mixture's stream as seen by `rank` of `world_size`, from where it was left.

    Samples are dicts: `input_ids` (seq_len tokens), `component` (index into `names`),
    `index` (global position of the sequence) and per-token `document_ids` (0, 1, 2... per
    document piece in the sequence) and/or `position_ids` (restarting at each piece).

    Iterating twice continues the stream. `state_dict()` says what the training loop has
    received, weight changes included, and `load_state_dict()` continues from there, also
    with another world size or DataLoader worker count. With DataLoader workers, build the
    loader with `torch_loader`, which follows the batches the loop receives:

        dataset = MixtureDataset("mixture.yaml", rank=rank, world_size=world_size)
        loader = torch_loader(dataset, batch_size=8, num_workers=2)
        dataset.load_state_dict(checkpoint["data"])  # when resuming
        for batch in loader:
            ...
            checkpoint = {"data": dataset.state_dict(), ...}

    Options: `catalog` (a `Catalog` to query instead of the spec's), `boundaries`
    (document_ids, position_ids, both or none), `dtype` of `input_ids`, `prefetch` (blocks
    filled ahead by a background thread; 0: none), `read_ahead` (sequences per block;
    default: about 2M tokens, rounded up to whole batches) and `plan_url` (a `mixplane
    serve` service that resolves the mixture once for all ranks, instead of each machine
    querying the catalog; the same as the spec's `plan_url`) and `document_refs` (batches
    add `document_refs`, each token's dataset and document number, see
    `mixplane.load.read.refs`; the same as the spec's `document_refs`), `audit` and `run_id`
    (the spec's: whether and under which run id the rank records its start, checkpoints and
    stop in the catalog's audit trail, see `mixplane.load.trail`). Planning costs a
    fixed ~0.5 ms per block, so blocks of a few hundred sequences or more keep it small per
    sequence.
    """

    def __init__(
        self,
        mixture: MixtureSpec | dict[str, Any] | str | Path,
        rank: int = 0,
        world_size: int = 1,
        *,
        catalog: Any = None,
        boundaries: Boundaries = "document_ids",
        dtype: str | np.dtype = "int64",
        prefetch: int = 2,
        read_ahead: int | None = None,
        resolved: ResolvedMixture | None = None,
        plan_url: str | None = None,
        document_refs: bool | None = None,
        audit: bool | None = None,
        run_id: str | None = None,
    ):
        spec = with_options(load_mixture(mixture), audit, run_id)
        if spec.packing == "none":
            raise ConfigError(
                "this mixture has packing: none (whole documents, padded batches); read it "
                "with mixplane.load.unpacked.UnpackedDataset"
            )
        if plan_url:
            spec = spec.model_copy(update={"plan_url": plan_url})
        if boundaries not in ("document_ids", "position_ids", "both", "none"):
            raise ConfigError("boundaries must be document_ids, position_ids, both or none")
        self.layout = Layout(rank=rank, world_size=world_size)
        resolved = resolved or resolve_mixture(spec, catalog)
        self.spec = resolved.spec
        plan = SamplePlan(
            self.spec,
            resolved.tree,
            resolved.lengths,
            runs=resolved.runs() if self.spec.shuffle_window is not None else None,
            orders=epoch_orders(resolved),  # None: not cached, orders kept in memory
        )
        source = token_source(resolved, output_dtype(dtype, resolved.datasets))
        if document_refs is not None:  # the option wins over the spec (and a given plan's)
            self.spec = self.spec.model_copy(update={"document_refs": document_refs})
        refs = None
        if self.spec.document_refs:
            refs = DocumentNumbers.of(resolved, self.spec.storage_options, self.spec.cache_dir)
        self.context = ReadContext(plan, resolved, source, boundaries, refs)
        self.prefetch = prefetch
        self.read_ahead = read_ahead or max(1, READ_AHEAD_TOKENS // self.spec.seq_len)
        self.cursor = Cursor(split=(world_size, 1, 1))
        # Set up by a PyTorch adapter: how this process reaches its DataLoader workers.
        self.channel: WorkerChannel | None = None
        self._start: dict[str, Any] | None = None  # where the workers of this pass start
        self.generation = 0  # counts loaded states; passes begun before one are stale
        # Sequences of this rank already in this process but not yet received by the loop:
        # the rest of a DataLoader item that holds several batches (set by `Received`).
        self.held = 0
        self._stream: Stream | None = None
        # DataLoader workers' first batches, read by the training process (by positions).
        self.worker_openings: dict[bytes, dict[str, np.ndarray]] = {}
        # An adaptive mixture's decisions, fed by a `Feedback` in the training loop, which
        # registers how to bring its not yet counted losses in before a state is saved.
        self.adaptive = (
            AdaptiveMixer(self.spec, plan.tree, plan.leaf_tokens) if self.spec.policy else None
        )
        self.before_state: Callable[[], None] | None = None
        self.read_from = 0  # the position this process started reading from (a resume's)
        datasets = [info["dataset"] for info in resolved.datasets]
        self.begin_trail(spec, catalog, rank, world_size, datasets, kind="packed")

    def __getstate__(self) -> dict[str, Any]:
        # A copy for another process (a spawned DataLoader worker) starts without the running
        # reader of this one; it keeps the position, so it continues from the same place.
        state = self.__dict__.copy()
        state["_stream"] = None
        return state

    def _trail_position(self) -> tuple[int, dict[str, Any]]:
        """For the trail: how far the rank read, from where (its last loaded state), and
        the weight changes the order needs."""
        details = weight_details(self.plan.weight_changes) | {"read_from": self.read_from}
        return self.consumed, details

    # -- what the stream is ------------------------------------------------------------------

    @property
    def plan(self) -> SamplePlan:
        return self.context.plan

    @property
    def resolved(self) -> ResolvedMixture:
        return self.context.resolved

    @property
    def source(self) -> TokenSource:
        return self.context.source

    @property
    def names(self) -> list[str]:
        """Component names; `sample["component"]` indexes this list."""
        return self.plan.names

    @property
    def seq_len(self) -> int:
        return self.spec.seq_len

    @property
    def fingerprint(self) -> str:
        return self.resolved.fingerprint

    @property
    def consumed(self) -> int:
        """Global positions consumed by all ranks together (ranks advance in step)."""
        return self.cursor.consumed

    def __len__(self) -> int:
        """Sequences this rank will read from now on (only for a stream that ends)."""
        limit = self.layout.local_limit(self.cursor.base, self.plan.length)
        if limit is None:
            raise TypeError(
                f"the stream repeats forever (no component stops it); it has no len. {_NO_INDEX}"
            )
        return max(0, limit - self.cursor.read)

    def __getitem__(self, index: Any) -> Any:
        raise TypeError(f"a MixtureDataset is a stream, not indexed by position. {_NO_INDEX}")

    def read_positions(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        """The samples at global `positions`, batched (random access, no state change)."""
        return plan_block(self.context, np.asarray(positions, dtype=np.int64)).fill()

    def explain(self, position: int, properties: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Where the tokens of the sequence at `position` come from: one entry per document
        piece, in order, with its dataset version, folder, shard, document index and id, the
        token range used, its source and url, and the `properties` asked for (columns of the
        shards' metadata); see `mixplane.load.read.pieces.sequence_pieces`."""
        from mixplane.load.read.pieces import sequence_pieces

        return sequence_pieces(self, np.array([position], dtype=np.int64), properties)[0]

    # -- iteration -------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iterate(Layout(self.layout.rank, self.layout.world_size))

    def close(self) -> None:
        """Stop reading ahead and let go of the remote shards this process holds in the
        cache, so they may be evicted (iterating again reopens what it needs); the audit
        trail records that the rank stopped."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self.source.close()
        self.stopped()

    def batches(self, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
        """Iterate whole batches (arrays with a leading batch dimension)."""
        self.check_batch_size(batch_size)
        layout = Layout(self.layout.rank, self.layout.world_size, block=batch_size)
        return self.iterate(layout, batched=True)

    def check_batch_size(self, batch_size: int) -> None:
        """Refuse a per-rank batch size that does not divide the mixture's steps evenly, so
        that schedule steps and `set_weights` steps mean the training loop's steps."""
        step = self.spec.global_batch_size
        per_pass = self.layout.world_size * batch_size
        if step is not None and step % per_pass:
            raise ConfigError(
                f"global_batch_size {step} is not a multiple of world_size "
                f"{self.layout.world_size} x batch_size {batch_size} = {per_pass}, so mixture "
                f"steps would not be training steps; set global_batch_size: {per_pass} (times "
                "the gradient accumulation steps)"
            )

    def iterate(
        self,
        layout: Layout,
        batched: bool = False,
        poll: Callable[[], None] | None = None,
        prefetch: int | None = None,
    ) -> Stream:
        """The stream for one reader of this rank (a DataLoader worker, or all of it).

        `prefetch` overrides the dataset's read-ahead depth (0: no background thread).
        """
        if self._stream is not None:
            self._stream.close()
        self.cursor.resplit((layout.world_size, layout.workers, layout.block))
        prefetch = self.prefetch if prefetch is None else prefetch
        read_ahead = self.read_ahead
        if poll is not None:
            # A DataLoader worker: weight changes reach it while it reads, and a smaller
            # block wastes less when one drops what was read past the change.
            read_ahead = max(1, read_ahead // WORKER_BLOCK_DIVISOR)
        # A worker's first batch, read by the training process, goes to its first stream only.
        filled, self.worker_openings = self.worker_openings, {}
        # Read by the training process itself (not a worker): its end is the run's.
        on_end = self.finished if poll is None else None
        self._stream = Stream(
            self.context, self.cursor, layout, read_ahead, prefetch, batched, poll, filled, on_end
        )
        return self._stream

    # -- DataLoader workers (see torch_adapter) ---------------------------------------------

    def begin_worker_pass(self, workers: int, block: int) -> int:
        """In the training process, before its DataLoader starts a pass over its workers:
        the pass starts from what the loop has received (persistent workers learn it through
        the channel). Returns the pass's generation, for `received`."""
        if self.channel is None:
            raise ConfigError("begin_worker_pass needs a PyTorch adapter (use torch_loader)")
        # Always a new split from the consumed position, so that the first block of the pass
        # is worker 0's: a DataLoader asks its workers in turn, starting with worker 0.
        consumed = self.consumed
        self.held = 0
        self.cursor = Cursor(consumed, 0, (self.layout.world_size, workers, block))
        self._start = {"base": consumed, "split": list(self.cursor.split)}
        self._publish()
        return self.generation

    def open_for_workers(self, workers: int, batch_size: int) -> None:
        """In the training process, as its DataLoader workers start: read each worker's
        first batch here, and start downloading the remote shards they read.

        A worker would otherwise make its own storage client and wait for whole shards (or
        read by ranges) before its first batch; this process has a client already. The
        workers take their first batches with them (in their copy of this dataset) and hand
        them out at once, then find the shards on the way. Nothing to do for local data.
        """
        self.worker_openings.clear()
        source = self.source
        if not source.remote.any():
            return
        limit = self.layout.local_limit(self.cursor.base, self.plan.length)
        mine = []
        for worker in range(workers):
            layout = Layout(self.layout.rank, self.layout.world_size, workers, worker, batch_size)
            local = layout.owned(self.cursor.read, batch_size)
            if limit is not None:
                local = local[local < limit]
            mine.append(layout.positions(self.cursor.base, local))
        positions = np.concatenate(mine)
        if len(positions) == 0:
            return
        shards = block_shards(self.context, positions)
        filled = plan_block(self.context, positions, source.opening_by_ranges(shards)).fill()
        row = 0
        for worker_positions in mine:
            rows = slice(row, row + len(worker_positions))
            row = rows.stop
            if len(worker_positions):
                batch = {key: value[rows] for key, value in filled.items()}
                self.worker_openings[worker_positions.tobytes()] = batch
        if source.cache_mode == "shards":  # what the workers' next blocks read, most likely
            numbers, _ = source.waiting_for(shards)
            source.cache.prefetch([source.files.remote_file(number) for number in numbers])

    def received(self, first: int, count: int, generation: int) -> None:
        """In the training process: the loop received the `count` sequences of a batch
        whose first global position is `first`. Checks that it is the next one in order."""
        if generation != self.generation:
            raise ConfigError(
                "a loader state was loaded while this loader was being iterated; start a new "
                "pass (iter(loader)) after load_state_dict"
            )
        cursor, layout = self.cursor, self.layout
        expected = cursor.base + layout.rank + layout.world_size * cursor.read
        if first != expected:
            raise ConfigError(
                f"the DataLoader delivered the batch at position {first} where {expected} was "
                "next: batches must arrive in order (do not pass in_order=False)"
            )
        cursor.read += count

    def sync_with_trainer(self) -> None:
        """In a DataLoader worker starting a pass: take the start and the weight changes
        that the training process published."""
        message = self.channel.latest() if self.channel is not None else None
        if message is None:
            return
        if message.get("start") is not None:
            start = message["start"]
            self.cursor = Cursor(int(start["base"]), 0, tuple(start["split"]))
        self.plan.replace_weight_changes(message["weight_changes"])

    def poll_trainer(self) -> None:
        """In a DataLoader worker, before each item: apply weight changes made since."""
        message = self.channel.receive() if self.channel is not None else None
        if message is not None:
            self.apply_weight_changes(message["weight_changes"])

    def apply_weight_changes(self, changes: Sequence[Mapping[str, Any]]) -> None:
        """Make these weight changes (from a weight log, or published to a worker); those
        already made are skipped."""
        known = {c["step"]: c["weights"] for c in self.plan.weight_changes}
        for change in changes:
            step, weights = int(change["step"]), change["weights"]
            if known.get(step) != weights:
                self.set_weights(step, weights, change.get("details"))

    def weight_log(self) -> list[dict[str, Any]]:
        """Every weight change so far, with what decided it: `{"step", "weights",
        "details"}` (see `mixplane.load.adaptive.weight_log` to write and read them)."""
        return [dict(change) for change in self.plan.weight_changes]

    def _publish(self) -> None:
        if self.channel is not None and self.channel.is_owner:
            changes = [dict(c) for c in self.plan.weight_changes]
            self.channel.publish({"start": self._start, "weight_changes": changes})

    # -- state -------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """What the training loop has received: a small dict to save with a checkpoint."""
        if self.channel is not None and self.channel.untracked_workers():
            raise ConfigError(
                "this dataset was read by DataLoader workers through a loader that does not "
                "follow what the training loop received, so its position here is stale; build "
                "the loader with torch_loader(dataset, batch_size, num_workers=...) and save "
                "dataset.state_dict() (or loader.state_dict())"
            )
        if self.before_state is not None:
            self.before_state()
        state = LoaderState(
            fingerprint=self.fingerprint,
            consumed=self.consumed,
            weight_changes=self.weight_log(),
            policy=self.adaptive.state_dict() if self.adaptive is not None else None,
            components=list(self.names),
        ).to_dict()
        self.checkpointed()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a state saved by any rank, with any world size or worker count.

        Ranks advance in step, so every rank's state holds the same position: each new rank
        may load its own old rank's state or rank 0's.
        """
        loaded = LoaderState.matching(state, self.fingerprint, list(self.names))
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self.adaptive is not None:
            if loaded.policy is None:
                raise ConfigError("the loader state has no policy state for this adaptive mixture")
            self.adaptive.load_state_dict(loaded.policy)
        self.plan.replace_weight_changes(loaded.weight_changes)
        self.worker_openings.clear()
        self.held = 0
        self.cursor = Cursor(loaded.consumed, 0, (self.layout.world_size, 1, 1))
        self.read_from = loaded.consumed  # what this process reads starts here
        self.generation += 1
        if self.channel is not None:
            self.channel.clear_untracked()

    def set_weights(
        self, step: int, weights: Mapping[str, float], details: Mapping[str, Any] | None = None
    ) -> None:
        """From global step `step` on, use these weights (names as in the spec or schedule).

        A step is `global_batch_size` sequences. The step must not have been read yet; the
        change is recorded (with `details`, any JSON values) in `state_dict()` so a resumed
        run replays it, and reaches the DataLoader workers of a `torch_loader`.
        """
        position = int(step) * self.spec.sequences_per_step("set_weights steps")
        if position < self.consumed:
            raise ConfigError(
                f"set_weights at step {step} (sequence {position}) is in the past: this rank "
                f"has read up to sequence {self.consumed}; change weights from a later step"
            )
        arrived = self.consumed + self.layout.world_size * self.held
        if position < arrived:
            raise ConfigError(
                f"set_weights at step {step} (sequence {position}) is in the past: DataLoader "
                f"workers already handed out the batches up to sequence {arrived}, which wait "
                "here for the loop; change weights from a later step (at least "
                "loader.batches_ahead batches ahead)"
            )
        self.plan.set_weights(step, weights, details)
        self.worker_openings.clear()  # read under the old weights
        if self._stream is not None:
            self._stream.weights_changed(position)
        self._publish()


def output_dtype(dtype: str | np.dtype, datasets: list[dict[str, Any]]) -> np.dtype:
    """The dtype of `input_ids`, checked to hold every token id of the mixture's datasets."""
    out = np.dtype(dtype)
    if out.kind not in "iu":
        raise ConfigError(f"dtype must be an integer type, got {out}")
    for info in datasets:
        tokenizer = info.get("tokenizer") or {}
        stored = np.dtype(tokenizer.get("dtype", "uint32"))
        largest = tokenizer.get("vocab_size", np.iinfo(stored).max + 1) - 1
        if largest > np.iinfo(out).max or stored.itemsize > out.itemsize:
            raise ConfigError(
                f"dtype {out} cannot hold the token ids of {info.get('dataset')} (stored as "
                f"{stored}, ids up to {largest}); use int32 or int64"
            )
    return out
