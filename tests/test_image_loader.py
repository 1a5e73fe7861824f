"""The image-text loader: the epoch plan (pure), determinism, proportions, equal batch counts
per rank, DataLoader workers, exact and elastic resume, predicates, the transform hook and
bad images."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from tokenizers import Tokenizer

from mixplane.catalog import Catalog
from mixplane.errors import ConfigError
from mixplane.load.images import BadImageError, EpochPlan, ImageTextDataset
from mixplane.load.images.batch import ImagePreprocess
from mixplane.load.images.synthetic import caption_tokenizer, write_image_catalog
from mixplane.load.plan.partition import Layout
from mixplane.mix.spec import MixtureSpec
from mixplane.store.images import ImageShardReader
from mixplane.store.images.format import decode_index, encode_index, sample_digest

BATCH = 4
SIZE = 32
CONTEXT = 12


# -- the plan (pure) ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(1, 40), min_size=1, max_size=4),
    raw=st.lists(st.integers(1, 9), min_size=4, max_size=4),
    seed=st.integers(0, 2**31),
    epochs=st.integers(1, 4),
)
def test_plan_blends_by_weight_and_cycles_each_component(counts, raw, seed, epochs):
    weights = np.array(raw[: len(counts)], dtype=float)
    weights /= weights.sum()
    plan = EpochPlan(counts, weights, seed=seed)
    picked = {c: [] for c in range(len(counts))}
    for epoch in range(epochs):
        components, members = plan.lookup(epoch, np.arange(plan.length))
        again = plan.lookup(epoch, np.arange(plan.length))  # a function of (seed, epoch)
        assert np.array_equal(again[0], components) and np.array_equal(again[1], members)
        per = np.bincount(components, minlength=len(counts))
        assert np.all(np.abs(per - plan.length * weights) <= 1)  # the exact-prefix blend
        for c in range(len(counts)):
            picked[c] += members[components == c].tolist()
    for c, n in enumerate(counts):
        mine = picked[c]
        assert all(0 <= m < n for m in mine)
        # Each whole pass of a component visits each of its samples once.
        for first in range(0, len(mine) - n + 1, n):
            assert sorted(mine[first : first + n]) == list(range(n))


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(1, 50), min_size=1, max_size=3),
    seed=st.integers(0, 1000),
)
def test_natural_weights_visit_every_sample_once_an_epoch(counts, seed):
    plan = EpochPlan(counts, np.array(counts) / sum(counts), seed=seed)
    for epoch in range(3):
        components, members = plan.lookup(epoch, np.arange(plan.length))
        pairs = set(zip(components.tolist(), members.tolist(), strict=True))
        assert pairs == {(c, m) for c, n in enumerate(counts) for m in range(n)}


@settings(max_examples=100, deadline=None)
@given(
    length=st.integers(1, 200),
    world=st.integers(1, 4),
    batch=st.integers(1, 7),
    workers=st.integers(1, 3),
    start=st.integers(0, 200),
)
def test_ranks_and_workers_split_whole_global_batches(length, world, batch, workers, start):
    start = min(start, length)
    count = Layout(0, world, block=batch).whole_batches(start, length)
    assert count == (length - start) // (world * batch)
    seen = []
    for rank in range(world):
        mine = []
        for worker in range(workers):
            layout = Layout(rank, world, workers, worker, block=batch)
            for number in layout.own_batches(start, length):
                mine.append((number, layout.batch_positions(start, number).tolist()))
        assert len(mine) == count  # every rank the same number of batches
        seen += [p for _, positions in sorted(mine) for p in positions]
    assert sorted(seen) == list(range(start, start + count * world * batch))


# -- the dataset ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("images")
    return write_image_catalog(
        str(folder),
        {
            "photos": {"samples": 90, "seed": 1, "shards": 3, "size": (40, 64)},
            "art": {"samples": 41, "seed": 2, "shards": 2, "size": (40, 64)},
        },
    )


@pytest.fixture(scope="module")
def bpe() -> Tokenizer:
    return caption_tokenizer(("photos", "art"))


def words(caption: str) -> list[int]:
    return [len(word) for word in caption.split()]


def spec(catalog: str, **fields) -> dict:
    return {
        "kind": "image_text",
        "catalog": catalog,
        "seed": 7,
        "components": {
            "photos": {"datasets": ["photos"], "weight": 0.75},
            "art": {"datasets": ["art"], "weight": 0.25},
        },
    } | fields


def dataset(mixture: dict, rank: int = 0, world: int = 1, batch: int = BATCH, **options):
    options.setdefault("tokenizer", words)
    return ImageTextDataset(
        mixture,
        rank,
        world,
        batch_size=batch,
        image_size=SIZE,
        context_length=CONTEXT,
        **options,
    )


def same(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        for key in ("index", "component", "input_ids", "images"):
            assert np.asarray(a[key]).tobytes() == np.asarray(b[key]).tobytes(), key


def test_batches_have_the_documented_fields(catalog, bpe):
    data = dataset(spec(catalog), tokenizer=bpe)
    batch = next(iter(data))
    assert batch["images"].shape == (BATCH, 3, SIZE, SIZE)
    assert batch["images"].dtype == np.float32
    assert batch["input_ids"].shape == (BATCH, CONTEXT) and batch["input_ids"].dtype == np.int64
    assert batch["component"].dtype == np.int64 and batch["index"].tolist() == [0, 1, 2, 3]
    assert batch["images"].min() > -2.5 and batch["images"].max() < 2.7  # CLIP-normalized
    caption = bpe.encode("a red circle in a photos picture").ids
    assert len(caption) < CONTEXT  # padded with 0 after the caption
    assert np.all(batch["input_ids"][:, -1] == 0)


def test_same_seed_same_bytes_other_seed_other_order(catalog):
    first = list(dataset(spec(catalog)))
    assert len(first) == (90 + 41) // BATCH
    same(list(dataset(spec(catalog))), first)
    other = list(dataset(spec(catalog, seed=8)))
    assert any(
        a["images"].tobytes() != b["images"].tobytes() for a, b in zip(first, other, strict=True)
    )


def test_component_proportions_follow_the_weights(catalog):
    data = dataset(spec(catalog))
    counts = Counter()
    for number, batch in enumerate(data):
        counts.update(batch["component"].tolist())
        seen = (number + 1) * BATCH
        assert abs(counts[0] - 0.75 * seen) <= 1  # every prefix, within one sample
    assert data.names == ["photos", "art"]


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_every_rank_gets_the_same_number_of_batches(catalog, world):
    batch = 3  # 131 samples: global batches of 3, 6, 9, 12 leave a remainder
    streams = [list(dataset(spec(catalog), rank, world, batch)) for rank in range(world)]
    expected = 131 // (batch * world)
    assert [len(s) for s in streams] == [expected] * world
    assert all(len(dataset(spec(catalog), r, world, batch)) == expected for r in range(world))
    positions = sorted(p for s in streams for b in s for p in b["index"].tolist())
    assert positions == list(range(expected * batch * world))  # the tail is dropped


def test_iterating_again_continues_with_the_next_epoch(catalog):
    data = dataset(spec(catalog))
    first, second = list(data), list(data)
    assert data.epoch == 2 and len(first) == len(second) == data.batches_per_epoch
    assert second[0]["index"][0] == data.epoch_length
    assert any(
        a["images"].tobytes() != b["images"].tobytes() for a, b in zip(first, second, strict=True)
    )


def test_worker_counts_give_the_same_stream(catalog):
    from mixplane.load.images.torch import image_text_loader

    expected = list(dataset(spec(catalog)))
    expected += list(dataset(spec(catalog)).__class__.__iter__(_at_epoch(spec(catalog), 1)))
    for workers in (0, 1, 2):
        data = dataset(spec(catalog))
        loader = image_text_loader(data, num_workers=workers)
        got = [b for _ in range(2) for b in loader]  # two epochs, two passes
        same(got, expected)
        assert data.epoch == 2 and data.position == 0


def mark_shared_in_worker(batch: dict) -> dict:
    """A collate function (it runs in the DataLoader worker, before the batch is sent)."""
    import torch

    return batch | {"images_shared": torch.tensor(batch["images"].is_shared())}


def test_worker_batches_are_sent_in_the_shared_memory_they_were_decoded_into(catalog):
    from mixplane.load.images.torch import image_text_loader

    data = dataset(spec(catalog))
    loader = image_text_loader(data, num_workers=1, collate_fn=mark_shared_in_worker)
    # A tensor not known to torch as shared would be copied into a new segment to be sent.
    assert bool(next(iter(loader))["images_shared"])


def _at_epoch(mixture: dict, epoch: int) -> ImageTextDataset:
    data = dataset(mixture)
    data.load_state_dict(data.state_dict() | {"consumed": epoch * data.epoch_length})
    return data


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_continues_exactly(catalog, workers):
    from mixplane.load.images.torch import image_text_loader

    whole = list(dataset(spec(catalog)))
    data = dataset(spec(catalog))
    loader = image_text_loader(data, num_workers=workers, prefetch_factor=4 if workers else None)
    received = []
    for batch in loader:  # the workers run ahead; the state counts what the loop had
        received.append(batch)
        if len(received) == 7:
            break
    state = data.state_dict()
    assert state["consumed"] == 7 * BATCH
    resumed = dataset(spec(catalog))
    resumed.load_state_dict(state)
    rest = list(image_text_loader(resumed, num_workers=workers))
    same(received + rest, whole)


def test_elastic_resume_from_two_to_three_ranks_has_no_gap_and_no_duplicate(catalog):
    natural = spec(catalog) | {
        "weighting": "natural",
        "components": {"photos": {"datasets": ["photos"]}, "art": {"datasets": ["art"]}},
    }
    before = [dataset(natural, rank, 2) for rank in range(2)]
    seen = []
    for data in before:
        stream = iter(data)
        for _ in range(5):
            seen += next(stream)["index"].tolist()
    state = before[1].state_dict()
    assert state == before[0].state_dict()  # ranks advance in step
    assert state["consumed"] == 5 * 2 * BATCH
    after = [dataset(natural, rank, 3) for rank in range(3)]
    counts = []
    for data in after:
        data.load_state_dict(state)  # every new rank loads the same state
        batches = list(data)
        counts.append(len(batches))
        seen += [i for b in batches for i in b["index"].tolist()]
    assert len(set(counts)) == 1
    assert sorted(seen) == list(range(len(seen)))  # positions: no duplicate, no gap
    remaining = 131 - 40
    assert len(seen) == 40 + remaining // (3 * BATCH) * 3 * BATCH
    # The samples themselves: natural weights visit each sample once an epoch.
    _, shards, samples = after[0].sources(np.array(seen))
    pairs = list(zip(shards.tolist(), samples.tolist(), strict=True))
    assert len(set(pairs)) == len(pairs)
    assert 131 - len(pairs) < 3 * BATCH  # only the dropped tail is missing


def test_a_predicate_selects_only_matching_samples(catalog):
    red = spec(catalog) | {
        "components": {
            "red": {"datasets": ["photos"], "where": "color = 'red' AND width >= 48", "weight": 1},
            "art": {"datasets": ["art"], "weight": 1},
        }
    }
    data = dataset(red)
    expected = Catalog(catalog).select("color = 'red' AND width >= 48", ["photos"]).documents
    assert data.resolved.counts[0] == expected > 0
    components, shards, samples = data.sources(np.arange(data.epoch_length))
    for shard in np.unique(shards[components == 0]).tolist():
        folder, stem = data.resolved.shards[shard]
        table = ImageShardReader(folder, stem).metadata(["color", "width"]).to_pylist()
        for sample in samples[(components == 0) & (shards == shard)].tolist():
            assert table[sample]["color"] == "red" and table[sample]["width"] >= 48


def test_a_transform_replaces_the_default_preprocessing(catalog):
    """Any callable taking a PIL image (a torchvision Compose, say) does the preprocessing."""

    def transform(image):
        small = image.resize((24, 24), Image.Resampling.BILINEAR)
        return np.asarray(small, dtype=np.float32).transpose(2, 0, 1) / 255.0

    data = dataset(spec(catalog), transform=transform)
    batch = next(iter(data))
    assert batch["images"].shape == (BATCH, 3, 24, 24)
    where = data.locate(int(batch["index"][1]))
    folder = where["folder"]
    record = ImageShardReader(folder, where["shard"]).sample(where["sample"])
    expected = transform(Image.open(io.BytesIO(record["jpg"])).convert("RGB"))
    assert np.array_equal(np.asarray(batch["images"][1]), expected)


def test_reduced_size_decoding_matches_a_full_decode(tmp_path):
    """Decoding a large JPEG at a reduced scale changes the 224-px result only slightly."""
    rng = np.random.default_rng(0)
    from mixplane.load.images.synthetic import scene

    image, _, _ = scene(rng, 800, 600)
    encoded = io.BytesIO()
    image.save(encoded, "JPEG", quality=90)
    fast = ImagePreprocess(224)(encoded.getvalue(), "test")
    full = ImagePreprocess(224)
    full_image = Image.open(io.BytesIO(encoded.getvalue())).convert("RGB")  # no draft
    reference = full.normalize(full.resize(full_image))
    assert np.abs(fast - reference).mean() < 0.05  # in normalized units (~1/80 of the range)


def test_bad_image_bytes_name_dataset_shard_and_sample(tmp_path):
    path = write_image_catalog(str(tmp_path), {"broken": {"samples": 8, "shards": 1}})
    reader = ImageShardReader(str(tmp_path / "broken"), "part-00000")
    start, _ = reader.byte_range(5)
    with open(tmp_path / "broken" / "part-00000.tar", "r+b") as tar:
        tar.seek(start + 512)  # past the image member's header: its JPEG bytes
        tar.write(b"\0" * 64)
    # Written so (its digest kept in the index): not a shard damaged since, a bad image.
    idx = tmp_path / "broken" / "part-00000.idx"
    offsets, digests = decode_index(idx.read_bytes(), "idx")
    digests = digests.copy()
    digests[5] = sample_digest(
        (tmp_path / "broken" / "part-00000.tar").read_bytes()[start : int(offsets[6])]
    )
    idx.write_bytes(encode_index(offsets, digests))
    data = ImageTextDataset(
        {"kind": "image_text", "catalog": path, "components": {"all": {"weight": 1}}},
        batch_size=8,
        tokenizer=words,
        image_size=SIZE,
    )
    with pytest.raises(
        BadImageError, match=r"dataset broken@1, shard .*part-00000, sample 5"
    ) as raised:
        next(iter(data))
    # No image signature left: Pillow names the buffer by its repr, whose address would make
    # the message differ between runs.
    assert "cannot identify image file <_io.BytesIO object>" in str(raised.value)


def test_states_are_checked(catalog):
    data = dataset(spec(catalog))
    state = data.state_dict()
    with pytest.raises(ConfigError, match="another mixture"):
        dataset(spec(catalog, seed=9)).load_state_dict(state)
    with pytest.raises(ConfigError, match="not a mixplane loader state"):
        data.load_state_dict({"format": "mixplane-image-loader"})
    with pytest.raises(ConfigError, match="negative position"):
        data.load_state_dict(state | {"consumed": -1})
    with pytest.raises(ConfigError, match="weight changes"):
        data.load_state_dict(state | {"weight_changes": [{"step": 0, "weights": {"art": 1}}]})
    far = data.state_dict() | {"consumed": 3 * data.epoch_length + 5}
    data.load_state_dict(far)  # any position: epoch 3, five samples in
    assert (data.epoch, data.position) == (3, 5)
    stream = iter(data)
    next(stream)
    data.load_state_dict(state)
    with pytest.raises(ConfigError, match="overtaken"):
        next(stream)


def test_image_text_specs_are_checked_and_text_specs_are_unchanged(catalog):
    text = {"seq_len": 8, "components": {"a": {"weight": 1}}}
    assert MixtureSpec.parse(text).kind == "text"
    with pytest.raises(ConfigError, match="needs seq_len"):
        MixtureSpec.parse({"components": {"a": {"weight": 1}}})
    with pytest.raises(ConfigError, match="weighs samples, not tokens; remove seq_len"):
        MixtureSpec.parse(spec(catalog, seq_len=8))
    with pytest.raises(ConfigError, match="without max_epochs"):
        MixtureSpec.parse(spec(catalog) | {"weighting": {"method": "natural", "max_epochs": 2}})
    with pytest.raises(ConfigError, match="text mixture"):
        ImageTextDataset(text | {"catalog": catalog}, batch_size=2, tokenizer=words)
    with pytest.raises(ConfigError, match="no sample matches"):
        dataset(spec(catalog) | {"components": {"x": {"where": "color = 'pink'", "weight": 1}}})
    with pytest.raises(ConfigError, match="holds no global batch"):
        dataset(spec(catalog), 0, 4, batch=40)  # 131 samples, global batches of 160


def test_text_and_image_mixtures_refuse_each_others_data(tmp_path):
    """Each loader names the other when handed the wrong kind of mixture or dataset."""
    from mixplane.load import MixtureDataset
    from mixplane.load.tools.synthetic import write_catalog

    catalog = write_image_catalog(str(tmp_path), {"photos": {"samples": 20, "seed": 1}})
    write_catalog(str(tmp_path), {"wiki": {"documents": 50, "seed": 1}}, catalog=catalog)
    text_on_images = {
        "catalog": catalog,
        "seq_len": 32,
        "components": {"photos": {"datasets": ["photos"], "weight": 1.0}},
    }
    with pytest.raises(ConfigError, match="photos@1: image-text data"):
        MixtureDataset(text_on_images)
    images_on_text = {
        "kind": "image_text",
        "catalog": catalog,
        "components": {"wiki": {"datasets": ["wiki"], "weight": 1.0}},
    }
    with pytest.raises(ConfigError, match="wiki@1 is tokenized text"):
        ImageTextDataset(images_on_text, batch_size=2, tokenizer=lambda text: [1])
    image_mixture = {**images_on_text, "components": text_on_images["components"]}
    with pytest.raises(ConfigError, match="read it with mixplane.load.images.ImageTextDataset"):
        MixtureDataset(image_mixture)


# -- shards named directly, without a catalog --------------------------------------------------


def test_shards_read_without_a_catalog_each_sample_once_and_resumable(tmp_path):
    import tarfile

    from mixplane.load.images.synthetic import write_image_dataset

    folder = tmp_path / "clean-images"
    write_image_dataset(str(folder), samples=30, seed=4, shards=3, size=(40, 56))

    def load(source, seed=3, **options):
        return dataset(source, seed=seed, **options)

    data = load(str(folder))
    epoch = list(data)
    assert len(epoch) == 30 // BATCH and data.names == ["shards"]
    assert not list(tmp_path.rglob("*.duckdb"))  # nothing registered
    # The samples the tars hold (as tar or webdataset list them), each once, seeded order.
    tars = sorted(str(path) for path in folder.glob("*.tar"))
    theirs = set()
    for tar in tars:
        with tarfile.open(tar) as archive:
            theirs |= {(Path(tar).stem, name.split(".")[0]) for name in archive.getnames()}
    keys = []
    for position in (i for b in epoch for i in b["index"].tolist()):
        where = data.locate(position)
        sample = ImageShardReader(where["folder"], where["shard"]).sample(where["sample"])
        keys.append((where["shard"], sample["__key__"]))
    assert len(set(keys)) == len(keys) == len(epoch) * BATCH and set(keys) <= set(theirs)
    same(list(load([Path(t) for t in tars])), epoch)  # a list of shards: the same stream
    same(list(load(str(folder))), epoch)  # and the same bytes every time
    other = list(load(str(folder), seed=4))
    assert [b["index"].tolist() for b in other] == [b["index"].tolist() for b in epoch]
    assert any(
        a["images"].tobytes() != b["images"].tobytes() for a, b in zip(epoch, other, strict=True)
    )

    # Resume from a state after 3 batches, from a brace pattern naming the same shards.
    first = load(str(folder))
    stream = iter(first)
    for _ in range(3):
        next(stream)
    state = first.state_dict()
    resumed = load(str(folder / "part-{00000..00002}.tar"))
    resumed.load_state_dict(state)
    same(list(resumed), epoch[3:])
    with pytest.raises(ConfigError, match="another mixture or other data"):
        load(tars[:2]).load_state_dict(state)

    # A tar without the index mixplane writes, a folder without shards, a catalog as well.
    with tarfile.open(tmp_path / "plain.tar", "w") as tar:
        tar.add(tars[0], arcname="x.jpg")
    with pytest.raises(ConfigError, match=r"plain\.tar is not an image shard .*\.idx"):
        load(str(tmp_path / "plain.tar"))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("nothing")
    with pytest.raises(ConfigError, match="holds no image shard"):
        load(str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="not both"):
        load(str(folder), catalog=Catalog(str(tmp_path / "c.duckdb")))
