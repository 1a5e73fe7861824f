"""`cache: ranges`: only the bytes of the pieces read are fetched from S3 (through a proxy
that injects faults), each checksum unit verified, and the stream is the local one."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_load_shard_cache import (
    SEQUENCES,
    mixture,
    one_byte_changed,
    stores,
    through,
)

from mixplane.catalog import Catalog
from mixplane.errors import ConfigError, InputError
from mixplane.io.atomic import write_bytes
from mixplane.io.flaky_proxy import Faults, FlakyProxy
from mixplane.load import MixtureDataset
from mixplane.load.read.assemble import plan_block
from mixplane.load.read.range_reads import plan_ranges
from mixplane.manifest import read_json
from mixplane.store import ShardReader
from mixplane.store.checksums import UnitSums, shard_sums, unit_starts

__all__ = ["stores"]  # the module's S3 datasets, shared with the whole-shard tests


def ranged(spec: dict) -> dict:
    return dict(spec, cache="ranges")


def test_ranges_under_faults_give_the_local_stream(stores, s3_server, tmp_path):
    cache = tmp_path / "cache"
    proxy = FlakyProxy(s3_server["endpoint_url"], Faults(every=2, match=r"\.bin$", burst=2))
    with proxy as proxy_url:
        spec = ranged(mixture(stores["catalog"], cache, through(proxy_url, s3_server), "4KB"))
        dataset = MixtureDataset(spec, read_ahead=50, prefetch=1)
        got = np.stack([b["input_ids"] for _, b in zip(range(SEQUENCES), dataset, strict=False)])
        dataset.close()
    assert np.array_equal(got, stores["expected"]["input_ids"])
    assert {"error", "reset", "cut", "slow", "flip"} <= set(proxy.counters)
    stats = dataset.source.stats()
    assert stats["ranges"]["requests"] > 0 and stats["ranges"]["unit_mismatches"] > 0
    # No token file was copied: the cache held only checksums, within a limit far below
    # one shard (by the cache's own high-water mark, taken at each reservation).
    assert not list((cache / "shards").glob("*.bin"))
    assert 0 < dataset.source.cache.stats()["peak_bytes"] <= 4000
    assert 0 < stats["downloads"] <= len(stores["shards"])  # checksums of a shard once


def test_ranges_fetch_exactly_the_units_of_the_pieces_read(stores, s3_server, tmp_path):
    """One rank of four, nothing joined across gaps: the bytes fetched are those of the
    checksum units its pieces touch, counted here from the local copies."""
    spec = ranged(mixture(stores["catalog"], tmp_path / "cache", s3_server))
    dataset = MixtureDataset(spec, rank=0, world_size=4, read_ahead=25, prefetch=0)
    dataset.source.ranges.gap_bytes = 0
    # Whole blocks: the opening one (one sequence), then four of 25.
    got = np.stack([batch["input_ids"] for _, batch in zip(range(101), dataset, strict=False)])
    local = MixtureDataset(mixture(stores["local"], tmp_path / "local", {}))
    positions = np.arange(404)[0::4]  # rank 0 of 4 reads every fourth sequence
    assert np.array_equal(got, local.read_positions(positions)["input_ids"])
    every_sums: dict[int, UnitSums] = {}

    def sums_of(shard: int) -> UnitSums:
        if shard not in every_sums:
            uri, stem = local.source.shards[shard]
            reader = ShardReader(f"{uri}/{stem}")
            every_sums[shard] = shard_sums(np.asarray(reader.tokens), reader.lengths())
        return every_sums[shard]

    expected = 0
    planned_blocks = [plan_block(local.context, b) for b in np.split(positions, [1, 26, 51, 76])]
    for planned in planned_blocks:
        live = planned.take > 0
        units = set()
        for shard, first, take in zip(
            planned.shard[live], planned.first[live], planned.take[live], strict=True
        ):
            sums = sums_of(int(shard))
            lo, hi = sums.covering(np.array([first]), np.array([first + take]))
            units |= {(int(shard), int(u), int(sums.starts[u + 1] - sums.starts[u]))
                      for u in range(int(lo[0]), int(hi[0]))}  # fmt: skip
        expected += 2 * sum(size for *_, size in units)  # uint16 tokens
    stats = dataset.source.stats()
    assert stats["ranges"]["bytes"] == expected
    assert expected < 0.5 * sum(stores["shard_bytes"].values())
    consumed = stats["ranges"]["consumed_bytes"]
    assert consumed == 2 * sum(int(p.take.sum()) for p in planned_blocks)
    assert stats["downloaded_per_consumed"] == pytest.approx(
        (expected + stats["downloaded_bytes"]) / consumed
    )


def test_ranges_with_dataloader_workers_resume_exactly(stores, s3_server, tmp_path):
    """Two DataLoader workers, each fetching its own blocks' ranges; stopped after 5 batches
    and resumed from the state dict, the batches are those of one uninterrupted pass."""
    from mixplane.load.torch import torch_loader

    spec = ranged(mixture(stores["catalog"], tmp_path / "cache", s3_server))
    expected = stores["expected"]["input_ids"][:80]
    dataset = MixtureDataset(spec, read_ahead=8)
    loader = torch_loader(dataset, 8, num_workers=2)
    first = [batch["input_ids"].numpy() for _, batch in zip(range(5), loader, strict=False)]
    state = dataset.state_dict()
    del loader
    resumed = MixtureDataset(spec, read_ahead=8)
    resumed.load_state_dict(state)
    rest = [
        b["input_ids"].numpy()
        for _, b in zip(range(5), torch_loader(resumed, 8, num_workers=2), strict=False)
    ]
    assert np.array_equal(np.concatenate(first + rest), expected)


def test_a_changed_byte_is_caught_and_named_with_its_range(stores, s3_server, tmp_path):
    with one_byte_changed(stores) as path:
        spec = ranged(mixture(stores["catalog"], tmp_path / "cache", s3_server))
        dataset = MixtureDataset(spec, read_ahead=SEQUENCES, prefetch=0)
        dataset.source.retry.base_seconds = 0.01
        name = path.rsplit("/", 1)[-1]
        with pytest.raises(InputError, match=rf"{name} bytes \d+-\d+: checksum unit \d+"):
            for _ in dataset:
                pass
        assert dataset.source.stats()["ranges"]["unit_mismatches"] == dataset.source.retry.attempts


def test_a_dataset_without_checksums_is_refused_with_what_to_do(stores, s3_server, tmp_path):
    """A dataset registered before shards had `.sums`: its manifest lists none."""
    manifest_url = f"s3://{stores['bucket']}/tokens/web/_manifest.json"
    original = read_json(manifest_url, s3_server)
    older = dict(original)
    older["outputs"] = [o for o in original["outputs"] if not o["path"].endswith(".sums")]
    write_bytes(manifest_url, orjson.dumps(older), s3_server)
    try:
        catalog = Catalog(str(tmp_path / "catalog.duckdb"), storage_options=s3_server)
        for name in ("wiki", "code", "web"):
            catalog.register(f"s3://{stores['bucket']}/tokens/{name}", name=name)
        spec = ranged(mixture(catalog.path, tmp_path / "cache", s3_server))
        with pytest.raises(ConfigError, match=r"web: shard .* has no range checksums .* again"):
            next(iter(MixtureDataset(spec, read_ahead=SEQUENCES, prefetch=0)))
    finally:
        write_bytes(manifest_url, orjson.dumps(original), s3_server)


# -- the pure parts ----------------------------------------------------------------------


@st.composite
def shards_and_pieces(draw):
    """A few shards of random document lengths, and pieces inside their documents."""
    unit = draw(st.integers(1, 8))
    lengths = [draw(st.lists(st.integers(0, 30), min_size=1, max_size=12)) for _ in range(3)]
    sums = []
    for doc_lengths in lengths:
        starts = unit_starts(np.array(doc_lengths), unit)
        sums.append(UnitSums(unit, starts, np.zeros(len(starts) - 1, np.uint64)))
    pieces = []
    for _ in range(draw(st.integers(1, 20))):
        shard = draw(st.integers(0, 2))
        offsets = np.concatenate(([0], np.cumsum(lengths[shard])))
        docs = [d for d, n in enumerate(lengths[shard]) if n > 0]
        if not docs:
            continue
        doc = draw(st.sampled_from(docs))
        begin = draw(st.integers(0, lengths[shard][doc] - 1))
        take = draw(st.integers(1, lengths[shard][doc] - begin))
        pieces.append((shard, int(offsets[doc]) + begin, take))
    return unit, sums, pieces, draw(st.integers(0, 40))


@settings(max_examples=300, deadline=None)
@given(shards_and_pieces())
def test_planned_ranges_cover_every_piece_with_whole_units(case):
    unit, sums, pieces, gap = case
    if not pieces:
        return
    shard, first, take = (np.array(column, dtype=np.int64) for column in zip(*pieces, strict=True))
    plan = plan_ranges(shard, first, take, lambda n: sums[n], itemsize=2, gap_bytes=gap)
    for number in range(3):
        mine = np.flatnonzero(plan.shard == number)
        # Disjoint, sorted, and further apart than the gap (else they would be one).
        starts = sums[number].starts.astype(np.int64)
        gaps = (starts[plan.lo[mine][1:]] - starts[plan.hi[mine][:-1]]) * 2
        assert np.all(gaps > gap)
    for i in range(len(shard)):
        k = plan.interval[i]
        starts = sums[shard[i]].starts.astype(np.int64)
        assert plan.shard[k] == shard[i]
        assert starts[plan.lo[k]] <= first[i] and first[i] + take[i] <= starts[plan.hi[k]]
    # Every unit fetched holds a piece, or lies in a gap no wider than `gap` bytes.
    for k in range(len(plan.lo)):
        starts = sums[plan.shard[k]].starts.astype(np.int64)
        mine = plan.shard[plan.interval] == plan.shard[k]
        used = np.zeros(plan.hi[k] - plan.lo[k], dtype=bool)
        for f, t in zip(first[mine], take[mine], strict=True):
            lo = np.searchsorted(starts, f, "right") - 1
            hi = np.searchsorted(starts, f + t, "left")
            used[max(lo, plan.lo[k]) - plan.lo[k] : max(hi, plan.lo[k]) - plan.lo[k]] = True
        assert used[0] and used[-1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=20), st.integers(1, 16))
def test_units_cut_documents_and_never_span_two(lengths, unit):
    starts = unit_starts(np.array(lengths, dtype=np.int64), unit).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    assert starts[-1] == offsets[-1]
    assert np.all(np.diff(starts) > 0) and np.all(np.diff(starts) <= unit)
    # Every document start is a unit start (documents with tokens), and no unit crosses one.
    nonempty = offsets[:-1][np.array(lengths, dtype=np.int64) > 0]
    assert set(nonempty.tolist()) <= set(starts.tolist())
    assert len(starts) - 1 == sum(-(-n // unit) for n in lengths)


def test_a_sums_file_round_trips_and_refuses_damage():
    tokens = np.arange(100, dtype=np.uint16)
    sums = shard_sums(tokens, np.array([10, 0, 70, 20]), unit_tokens=32)
    decoded = UnitSums.decode(sums.encode(), "x.sums")
    assert np.array_equal(decoded.starts, sums.starts)
    assert np.array_equal(decoded.hashes, sums.hashes)
    assert decoded.starts.tolist() == [0, 10, 42, 74, 80, 100]
    with pytest.raises(Exception, match=r"x.sums: 24 bytes, its header says 112"):
        UnitSums.decode(sums.encode()[:24], "x.sums")
