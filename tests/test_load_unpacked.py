"""Unpacked mixtures over real shards: whole documents in padded batches, fixed or bucketed
by length; ranks, resume, DataLoader workers and the README's recipe."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from mixtures import BUDGET, EOS, PAD, SEQ_LEN, unpacked_catalog
from mixtures import unpacked_mixture as mixture
from readme_blocks import readme_block

from mixplane.errors import ConfigError, MixplaneError
from mixplane.load import MixtureDataset
from mixplane.load.tools.synthetic import write_catalog
from mixplane.load.torch import torch_loader
from mixplane.load.unpacked import UnpackedDataset
from mixplane.load.unpacked.torch import TorchUnpackedDataset
from mixplane.store import ShardReader


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    return unpacked_catalog(str(tmp_path_factory.mktemp("unpacked")))


def once(catalog: str, **fields) -> dict:
    """Every document of every component once: one epoch each, dropped when done."""
    return mixture(catalog, max_epochs=1, on_exhausted="drop", **fields)


def expected_tokens(dataset: UnpackedDataset, component: int, document: int) -> np.ndarray:
    """A document as the store's reader gives it, with the EOS the loader appends, cut."""
    resolved = dataset.resolved
    shard, index = resolved.ranges[component].locate(np.array([document]))
    uri, stem = resolved.shards[int(shard[0])]
    tokens = ShardReader(f"{uri}/{stem}").document(int(index[0]))
    if not uri.endswith("code"):
        tokens = np.append(tokens, EOS)
    return tokens[:SEQ_LEN].astype(np.int64)


def check_batch(dataset: UnpackedDataset, batch: dict) -> None:
    ids, mask = np.asarray(batch["input_ids"]), np.asarray(batch["attention_mask"])
    rows, width = ids.shape
    assert rows * width <= BUDGET and width % 8 == 0
    components, documents, _ = dataset.stream.lookup(np.asarray(batch["index"]))
    assert np.asarray(batch["component"]).tolist() == components.tolist()
    longest = 0
    for row, (c, doc) in enumerate(zip(components.tolist(), documents.tolist(), strict=True)):
        tokens = expected_tokens(dataset, c, doc)
        longest = max(longest, len(tokens))
        assert np.array_equal(ids[row, : len(tokens)], tokens)
        assert np.all(ids[row, len(tokens) :] == PAD)
        assert mask[row].tolist() == [1] * len(tokens) + [0] * (width - len(tokens))
    assert width == -(-longest // 8) * 8  # padded to the longest row, rounded up to 8


def take(iterator, count: int) -> list[dict]:
    return [next(iterator) for _ in range(count)]


def same(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        for key in ("input_ids", "attention_mask", "index", "component"):
            assert np.array_equal(np.asarray(a[key]), np.asarray(b[key])), key


def test_rows_are_whole_documents_cut_and_padded(catalog):
    dataset = UnpackedDataset(mixture(catalog))
    batches = take(iter(dataset), 12)
    for batch in batches:
        check_batch(dataset, batch)
    # Some documents are longer than seq_len: cut, without their EOS.
    assert any(b["attention_mask"].sum(1).max() == SEQ_LEN for b in batches)
    # Bucketing: rows of a batch have similar lengths.
    spreads = [np.ptp(b["attention_mask"].sum(1)) for b in batches if len(b["index"]) > 2]
    assert np.median(spreads) <= 16


def test_fixed_batches_follow_the_stream(catalog):
    spec = mixture(catalog)
    del spec["bucketing"]
    dataset = UnpackedDataset(spec, batch_size=5)
    batches = take(iter(dataset), 4)
    assert [b["index"].tolist() for b in batches] == [
        list(range(5 * i, 5 * i + 5)) for i in range(4)
    ]
    for batch in batches:
        assert len(batch["index"]) == 5
        ids, mask = batch["input_ids"], batch["attention_mask"]
        assert ids.shape[1] == -(-mask.sum(1).max() // 8) * 8
        assert np.all(ids[mask == 0] == PAD)


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_every_document_once_and_as_many_batches_on_every_rank(catalog, world_size):
    spec = once(catalog)
    ranks = [UnpackedDataset(spec, rank, world_size) for rank in range(world_size)]
    received = [list(iter(dataset)) for dataset in ranks]
    assert len({len(batches) for batches in received}) == 1  # DDP: no rank waits
    total = ranks[0].stream.length
    assert total == sum(len(x) for x in ranks[0].stream.lengths) == 120 + 90 + 38
    seen = []
    for dataset, batches in zip(ranks, received, strict=True):
        for batch in batches:
            ids = batch["input_ids"]
            assert ids.shape[0] * ids.shape[1] <= BUDGET
            components, documents, _ = dataset.stream.lookup(batch["index"])
            seen += list(zip(components.tolist(), documents.tolist(), strict=True))
    assert len(seen) == len(set(seen))  # nothing twice
    assert total - len(seen) < world_size  # the stream's last documents short of a step
    assert len(seen) % world_size == 0


def test_same_seed_same_batches_another_seed_others(catalog):
    first = take(iter(UnpackedDataset(mixture(catalog), 1, 2)), 6)
    same(take(iter(UnpackedDataset(mixture(catalog), 1, 2)), 6), first)
    other = take(iter(UnpackedDataset(mixture(catalog, seed=12), 1, 2)), 6)
    assert [b["index"].tolist() for b in other] != [b["index"].tolist() for b in first]


@pytest.mark.parametrize("stop", [2, 9])  # mid window; past the first window
def test_resume_is_exact(catalog, stop):
    spec = mixture(catalog)
    reference = take(iter(UnpackedDataset(spec, 0, 2)), 14)
    dataset = UnpackedDataset(spec, 0, 2)
    received = take(iter(dataset), stop)
    state = dataset.state_dict()
    take(iter(dataset), 3)  # read on past the checkpoint, then die
    resumed = UnpackedDataset(spec, 1, 2)
    resumed.load_state_dict(state)  # any rank's state: ranks advance in step
    rank0 = UnpackedDataset(spec, 0, 2)
    rank0.load_state_dict(state)
    same(received + take(iter(rank0), 14 - stop), reference)
    rank1 = take(iter(UnpackedDataset(spec, 1, 2)), 14)
    same(take(iter(resumed), 14 - stop), rank1[stop:])


def test_another_world_size_resumes_at_a_window_start_only(catalog):
    spec = once(catalog)
    dataset = UnpackedDataset(spec, 0, 2)
    stream = iter(dataset)
    next(stream)
    with pytest.raises(ConfigError, match="resume it with world_size 2"):
        UnpackedDataset(spec, 0, 3).load_state_dict(dataset.state_dict())
    while dataset.cursor.step != 0:
        next(stream)
    state = dataset.state_dict()  # at the start of window 1: 100 documents received
    grown = [UnpackedDataset(spec, rank, 3) for rank in range(3)]
    for rank in grown:
        rank.load_state_dict(state)
    whole = [b for r in range(2) for b in UnpackedDataset(spec, r, 2)]
    before = {int(i) for b in whole if b["index"].max() < 100 for i in b["index"]}
    after = [int(i) for rank in grown for b in rank for i in b["index"]]
    assert before == set(range(100)) and min(after) == 100
    assert len(after) == len(set(after)) and 248 - 100 - len(after) < 3


def test_fixed_batches_resume_with_another_world_size_anywhere(catalog):
    spec = once(catalog)
    del spec["bucketing"]
    dataset = UnpackedDataset(spec, 0, 2, batch_size=4)
    take(iter(dataset), 3)  # 3 steps of 2 x 4 documents
    grown = UnpackedDataset(spec, 2, 3, batch_size=5)
    grown.load_state_dict(dataset.state_dict())
    assert next(iter(grown))["index"].tolist() == list(range(24 + 10, 24 + 15))


def test_workers_resume_exactly(catalog):
    spec = mixture(catalog)
    reference = take(iter(UnpackedDataset(spec)), 12)
    dataset = UnpackedDataset(spec)
    loader = torch_loader(dataset, batch_size=None, num_workers=2)
    received, state = [], None
    for batch in loader:
        assert isinstance(batch["input_ids"], torch.Tensor)
        received.append(batch)
        if len(received) == 5:
            state = dataset.state_dict()
        if len(received) == 8:  # the workers read further; the loop stops here
            break
    dataset = UnpackedDataset(spec)
    loader = torch_loader(dataset, batch_size=None, num_workers=2)
    loader.load_state_dict(state)
    same(received[:5] + take(iter(loader), 7), reference)


def test_a_plain_dataloader_with_workers_cannot_give_a_stale_state(catalog):
    dataset = UnpackedDataset(mixture(catalog))
    loader = torch.utils.data.DataLoader(TorchUnpackedDataset(dataset), None, num_workers=1)
    next(iter(loader))
    with pytest.raises(ConfigError, match="torch_loader"):
        dataset.state_dict()


def test_mistakes_are_named(catalog):
    spec = mixture(catalog)
    with pytest.raises(ConfigError, match="read it with mixplane.load.unpacked.UnpackedDataset"):
        MixtureDataset(spec)
    with pytest.raises(ConfigError, match="read it with MixtureDataset"):
        UnpackedDataset(
            {k: v for k, v in spec.items() if k not in ("packing", "bucketing", "pad_id")}
        )
    with pytest.raises(ConfigError, match="not both"):
        UnpackedDataset(spec, batch_size=4)
    with pytest.raises(ConfigError, match="needs UnpackedDataset\\(batch_size=N\\)"):
        UnpackedDataset({k: v for k, v in spec.items() if k != "bucketing"})
    with pytest.raises(ConfigError, match="set pad_id in the mixture"):
        UnpackedDataset({k: v for k, v in spec.items() if k != "pad_id"})
    with pytest.raises(ConfigError, match="cannot hold one sample of seq_len 96"):
        UnpackedDataset(spec | {"bucketing": {"max_tokens_per_batch": 90}})
    with pytest.raises(ConfigError, match="labels: true packs"):
        UnpackedDataset(spec | {"labels": True})
    with pytest.raises(ConfigError, match="bucketing needs packing: none"):
        MixtureDataset(spec | {"packing": "sequences"})
    with pytest.raises(ConfigError, match="pass batch_size=None"):
        torch_loader(UnpackedDataset(spec), batch_size=8)
    with pytest.raises(ConfigError, match="another mixture"):
        UnpackedDataset(mixture(catalog, seed=3)).load_state_dict(
            UnpackedDataset(spec).state_dict()
        )


def test_readme_recipe(catalog, tmp_path, monkeypatch):
    """The README's unpacked mixture and loop, as written: stopped after a checkpoint, then
    resumed from it with the same batches."""
    write_catalog(
        str(tmp_path),
        {
            "chat": {
                "documents": 300,
                "seed": 4,
                "source": "chat",
                "mean_tokens": 300,
                "eos_id": 1,
            },
            "code": {
                "documents": 200,
                "seed": 5,
                "source": "code",
                "mean_tokens": 500,
                "eos_id": 1,
            },
        },
    )
    (tmp_path / "sft.yaml").write_text(readme_block("yaml", "packing: none"))
    monkeypatch.chdir(tmp_path)
    recipe = readme_block("python", "UnpackedDataset(")

    class Stop(Exception):
        pass

    def run(checkpoint, steps: int) -> tuple[list[dict], list[dict]]:
        batches, saved = [], []

        def train_step(batch):
            batches.append(batch)
            if len(batches) == steps:
                raise Stop

        names = {
            "rank": 0,
            "world_size": 1,
            "checkpoint": checkpoint,
            "train_step": train_step,
            "time_to_save": lambda: len(batches) == 3,
            "save": saved.append,
        }
        with pytest.raises(Stop):
            exec(recipe, names)
        return batches, saved

    first, saved = run(None, 6)
    assert len(saved) == 1 and first[0]["attention_mask"].shape == first[0]["input_ids"].shape
    for batch in first:
        assert batch["input_ids"].numel() <= 65536
    resumed, _ = run(saved[0], 3)
    same(resumed, first[3:])
    assert os.path.exists("sft.yaml")


def test_a_pass_overtaken_by_a_state_or_a_newer_pass_raises(catalog):
    dataset = UnpackedDataset(mixture(catalog))
    state = dataset.state_dict()
    first = iter(dataset)
    next(first)
    dataset.load_state_dict(state)
    with pytest.raises(ConfigError, match="overtaken by load_state_dict"):
        next(first)
    second = iter(dataset)
    next(second)
    third = iter(dataset)  # a newer pass: the older one may not go on
    with pytest.raises(ConfigError, match="overtaken"):
        next(second)
    assert next(third)["index"].tolist() != []


def test_iterating_again_continues_and_states_repeat(catalog):
    spec = mixture(catalog)
    reference = take(iter(UnpackedDataset(spec, prefetch=0)), 6)
    dataset = UnpackedDataset(spec)
    got = take(iter(dataset), 2)
    got += take(iter(dataset), 4)  # a new pass continues where the loop is
    same(got, reference)
    assert dataset.state_dict() == dataset.state_dict()
    for bad in (
        {},
        {"format": "mixplane-unpacked-loader", "version": 1},
        dataset.state_dict() | {"step": -1},
    ):
        with pytest.raises(ConfigError):
            dataset.load_state_dict(bad)


def test_an_error_while_reading_ahead_is_raised_to_the_loop(tmp_path):
    path = write_catalog(
        str(tmp_path), {"wiki": {"documents": 40, "seed": 1, "source": "wiki", "eos_id": 0}}
    )
    spec = mixture(path, max_epochs=1, components={"wiki": {"weight": 1.0}})
    dataset = UnpackedDataset(spec)
    for shard in (tmp_path / "wiki").glob("*.bin"):
        shard.unlink()  # gone before the reading thread opens it
    with pytest.raises(MixplaneError, match=r"shard-00000-000.bin is missing"):
        list(iter(dataset))


def test_a_batch_out_of_order_or_cut_is_refused(catalog):
    dataset = UnpackedDataset(mixture(catalog))
    expected = dataset.window(0).batch(0, 0)
    generation = dataset.generation
    with pytest.raises(ConfigError, match="whole and in order"):
        dataset.received(int(expected[0]) + 1, len(expected), generation)
    with pytest.raises(ConfigError, match="whole and in order"):
        dataset.received(int(expected[0]), len(expected) - 1, generation)
    with pytest.raises(ConfigError, match="start a new pass"):
        dataset.received(int(expected[0]), len(expected), generation - 1)
    dataset.received(int(expected[0]), len(expected), generation)
    assert dataset.state_dict()["step"] == 1
