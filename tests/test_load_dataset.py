"""The numpy loader over real shards and a real catalog: content, order, ranks, resume."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from mixtures import three_sources

from mixplane.errors import ConfigError
from mixplane.load import MixtureDataset
from mixplane.load.tools.synthetic import write_catalog
from mixplane.store import ShardReader

SEQ_LEN = 64
EOS = 0


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("loader")
    return write_catalog(
        str(folder),
        {
            "wiki": {
                "documents": 600,
                "seed": 1,
                "source": "wiki",
                "mean_tokens": 60,
                "shard_bytes": 20_000,
            },
            # Tokenized with EOS already: nothing is appended to its documents.
            "code": {
                "documents": 400,
                "seed": 2,
                "source": "code",
                "mean_tokens": 80,
                "eos_id": EOS,
            },
            "web": {
                "documents": 900,
                "seed": 3,
                "source": "web",
                "mean_tokens": 50,
                "shard_bytes": 30_000,
            },
        },
    )


def mixture(catalog: str, **fields) -> dict:
    return {
        "catalog": catalog,
        "cache_dir": str(Path(catalog).parent / "cache"),
        "seq_len": SEQ_LEN,
        "seed": 1234,
        "components": three_sources(),
    } | fields


@pytest.fixture(scope="module")
def dataset(catalog) -> MixtureDataset:
    return MixtureDataset(mixture(catalog))


@pytest.fixture(scope="module")
def stepped(catalog) -> MixtureDataset:
    """The same mixture with steps of one sequence, for weight changes."""
    return MixtureDataset(mixture(catalog, global_batch_size=1))


def take(iterator, count: int) -> list[dict]:
    return [next(iterator) for _ in range(count)]


def stacked(samples: list[dict], key: str = "input_ids") -> np.ndarray:
    return np.stack([np.asarray(s[key]) for s in samples])


def test_sequences_are_documents_packed_in_shuffled_order(dataset: MixtureDataset):
    resolved, plan = dataset.resolved, dataset.plan
    components, indices = plan.blend.lookup(np.arange(400))
    arrays = dataset.read_positions(np.arange(400))
    assert arrays["component"].tolist() == components.tolist()
    for c, packed in enumerate(plan.components):
        # Independently: read every document of the component through the store's reader,
        # append EOS where the dataset lacks one, concatenate in the epoch's order, cut.
        shards, docs = resolved.ranges[c].locate(np.arange(len(packed)))
        order, _ = packed.order(0)
        pieces = []
        for local in order.tolist():
            uri, stem = resolved.shards[int(shards[local])]
            tokens = ShardReader(f"{uri}/{stem}").document(int(docs[local]))
            pieces.append(tokens if uri.endswith("code") else np.append(tokens, EOS))
        stream = np.concatenate(pieces).astype(np.int64)
        mine = np.flatnonzero(components == c)
        assert len(mine) > 10
        expected = np.stack([stream[k * SEQ_LEN : (k + 1) * SEQ_LEN] for k in indices[mine]])
        assert np.array_equal(arrays["input_ids"][mine], expected)
    # Documents end in exactly one EOS: documents tokenized with EOS get no second one.
    code = arrays["input_ids"][components == 1]
    assert not np.any((code[:, 1:] == EOS) & (code[:, :-1] == EOS))


def test_document_boundaries_follow_the_eos_tokens(dataset: MixtureDataset):
    with_both = MixtureDataset(dataset.spec, boundaries="both", resolved=dataset.resolved)
    batch = with_both.read_positions(np.arange(50))
    ids, docs, positions = batch["input_ids"], batch["document_ids"], batch["position_ids"]
    for row in range(50):
        starts = np.flatnonzero(np.diff(docs[row]) == 1) + 1
        # A new document starts right after each EOS (except at the very end of the row).
        eos_before = np.flatnonzero(ids[row][:-1] == EOS) + 1
        assert starts.tolist() == eos_before.tolist()
        assert positions[row][0] == 0 and np.all(positions[row][starts] == 0)
        assert np.all(np.diff(positions[row])[np.diff(docs[row]) == 0] == 1)


def test_same_seed_same_stream_and_another_seed_another_order(catalog, dataset):
    again = take(iter(MixtureDataset(mixture(catalog))), 100)
    first = take(iter(MixtureDataset(dataset.spec, resolved=dataset.resolved)), 100)
    assert np.array_equal(stacked(again), stacked(first))
    other = take(iter(MixtureDataset(mixture(catalog, seed=99))), 100)
    assert not np.array_equal(stacked(other), stacked(first))
    # The seed shuffles inside components; the blend of components is the same.
    assert stacked(other, "component").tolist() == stacked(first, "component").tolist()


def test_ranks_split_the_stream_without_overlap(dataset):
    whole = dataset.read_positions(np.arange(400))
    seen = {}
    for rank in range(4):
        reader = MixtureDataset(dataset.spec, rank=rank, world_size=4, resolved=dataset.resolved)
        for sample in take(iter(reader), 100):
            index = int(sample["index"])
            assert index not in seen
            seen[index] = sample["input_ids"]
    assert sorted(seen) == list(range(400))
    assert all(np.array_equal(seen[i], whole["input_ids"][i]) for i in range(400))


@pytest.mark.parametrize("new_world", [2, 3])
def test_elastic_resume_skips_and_repeats_nothing(dataset, new_world):
    steps, batch = 7, 3
    seen: list[int] = []
    states = []
    for rank in range(4):
        reader = MixtureDataset(dataset.spec, rank=rank, world_size=4, resolved=dataset.resolved)
        batches = reader.batches(batch)
        for _ in range(steps):
            seen += next(batches)["index"].tolist()
        states.append(reader.state_dict())
    assert len({s["consumed"] for s in states}) == 1  # ranks in step agree
    for rank in range(new_world):
        reader = MixtureDataset(
            dataset.spec, rank=rank, world_size=new_world, resolved=dataset.resolved
        )
        reader.load_state_dict(states[rank % 4])
        batches = reader.batches(batch)
        for _ in range(steps):
            seen += next(batches)["index"].tolist()
    total = 4 * steps * batch + new_world * steps * batch
    assert sorted(seen) == list(range(total))
    whole = dataset.read_positions(np.arange(total))
    component_counts = np.bincount(whole["component"], minlength=3)
    assert component_counts.tolist() == dataset.plan.blend.counts_before(total).tolist()


def test_exact_resume_after_set_weights_at_random_steps(stepped):
    rng = np.random.default_rng(7)
    for stop in rng.integers(1, 60, size=4).tolist():
        switch = int(rng.integers(0, 80))
        weights = {"wiki": 0.1, "code": 0.1, "web_de": 0.8}
        straight = MixtureDataset(stepped.spec, resolved=stepped.resolved)
        straight.set_weights(switch, weights)
        expected = take(iter(straight), 120)

        first = MixtureDataset(stepped.spec, resolved=stepped.resolved)
        if switch < stop:
            first.set_weights(switch, weights)
        got = take(iter(first), stop)
        if switch >= stop:
            first.set_weights(switch, weights)
        state = first.state_dict()
        fresh = MixtureDataset(stepped.spec, resolved=stepped.resolved)
        fresh.load_state_dict(state)
        got += take(iter(fresh), 120 - stop)
        assert [int(s["index"]) for s in got] == list(range(120))
        assert np.array_equal(stacked(got), stacked(expected))
        assert stacked(got, "component").tolist() == stacked(expected, "component").tolist()


def test_set_weights_changes_the_mixture_from_that_step(stepped):
    reader = MixtureDataset(stepped.spec, resolved=stepped.resolved)
    stream = iter(reader)
    before = take(stream, 30)
    reader.set_weights(40, {"wiki": 0, "code": 0, "web_de": 1})
    after = take(stream, 30)
    assert [int(s["index"]) for s in before + after] == list(range(60))
    assert set(stacked(after, "component")[10:].tolist()) == {2}
    with pytest.raises(ConfigError, match="is in the past"):
        reader.set_weights(20, {"wiki": 1, "code": 1, "web_de": 1})
    with pytest.raises(ConfigError, match=r"unknown components \['web'\]"):
        reader.set_weights(100, {"wiki": 1, "code": 1, "web": 1})
    assert [c["step"] for c in reader.state_dict()["weight_changes"]] == [40]


def test_epochs_reshuffle_and_cover_every_sequence_once(dataset):
    plan = dataset.plan
    packed = plan.components[2]
    per_epoch = packed.sequences_per_epoch
    first = packed.spans(np.arange(per_epoch))
    second = packed.spans(np.arange(per_epoch, 2 * per_epoch))
    # Each epoch uses each document once, in a new order.
    for spans in (first, second):
        used = np.bincount(spans.document, spans.stop - spans.begin, minlength=len(packed))
        assert np.all(used <= packed.lengths)
        assert (packed.lengths - used).sum() == packed.total_tokens - per_epoch * SEQ_LEN
    assert not np.array_equal(packed.order(0)[0], packed.order(1)[0])


def test_stream_that_stops_has_a_length_and_ends_for_every_rank_together(catalog):
    spec = mixture(catalog)
    spec["components"]["web_de"] |= {"max_epochs": 1, "on_exhausted": "stop"}
    readers = [MixtureDataset(spec, rank=r, world_size=3) for r in range(3)]
    lengths = [len(r) for r in readers]
    assert len(set(lengths)) == 1
    counts = [sum(1 for _ in r.batches(5)) for r in readers]
    assert len(set(counts)) == 1 and counts[0] == -(-lengths[0] // 5)
    assert len(readers[0]) == 0


def test_state_is_tied_to_the_mixture_and_data(catalog, dataset):
    state = dataset.state_dict()
    other = MixtureDataset(mixture(catalog, seed=5))
    with pytest.raises(ConfigError, match="saved for another mixture"):
        other.load_state_dict(state)
    with pytest.raises(ConfigError, match="not a mixplane loader state"):
        other.load_state_dict({"consumed": 3})
    with pytest.raises(ConfigError, match="version 1; this mixplane reads version 2"):
        dataset.load_state_dict(state | {"version": 1})
    with pytest.raises(ConfigError, match="negative position"):
        dataset.load_state_dict(state | {"consumed": -4})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seq_len": 0}, "seq_len"),
        (
            {"components": {"none": {"where": "source = 'books'", "weight": 1}}},
            "component 'none': no document matches \"source = 'books'\"",
        ),
        (
            {"components": {"a": {"where": "lenguage = 'de'", "weight": 1}}},
            "component 'a':.*lenguage",
        ),
        (
            {"seq_len": 1_000_000},
            "component 'wiki' holds .* tokens .* less than one sequence of seq_len 1000000",
        ),
        (
            {
                "components": {
                    "a": {"where": "source = 'web'", "weight": 1},
                    "b": {"where": "language = 'de'", "weight": 1},
                }
            },
            "components 'a' and 'b' both match",
        ),
        (
            {
                "components": {"a": {"where": "source = 'wiki'", "weight": 1}},
                "append_eos": True,
                "eos_id": None,
            },
            "tokenized without EOS and no eos_id is known",
        ),
        ({"catalog": "/nowhere/catalog.duckdb"}, "not found"),
    ],
)
def test_bad_configs_fail_before_training(catalog, change, message):
    spec = mixture(catalog) | change
    with pytest.raises(ConfigError, match=message):
        MixtureDataset(spec)


def test_overlap_rules(catalog):
    overlapping = {
        "web": {"where": "source = 'web'", "weight": 1},
        "german": {"where": "language = 'de'", "weight": 1},
    }
    first = MixtureDataset(mixture(catalog, components=overlapping, overlap="first"))
    allowed = MixtureDataset(mixture(catalog, components=overlapping, overlap="allow"))
    web = len(first.plan.components[0])
    assert web == 900
    # German documents of wiki and code remain for 'german'; the web ones went to 'web'.
    assert len(first.plan.components[1]) == len(allowed.plan.components[1]) - 225
    with pytest.raises(ConfigError, match="belongs to an earlier component"):
        MixtureDataset(
            mixture(
                catalog,
                overlap="first",
                components={
                    "web": overlapping["web"],
                    "web_de": {"where": "source = 'web' AND language = 'de'", "weight": 1},
                },
            )
        )


def test_layouts_are_checked(dataset):
    with pytest.raises(ConfigError, match="rank must be in"):
        MixtureDataset(dataset.spec, rank=4, world_size=4, resolved=dataset.resolved)


def test_lineage_of_a_sequence(dataset, tmp_path: Path):
    pieces = dataset.explain(3)
    tokens = dataset.read_positions(np.array([3]))["input_ids"][0]
    rebuilt = []
    for piece in pieces:
        shard = ShardReader(f"{piece['folder']}/{piece['shard']}")
        document = shard.document(piece["document"])
        assert shard.metadata(["id"]).column("id")[piece["document"]].as_py() == piece["id"]
        begin, stop = piece["tokens"]
        rebuilt.append(np.append(document, EOS)[begin:stop])
    assert np.array_equal(np.concatenate(rebuilt), tokens)


def test_resolved_mixtures_are_cached_until_the_catalog_changes(catalog, dataset, tmp_path):
    from mixplane.catalog import Catalog
    from mixplane.load.remote.catalog_copy import open_catalog
    from mixplane.load.resolve.plan_cache import entry_folder, load_resolved
    from mixplane.load.tools.synthetic import write_token_dataset

    spec = dataset.spec
    folder = entry_folder(spec, open_catalog(catalog, None), spec.cache_dir)
    cached = load_resolved(spec, folder)
    assert cached is not None and cached.fingerprint == dataset.fingerprint
    for mine, theirs in zip(cached.lengths, dataset.resolved.lengths, strict=True):
        assert np.array_equal(mine, theirs)
    # Memory-mapped: ranks and workers on one machine share the pages.
    assert all(isinstance(a, np.memmap) for a in cached.lengths + cached.starts)
    from_cache = MixtureDataset(spec, resolved=cached)
    assert np.array_equal(
        from_cache.read_positions(np.arange(50))["input_ids"],
        dataset.read_positions(np.arange(50))["input_ids"],
    )
    copy = tmp_path / "catalog.duckdb"
    shutil.copyfile(catalog, copy)
    before = entry_folder(spec, open_catalog(str(copy), None), spec.cache_dir)
    write_token_dataset(str(tmp_path / "books"), documents=50, source="books")
    Catalog(str(copy)).register(str(tmp_path / "books"), name="books")
    assert entry_folder(spec, open_catalog(str(copy), None), spec.cache_dir) != before


def test_output_dtype_must_hold_the_vocabulary(dataset):
    with pytest.raises(ConfigError, match="dtype uint8 cannot hold the token ids of"):
        MixtureDataset(dataset.spec, resolved=dataset.resolved, dtype="uint8")
    with pytest.raises(ConfigError, match="dtype must be an integer type"):
        MixtureDataset(dataset.spec, resolved=dataset.resolved, dtype="float32")
    narrow = MixtureDataset(dataset.spec, resolved=dataset.resolved, dtype="uint16")
    batch = narrow.read_positions(np.arange(30))["input_ids"]
    assert batch.dtype == np.uint16
    assert np.array_equal(batch, dataset.read_positions(np.arange(30))["input_ids"])


@pytest.mark.parametrize("read_ahead", [1, 7, 64])
def test_reading_ahead_in_the_background_changes_nothing(catalog, read_ahead):
    spec = mixture(catalog, global_batch_size=5)

    def run(prefetch: int) -> list[dict]:
        reader = MixtureDataset(spec, prefetch=prefetch, read_ahead=read_ahead)
        batches = reader.batches(5)
        out = take(batches, 20)
        reader.set_weights(30, {"wiki": 1, "code": 1, "web_de": 2})  # drops what was read ahead
        return out + take(batches, 20)

    inline, ahead = run(0), run(3)
    for key in ("input_ids", "document_ids", "component", "index"):
        assert np.array_equal(stacked(inline, key), stacked(ahead, key))
