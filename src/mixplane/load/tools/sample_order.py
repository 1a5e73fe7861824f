"""Where a sample-weighted run (image-text) placed one sample: the inverse of its epoch plan.

An image-text run's order is `EpochPlan` (a pure function of the resolved samples, the seed
and the weights): component c's k-th pick overall is sample `perm(c, k // n)[k mod n]`, and
its pick r of an epoch sits at the blend's position of that pick. Inverting it: in each pass
p the sample is pick `p x n + (its place in perm(c, p))`, which falls in epoch
`k // picks_per_epoch` at the blend's position of pick `k mod picks_per_epoch`. So a sample's
positions are found pass by pass, without listing the epochs' orders.

A position's step and rank follow from the run's batching: ranks take an epoch's positions in
turn (rank = position in epoch mod world size), batches are global batches of batch_size x
world_size positions, and an epoch's last positions that fill no global batch are never read.

Example:
    >>> plan = EpochPlan([6, 3], [2 / 3, 1 / 3], seed=0)
    >>> sample_positions(plan, component=1, member=2, until=18).tolist()
    [2, 17]
    >>> step_and_rank(2, epoch_length=9, world_size=2, batch_size=2)
    (0, 0, True)
    >>> step_and_rank(17, epoch_length=9, world_size=2, batch_size=2)  # the epoch's tail
    (None, 0, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mixplane.load.images.plan import EpochPlan
from mixplane.load.images.resolve import SAMPLE_BITS, ResolvedImages, samples_fingerprint
from mixplane.load.tools.document_order import positions_of
from mixplane.mix.spec import MEDIA_UNUSED, MixtureSpec


def sample_positions(plan: EpochPlan, component: int, member: int, until: int) -> np.ndarray:
    """The global positions (epoch x `plan.length` + position in the epoch) before `until`
    at which `plan` puts sample `member` of `component`, ascending."""
    per_epoch, count = int(plan.picks[component]), int(plan.counts[component])
    if per_epoch == 0 or until <= 0:
        return np.zeros(0, dtype=np.int64)
    total = -(-until // plan.length) * per_epoch  # the component's picks in those epochs
    found = []
    for epoch_pass in range(-(-total // count)):
        order = plan.permutation(component, epoch_pass)
        pick = epoch_pass * count + int(np.flatnonzero(order == member)[0])
        if pick >= total:
            break
        epoch, within = divmod(pick, per_epoch)
        position = positions_of(plan.blend, component, np.array([within]))[0]
        found.append(epoch * plan.length + int(position))
    positions = np.array(found, dtype=np.int64)
    return positions[positions < until]


def step_and_rank(
    position: int, epoch_length: int, world_size: int, batch_size: int | None
) -> tuple[int | None, int, bool]:
    """`(step, rank, delivered)` of a global position in a run of `world_size` ranks with
    `batch_size` samples per batch (None: unknown, then no step and every position counts
    as delivered)."""
    epoch, within = divmod(position, epoch_length)
    rank = within % world_size
    if batch_size is None:
        return None, rank, True
    global_batch = batch_size * world_size
    per_epoch = epoch_length // global_batch
    if within >= per_epoch * global_batch:
        return None, rank, False  # the epoch's tail that fills no global batch
    return epoch * per_epoch + within // global_batch, rank, True


@dataclass
class SampleRun:
    """A recorded image-text run's order, rebuilt: its samples, its epoch plan, and its
    batch size when the trail kept it."""

    resolved: ResolvedImages
    plan: EpochPlan
    fingerprint: str
    batch_size: int | None = None

    def reads(
        self, place: Mapping[str, Any], consumed: int, intervals: Sequence[tuple[int, int, int]]
    ) -> list[dict[str, Any]]:
        """Each time before `consumed` that a loader process of the run (`intervals`:
        `(first, end, world size)` of the positions each read) was handed the sample at
        `place` (its folder, shard stem and index): position, epoch, step, rank and
        component."""
        key = (place["folder"], place["shard"])
        if key not in self.resolved.shards:
            return []  # no component selected from its shard
        wanted = (self.resolved.shards.index(key) << SAMPLE_BITS) | place["document"]
        reads = []
        resolved = self.resolved
        for c, name in enumerate(resolved.names):
            keys = (resolved.shard[c] << SAMPLE_BITS) | resolved.sample[c]
            for member in np.flatnonzero(keys == wanted).tolist():
                for position in sample_positions(self.plan, c, member, consumed).tolist():
                    read = self._read(position, intervals)
                    if read is not None:
                        reads.append(read | {"component": name, "dataset": place["dataset"]})
        return reads

    def _read(self, position: int, intervals: Sequence[tuple[int, int, int]]):
        for first, end, world_size in intervals:
            if first <= position < end:
                step, rank, delivered = step_and_rank(
                    position, self.plan.length, world_size, self.batch_size
                )
                if not delivered:
                    return None
                epoch = position // self.plan.length
                return {"position": position, "epoch": epoch, "step": step, "rank": rank}
        return None


def rebuild_samples(catalog: str, pinned: dict[str, Any], recorded: dict[str, Any]) -> SampleRun:
    """A recorded image-text run's order from its mixture pinned to the versions it read
    (`pinned`) on `catalog`; its fingerprint is the recorded mixture's over that data, so
    it equals the run's exactly when the order is the same."""
    from mixplane.catalog import Catalog
    from mixplane.load.images.resolve import resolve_images

    opened = Catalog(catalog)
    spec = _sample_spec(pinned | {"catalog": catalog})
    resolved = resolve_images(spec, opened)
    with opened.session() as session:
        versions = session.resolve(sorted(set(resolved.shard_dataset)))
        data = {version.ref: version.fingerprint for version in versions}
    plan = EpochPlan(
        resolved.counts, resolved.weights, seed=spec.seed, resolution=spec.weight_resolution
    )
    return SampleRun(resolved, plan, samples_fingerprint(_sample_spec(recorded), data))


def _sample_spec(recorded: dict[str, Any]) -> MixtureSpec:
    """A recorded sample mixture as a spec: the trail keeps every field, and the text
    mixtures' own (at their defaults there) are refused when set."""
    return MixtureSpec.parse({k: v for k, v in recorded.items() if k not in MEDIA_UNUSED})
