"""`MixtureDataset`: the packed, blended stream of a mixture for one rank, as numpy dicts.

Example:
    >>> dataset = MixtureDataset("mixture.yaml", rank=0, world_size=8)  # doctest: +SKIP
    >>> sample = next(iter(dataset))  # doctest: +SKIP
    >>> sample["input_ids"].shape, sample["component"], sample["document_ids"][:4]  # doctest: +SKIP
    ((2048,), 1, array([0, 0, 0, 0], dtype=int32))
    >>> state = dataset.state_dict()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mixplane.errors import ConfigError
from mixplane.load.assemble import plan_block
from mixplane.load.partition import Layout
from mixplane.load.plan import SamplePlan
from mixplane.load.resolve import ResolvedMixture, resolve_mixture
from mixplane.load.state import LoaderState
from mixplane.load.stream import Stream
from mixplane.mix.spec import MixtureSpec, load_mixture

Boundaries = Literal["document_ids", "position_ids", "both", "none"]
READ_AHEAD_TOKENS = 1 << 21


class MixtureDataset:
    """The mixture's stream as seen by `rank` of `world_size`, from where it was left.

    Samples are dicts: `input_ids` (seq_len tokens), `component` (index into `names`),
    `index` (global position of the sequence) and per-token `document_ids` (0, 1, 2... per
    document piece in the sequence) and/or `position_ids` (restarting at each piece).

    Iterating twice continues the stream; `state_dict()` says where it stands, including
    weight changes, and `load_state_dict()` continues from there, also with another world size.

    Options: `catalog` (a `Catalog` to query instead of the spec's), `boundaries`
    (document_ids, position_ids, both or none), `dtype` of `input_ids`, `prefetch` (blocks
    filled ahead by a background thread; 0: none) and `read_ahead` (sequences per block;
    default: about 2M tokens, rounded up to whole batches). Planning costs a fixed ~0.5 ms
    per block, so blocks of a few hundred sequences or more keep it small per sequence.
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
    ):
        spec = load_mixture(mixture)
        if boundaries not in ("document_ids", "position_ids", "both", "none"):
            raise ConfigError("boundaries must be document_ids, position_ids, both or none")
        self.layout = Layout(rank=rank, world_size=world_size)
        self.resolved = resolved or resolve_mixture(spec, catalog)
        self.spec = self.resolved.spec
        self.plan = SamplePlan(self.spec, self.resolved.tree, self.resolved.lengths)
        self.source = self.resolved.source(output_dtype(dtype, self.resolved.datasets))
        self.boundaries = boundaries
        self.prefetch = prefetch
        self.read_ahead = read_ahead or max(1, READ_AHEAD_TOKENS // self.spec.seq_len)
        self.base = 0  # global position the current split starts from
        self.read = 0  # local indices handed out since `base` (the next one to read)
        self.split: list[int] = [world_size, 1, 1]  # (world, workers, block) of the split
        self._stream: Stream | None = None

    def __getstate__(self) -> dict[str, Any]:
        # A copy for another process (a spawned DataLoader worker) starts without the running
        # reader of this one; it keeps the position, so it continues from the same place.
        state = self.__dict__.copy()
        state["_stream"] = None
        return state

    # -- what the stream is ------------------------------------------------------------------

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
        return self.base + self.layout.world_size * self.read

    def __len__(self) -> int:
        """Sequences this rank will read from now on (only for a stream that ends)."""
        limit = self.layout.local_limit(self.base, self.plan.length)
        if limit is None:
            raise TypeError("the stream repeats forever (no component stops it); it has no len")
        return max(0, limit - self.read)

    def read_positions(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        """The samples at global `positions`, batched (random access, no state change)."""
        return plan_block(self, np.asarray(positions, dtype=np.int64)).fill()

    def explain(self, position: int) -> list[dict[str, Any]]:
        """Where the tokens of the sequence at `position` come from: one entry per piece,
        with the dataset folder, shard, document index and id, and the token range used."""
        block = self.plan.block(np.array([position], dtype=np.int64))
        pieces = []
        for c, doc, begin, stop, column in zip(
            block.span_component.tolist(),
            block.spans.document.tolist(),
            block.spans.begin.tolist(),
            block.spans.stop.tolist(),
            block.spans.column.tolist(),
            strict=True,
        ):
            shard, index = self.resolved.ranges[c].locate(np.array([doc]))
            number, document = int(shard[0]), int(index[0])
            uri, stem = self.resolved.shards[number]
            pieces.append(
                {
                    "component": self.names[c],
                    "dataset": uri,
                    "shard": stem,
                    "document": document,
                    "id": str(self.source.metadata_column(number, "id")[document]),
                    "tokens": [begin, stop],
                    "column": column,
                }
            )
        return pieces

    # -- iteration -------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iterate(Layout(self.layout.rank, self.layout.world_size))

    def batches(self, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
        """Iterate whole batches (arrays with a leading batch dimension)."""
        layout = Layout(self.layout.rank, self.layout.world_size, block=batch_size)
        return self.iterate(layout, batched=True)

    def torch(self, batch_size: int | None = 1, block: int = 1):
        """This stream as a PyTorch `IterableDataset` (see `torch_adapter`); torch loads here.

        Example:
            >>> loader = DataLoader(dataset.torch(batch_size=8), batch_size=None)  # doctest: +SKIP
        """
        from mixplane.load.torch_adapter import TorchMixtureDataset

        return TorchMixtureDataset(self, batch_size, block)

    def iterate(
        self, layout: Layout, batched: bool = False, poll=None, prefetch: int | None = None
    ) -> Stream:
        """The stream for one reader of this rank (a DataLoader worker, or all of it).

        `prefetch` overrides the dataset's read-ahead depth (0: no background thread).
        """
        if self._stream is not None:
            self._stream.close()
        split = [layout.world_size, layout.workers, layout.block]
        if split != self.split:
            # Another split of the stream: continue from everything consumed so far.
            self.base, self.read, self.split = self.consumed, 0, split
        self._stream = Stream(self, layout, batched, poll, prefetch)
        return self._stream

    # -- state -------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Where the stream stands: a small dict to save with a checkpoint."""
        return LoaderState(
            fingerprint=self.fingerprint,
            consumed=self.consumed,
            base=self.base,
            read=self.read,
            layout=list(self.split),
            weight_changes=[dict(c) for c in self.plan.weight_changes],
        ).to_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a state saved by any rank, with any world size or worker count."""
        loaded = LoaderState.from_dict(dict(state))
        if loaded.fingerprint != self.fingerprint:
            raise ConfigError(
                "the loader state was saved for another mixture or other data versions "
                f"(state {loaded.fingerprint}, this loader {self.fingerprint}); resume with "
                "the same mixture spec and catalog versions"
            )
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self.plan = SamplePlan(
            self.spec, self.resolved.tree, self.resolved.lengths, loaded.weight_changes
        )
        world = self.layout.world_size
        if loaded.layout[0] == world:
            # Same world size: keep the split, so each DataLoader worker continues exactly.
            self.base, self.read, self.split = loaded.base, loaded.read, list(loaded.layout)
        else:
            self.base, self.read, self.split = loaded.consumed, 0, [world, 1, 1]

    def set_weights(self, step: int, weights: Mapping[str, float]) -> None:
        """From global step `step` on, use these weights (names as in the spec or schedule).

        A step is `global_batch_size` sequences. The step must not have been read yet; the
        change is recorded in `state_dict()` so a resumed run replays it.
        """
        position = int(step) * self.spec.global_batch_size
        if position < self.consumed:
            raise ConfigError(
                f"set_weights at step {step} (sequence {position}) is in the past: this rank "
                f"has read up to sequence {self.consumed}; change weights from a later step"
            )
        self.plan.set_weights(step, weights)
        if self._stream is not None:
            self._stream.restart()


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
