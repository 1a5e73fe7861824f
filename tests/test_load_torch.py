"""The PyTorch adapter: DataLoader workers, exact resume with any layout, weight changes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from mixtures import three_sources

from mixplane.errors import ConfigError
from mixplane.load import MixtureDataset
from mixplane.load.tools.synthetic import write_catalog
from mixplane.load.torch.adapter import TorchMixtureDataset, torch_loader

BATCH = 4
LATER = {"wiki": 0.1, "code": 0.1, "web_de": 0.8}


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("torch")
    catalog = write_catalog(
        str(folder),
        {
            "wiki": {"documents": 500, "seed": 1, "source": "wiki", "mean_tokens": 60},
            "code": {"documents": 300, "seed": 2, "source": "code", "mean_tokens": 80},
            "web": {"documents": 800, "seed": 3, "source": "web", "mean_tokens": 50},
        },
    )
    return {
        "catalog": catalog,
        "cache_dir": str(Path(folder) / "cache"),
        "seq_len": 32,
        "seed": 5,
        "eos_id": 0,
        "components": three_sources(),
    }


def stepped(spec: dict) -> dict:
    """The mixture with steps of one batch, for weight changes."""
    return spec | {"global_batch_size": BATCH}


def reference(spec: dict, batches: int, change: tuple[int, dict] | None = None) -> list[dict]:
    dataset = MixtureDataset(spec)
    if change is not None:
        dataset.set_weights(*change)
    stream = dataset.batches(BATCH)
    return [next(stream) for _ in range(batches)]


def same(batches: list[dict], expected: list[dict]) -> None:
    assert len(batches) == len(expected)
    for got, want in zip(batches, expected, strict=True):
        for key in ("index", "component", "input_ids", "document_ids"):
            assert np.array_equal(np.asarray(got[key]), want[key]), key


def test_workers_do_not_change_the_order(spec):
    expected = reference(spec, 12)
    batches = []
    for batch in torch_loader(MixtureDataset(spec), BATCH, num_workers=0):
        assert isinstance(batch["input_ids"], torch.Tensor)
        batches.append(batch)
        if len(batches) == 12:
            break
    same(batches, expected)


@pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true")  # no GPU here
def test_without_workers_the_loader_options_still_apply(spec):
    """With no workers the loader reads straight from the stream; a collate_fn and
    pin_memory given to it still apply, and the batches are the same."""
    expected = reference(spec, 3)

    def tagged(batch: dict) -> dict:
        return batch | {"tag": torch.ones(1)}

    for options in ({"collate_fn": tagged}, {"collate_fn": tagged, "pin_memory": True}):
        loader = torch_loader(MixtureDataset(spec), BATCH, **options)
        batches = [batch for _, batch in zip(range(3), loader, strict=False)]
        same(batches, expected)
        assert all("tag" in batch for batch in batches)


def test_worker_batches_arrive_with_the_same_values_and_dtypes(spec):
    """Batches cross from workers in a compact form; what arrives equals the inline batches."""

    def first(workers: int, count: int = 10) -> list[dict]:
        dataset = MixtureDataset(spec, boundaries="both")
        loader = torch_loader(dataset, BATCH, num_workers=workers)
        batches = []
        for batch in loader:
            batches.append(batch)
            if len(batches) == count:
                return batches
        return batches

    inline, from_workers = first(0), first(2)
    for got, want in zip(from_workers, inline, strict=True):
        assert list(got) == list(want)
        for key in want:
            assert got[key].dtype == want[key].dtype, key
            assert torch.equal(got[key], want[key]), key


def test_spawned_persistent_workers_continue_a_running_stream(spec):
    running = MixtureDataset(spec)
    stream = iter(running)
    first = [next(stream) for _ in range(3)]
    # Spawned workers get a pickled copy of a dataset whose reader runs in this process.
    loader = torch_loader(
        running, BATCH, num_workers=2, persistent_workers=True, multiprocessing_context="spawn"
    )
    batches = []
    for batch in loader:
        batches.append(batch)
        if len(batches) == 6:
            break
    whole = MixtureDataset(spec).read_positions(np.arange(3 + 6 * BATCH))
    assert [int(s["index"]) for s in first] == [0, 1, 2]
    indices = torch.cat([b["index"] for b in batches]).numpy()
    assert indices.tolist() == list(range(3, 3 + 6 * BATCH))
    tokens = torch.cat([b["input_ids"] for b in batches]).numpy()
    assert np.array_equal(tokens, whole["input_ids"][3:])


def run(loader, count: int) -> list[dict]:
    stream = iter(loader)
    return [next(stream) for _ in range(count)]


@pytest.mark.parametrize("stop", [3, 7])
def test_readme_recipe_resumes_exactly_with_workers(spec, stop):
    """The README's recipe: checkpoint `dataset.state_dict()` while workers read ahead."""
    spec = stepped(spec)
    expected = reference(spec, 16, change=(8, LATER))
    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, batch_size=BATCH, num_workers=2)
    dataset.set_weights(8, LATER)
    batches, checkpoint = [], None
    for batch in loader:
        batches.append(batch)
        if len(batches) == stop:
            checkpoint = {"data": dataset.state_dict()}
        if len(batches) == stop + 5:  # the run goes on past its checkpoint, then dies
            break
    assert checkpoint["data"]["consumed"] == stop * BATCH
    assert loader.state_dict() == dataset.state_dict()

    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, batch_size=BATCH, num_workers=2)
    dataset.load_state_dict(checkpoint["data"])
    resumed = batches[:stop] + run(loader, 16 - stop)
    same(resumed, expected)


def test_a_new_pass_of_persistent_workers_continues_from_what_the_loop_received(spec):
    expected = reference(spec, 14)
    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, BATCH, num_workers=2, persistent_workers=True)
    batches = run(loader, 3)  # the workers have read further ahead than this
    batches += run(loader, 5)  # a new pass over the same (persistent) workers
    assert dataset.state_dict()["consumed"] == 8 * BATCH
    dataset.load_state_dict(MixtureDataset(spec).state_dict() | {"consumed": 8 * BATCH})
    batches += run(loader, 6)
    same(batches, expected)


def test_loading_a_state_during_a_pass_stops_that_pass(spec):
    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, BATCH, num_workers=2)
    stream = iter(loader)
    next(stream)
    dataset.load_state_dict(dataset.state_dict())
    with pytest.raises(ConfigError, match="start a new pass"):
        next(stream)
    stream.close()


def test_set_weights_reaches_running_workers(spec):
    spec = stepped(spec)
    expected = reference(spec, 40, change=(25, LATER))
    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, BATCH, num_workers=2, persistent_workers=True)
    stream = iter(loader)
    batches = [next(stream) for _ in range(2)]
    dataset.set_weights(25, LATER)
    batches += [next(stream) for _ in range(38)]
    same(batches, expected)
    late = torch.cat([b["component"] for b in batches[30:]])
    assert (late == 2).float().mean() > 0.6  # web_de's weight went from 0.2 to 0.8


def test_a_change_for_a_step_workers_already_handed_out_is_refused(spec):
    spec = stepped(spec)
    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, BATCH, num_workers=2, batches_per_message=1)
    stream = iter(loader)
    next(stream)
    next(stream)
    dataset.set_weights(3, LATER)  # workers have read further ahead than step 3
    with pytest.raises(ConfigError, match="in the past"):
        for _ in range(6):
            next(stream)
    stream.close()  # now, rather than whenever the error's frames are collected


def test_resume_between_batches_of_one_message_is_exact(spec):
    """Three batches a message: a checkpoint taken while batches 4 and 5 wait in the
    training process (they came with batch 3) resumes the uninterrupted stream, a weight
    change included; a weight change for a batch already waiting here is refused."""
    spec = stepped(spec)
    stop = 4
    expected = reference(spec, 16, change=(12, LATER))
    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, BATCH, num_workers=2, batches_per_message=3)
    assert loader.batches_ahead == 8  # 2 workers x 1 message of 3, and 2 more in the one held
    dataset.set_weights(12, LATER)
    batches, checkpoint = [], None
    for batch in loader:
        batches.append(batch)
        if len(batches) == stop:
            checkpoint = dataset.state_dict()
            with pytest.raises(ConfigError, match="in the past: DataLoader workers already"):
                dataset.set_weights(5, LATER)
        if len(batches) == stop + 4:
            break
    assert checkpoint["consumed"] == stop * BATCH

    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, BATCH, num_workers=2, batches_per_message=3)
    dataset.load_state_dict(checkpoint)
    same(batches[:stop] + run(loader, 16 - stop), expected)


def test_grouped_messages_end_with_the_stream(spec):
    """At the end of a finite stream the last message holds only the batches left (the last
    one short), and every rank gets as many sequences as the other."""
    finite = spec | {"max_epochs": 1}
    world = 2
    left = BATCH * 7 + 2  # per rank: 7 whole batches and one of 2, in messages of 3, 3, 2
    start = MixtureDataset(finite).state_dict()
    start["consumed"] = MixtureDataset(finite).plan.length - world * left - 1
    for rank in range(world):
        inline = MixtureDataset(finite, rank=rank, world_size=world)
        inline.load_state_dict(start)
        expected = list(inline.batches(BATCH))
        dataset = MixtureDataset(finite, rank=rank, world_size=world)
        loader = torch_loader(dataset, BATCH, num_workers=2, batches_per_message=3)
        dataset.load_state_dict(start)
        batches = list(loader)
        assert [len(b["index"]) for b in batches] == [BATCH] * 7 + [2]
        same(batches, expected)
        assert dataset.state_dict()["consumed"] == start["consumed"] + world * left


def test_batches_per_message_is_chosen_by_batch_size(spec):
    """Small batches travel several to a message, not with a collate_fn (it would see
    whole messages), not for an adaptive mixture (its delay counts single batches), and the
    DataLoader's prefetch_factor is divided so that workers read about as far ahead."""
    dataset = MixtureDataset(spec)
    grouped = torch_loader(dataset, BATCH, num_workers=2)
    assert grouped.dataset.per_message == 4  # 4 x 32 tokens: a few KiB a batch
    assert grouped.prefetch_factor == 1 and grouped.batches_ahead == 11
    assert torch_loader(dataset, BATCH, num_workers=2, prefetch_factor=8).prefetch_factor == 2
    assert torch_loader(dataset, BATCH, num_workers=0).dataset.per_message == 1
    single = torch_loader(dataset, BATCH, num_workers=2, collate_fn=lambda batch: batch)
    assert single.dataset.per_message == 1 and single.batches_ahead == 4
    adaptive = spec | {
        "global_batch_size": BATCH,
        "policy": {"name": "static", "update_every": 2, "delay": 6},
    }
    assert torch_loader(MixtureDataset(adaptive), BATCH, num_workers=2).dataset.per_message == 1
    with pytest.raises(ConfigError, match="collate_fn sees whole DataLoader items"):
        torch_loader(dataset, BATCH, num_workers=2, batches_per_message=2, collate_fn=len)
    for wrong in (0, 2.5):
        with pytest.raises(ConfigError, match="batches_per_message must be a whole number >= 1"):
            torch_loader(dataset, BATCH, num_workers=2, batches_per_message=wrong)


@pytest.mark.parametrize(
    ("before", "after"),
    [((2, 2), (3, 2)), ((2, 2), (1, 1)), ((2, 1), (2, 2)), ((1, 2), (2, 0))],
    ids=["2x2-3x2", "2x2-1x1", "2x1-2x2", "1x2-2x0"],
)
def test_resume_with_another_world_size_or_worker_count(spec, before, after):
    """Ranks x workers change on resume: no sequence repeated or skipped, and the content is
    the one-rank stream's."""
    seen: list[dict] = []

    def train(world: int, workers: int, steps: int, state: dict | None) -> list[dict]:
        states = []
        for rank in range(world):
            dataset = MixtureDataset(spec, rank=rank, world_size=world)
            loader = torch_loader(dataset, BATCH, num_workers=workers)
            if state is not None:
                dataset.load_state_dict(state)
            for step, batch in enumerate(loader, start=1):
                seen.append(batch)
                if step == steps:
                    break
            states.append(dataset.state_dict())
        return states

    states = train(*before, 5, None)
    assert len({s["consumed"] for s in states}) == 1  # ranks in step agree
    train(*after, 4, states[0])
    indices = torch.cat([b["index"] for b in seen]).numpy()
    total = BATCH * (5 * before[0] + 4 * after[0])
    assert sorted(indices.tolist()) == list(range(total))
    whole = MixtureDataset(spec).read_positions(indices)
    assert np.array_equal(torch.cat([b["input_ids"] for b in seen]).numpy(), whole["input_ids"])


def test_a_plain_dataloader_with_workers_cannot_give_a_stale_state(spec):
    dataset = MixtureDataset(spec)
    loader = torch.utils.data.DataLoader(
        TorchMixtureDataset(dataset, BATCH), batch_size=None, num_workers=2
    )
    run(loader, 3)
    with pytest.raises(ConfigError, match="stale; build the loader with torch_loader"):
        dataset.state_dict()
    dataset.load_state_dict(MixtureDataset(spec).state_dict() | {"consumed": 3 * BATCH})
    assert dataset.state_dict()["consumed"] == 3 * BATCH


@pytest.mark.parametrize("max_epochs", [None, 1])
def test_a_dataloader_over_the_dataset_itself_says_to_use_torch_loader(spec, max_epochs):
    """A DataLoader takes the dataset for an indexed one: it asks its len (a stream that
    repeats forever has none), then for items by index."""
    finite = {"max_epochs": max_epochs} if max_epochs else {}
    loader = torch.utils.data.DataLoader(MixtureDataset(spec | finite), batch_size=BATCH)
    with pytest.raises(TypeError, match=r"build the loader with torch_loader\(dataset, "):
        next(iter(loader))


def test_per_worker_states_of_a_stateful_dataloader_are_refused(spec):
    from torchdata.stateful_dataloader import StatefulDataLoader

    loader = StatefulDataLoader(
        TorchMixtureDataset(MixtureDataset(spec), BATCH), batch_size=None, num_workers=2
    )
    with pytest.raises(ConfigError, match="per-worker loader states"):
        run(loader, 2)


def test_steps_must_be_training_steps(spec):
    """A mixture's steps are global batches: the loader refuses a layout that splits them
    unevenly, and weight changes need to know what a step is."""
    with pytest.raises(ConfigError, match="global_batch_size 4 is not a multiple of world_size 2"):
        torch_loader(MixtureDataset(stepped(spec), rank=0, world_size=2), BATCH)
    with pytest.raises(ConfigError, match="set global_batch_size: 3"):
        MixtureDataset(stepped(spec)).batches(3)
    accumulating = MixtureDataset(spec | {"global_batch_size": 4 * BATCH})
    next(accumulating.batches(BATCH))  # gradient accumulation: a step is several batches
    with pytest.raises(ConfigError, match="set_weights steps count optimizer steps"):
        MixtureDataset(spec).set_weights(10, LATER)


def test_out_of_order_delivery_is_refused(spec):
    with pytest.raises(ConfigError, match="in_order=False"):
        torch_loader(MixtureDataset(spec), BATCH, num_workers=2, in_order=False)


def test_sample_mode_with_dataloader_batching(spec):
    expected = reference(spec, 6)
    adapter = TorchMixtureDataset(MixtureDataset(spec), batch_size=None, block=BATCH)
    loader = torch.utils.data.DataLoader(adapter, batch_size=BATCH, num_workers=2)
    same(run(loader, 6), expected)


def test_streaming_report_for_the_demo(spec):
    from mixplane.load.tools.preview import stream_through_torch

    report = stream_through_torch(spec, batches=25, batch_size=BATCH, num_workers=2)
    assert report["batches"] == 25 and report["sequences"] == 100
    for component in report["components"]:
        assert abs(component["realized"] - component["requested"]) * 100 < 1
    assert report["sequences_per_second"] == pytest.approx(100 / report["seconds"])
    assert 0 < report["first_batch_seconds"] <= report["seconds"]
