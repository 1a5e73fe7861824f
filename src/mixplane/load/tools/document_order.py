"""Which global sequences of a mixture's stream hold a given document, and which of its
tokens each took (pure: the plan and the blend, no batch read).

In each epoch a component's documents are laid end to end in a seeded order and cut into
sequences, so a document fills one token range of that order: a few consecutive sequences of
the component. The blend's inverse gives their global positions (per weight segment, where
the component's pick of that rank falls); the plan's pieces of those sequences confirm each
and give the token range taken. One numpy pass over each epoch's order per component.

Example:
    >>> place = {"dataset": "web@1", "folder": "/data/web", "shard": "shard-00000-000",
    ...          "document": 17}
    >>> sequence_reads(dataset, place, consumed=4096)  # doctest: +SKIP
    [{'position': 930, 'step': 14, 'component': 'web', 'tokens': [0, 57], ...}]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from mixplane.mix.blend import Blend

if TYPE_CHECKING:
    from mixplane.load.dataset import MixtureDataset


def sequence_reads(
    dataset: MixtureDataset, place: Mapping[str, Any], consumed: int
) -> list[dict[str, Any]]:
    """The sequences before global position `consumed` that hold tokens of the document at
    `place` (its folder, shard stem and index), with the token range each took."""
    resolved, plan = dataset.resolved, dataset.plan
    try:
        shard = resolved.shards.index((place["folder"], place["shard"]))
    except ValueError:
        return []  # no component of the mixture selected from its shard
    limit = consumed if plan.length is None else min(consumed, plan.length)
    used = plan.blend.counts_before(limit)
    step_size = dataset.spec.global_batch_size
    reads = []
    for c, ranges in enumerate(resolved.ranges):
        inside = (ranges.shard == shard) & (ranges.start <= place["document"])
        inside &= place["document"] < ranges.end
        for j in np.flatnonzero(inside).tolist():
            local = int(ranges.bases[j] + place["document"] - ranges.start[j])
            indices = component_sequences(plan.components[c], local, int(used[c]))
            positions = positions_of(plan.blend, c, indices)
            for position, begin, stop in _pieces(dataset, c, local, positions):
                stored = int(resolved.lengths[c][local] - resolved.appended[shard])
                reads.append(
                    {
                        "position": position,
                        "step": position // step_size if step_size else None,
                        "component": dataset.names[c],
                        "dataset": place["dataset"],
                        "id_place": [place["shard"], place["document"]],
                        "tokens": [begin, stop],
                        "eos": stop > stored,
                    }
                )
    return reads


def component_sequences(packed: Any, document: int, used: int) -> np.ndarray:
    """The indices (over all epochs) among a component's first `used` sequences that hold
    tokens of its document `document`: in each epoch the document fills one token range of
    the packed order, so a run of consecutive sequences."""
    per_epoch = packed.sequences_per_epoch
    found = []
    for epoch in range(math.ceil(used / per_epoch)):
        permutation, ends = packed.order(epoch)
        where = int(np.flatnonzero(permutation == document)[0])
        stop = int(ends[where])
        start = stop - int(packed.lengths[document])
        first = max(0, (start - packed.width) // packed.seq_len + 1)
        last = min(per_epoch - 1, (stop - 1) // packed.seq_len)
        found.append(epoch * per_epoch + np.arange(first, last + 1, dtype=np.int64))
    indices = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return indices[indices < used]


def positions_of(blend: Blend, component: int, indices: np.ndarray) -> np.ndarray:
    """The global positions of `component`'s sequences `indices` (the blend's inverse:
    per segment, where the component's pick of that rank falls)."""
    out = np.full(len(indices), -1, dtype=np.int64)
    for segment in blend.segments:
        if segment.weights[component] <= 0:
            continue
        first = int(segment.offsets[component])
        if segment.end is None:
            last = np.iinfo(np.int64).max
        else:
            last = first + int(segment.picks(segment.end - segment.start)[component])
        for i in np.flatnonzero((indices >= first) & (indices < last)).tolist():
            pick = int(indices[i]) - first
            out[i] = segment.start + segment.split.position_of_pick(component, pick)
    if (out < 0).any():
        raise ValueError(f"sequences {indices[out < 0].tolist()} are in no segment of the blend")
    return out


def _pieces(
    dataset: MixtureDataset, component: int, document: int, positions: np.ndarray
) -> list[tuple[int, int, int]]:
    """`(position, begin, stop)` of the document's pieces in those sequences, as the plan
    fills them (what the loader reads)."""
    if len(positions) == 0:
        return []
    block = dataset.plan.block(np.unique(positions))
    spans = block.spans
    found = []
    for c, lo, hi in block.groups:
        if c != component:
            continue
        for k in np.flatnonzero(spans.document[lo:hi] == document).tolist():
            k += lo
            row = int(spans.row[k])
            found.append((int(block.positions[row]), int(spans.begin[k]), int(spans.stop[k])))
    return found
