"""The PyTorch adapter: DataLoader workers, StatefulDataLoader resume, weight changes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from mixplane.errors import ConfigError
from mixplane.load import MixtureDataset
from mixplane.load.synthetic import write_catalog
from mixplane.load.torch_adapter import TorchMixtureDataset, loader_state, torch_loader

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
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.5},
            "code": {"where": "source = 'code'", "weight": 0.3},
            "web_de": {"where": "source = 'web' AND language = 'de'", "weight": 0.2},
        },
    }


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


@pytest.mark.parametrize("stop", [3, 7])
def test_stateful_loader_resumes_exactly_after_set_weights(spec, stop):
    expected = reference(spec, 16, change=(30, LATER))
    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, BATCH, num_workers=2, stateful=True)
    loader.dataset.set_weights(30, LATER)
    stream = iter(loader)
    batches = [next(stream) for _ in range(stop)]
    saved = loader.state_dict()
    del stream, loader

    fresh = torch_loader(MixtureDataset(spec), BATCH, num_workers=2, stateful=True)
    fresh.load_state_dict(saved)
    stream = iter(fresh)
    batches += [next(stream) for _ in range(16 - stop)]
    same(batches, expected)


def test_set_weights_reaches_running_workers(spec):
    expected = reference(spec, 40, change=(100, LATER))
    loader = torch_loader(MixtureDataset(spec), BATCH, num_workers=2, persistent_workers=True)
    stream = iter(loader)
    batches = [next(stream) for _ in range(2)]
    loader.dataset.set_weights(100, LATER)
    batches += [next(stream) for _ in range(38)]
    same(batches, expected)
    assert set(torch.cat([b["component"] for b in batches[30:]]).tolist()) <= {0, 1, 2}


def test_a_change_for_a_step_workers_already_handed_out_is_refused(spec):
    loader = torch_loader(MixtureDataset(spec), BATCH, num_workers=2)
    stream = iter(loader)
    next(stream)
    next(stream)
    loader.dataset.set_weights(9, LATER)  # workers have read further ahead than step 9
    with pytest.raises(ConfigError, match="in the past"):
        for _ in range(6):
            next(stream)
    stream._shutdown_workers()  # now, rather than whenever the error's frames are collected


def test_elastic_resume_from_stateful_loader_states(spec):
    seen = []
    states = []
    for rank in range(2):
        loader = torch_loader(
            MixtureDataset(spec, rank=rank, world_size=2), BATCH, num_workers=2, stateful=True
        )
        stream = iter(loader)
        for _ in range(5):
            seen += next(stream)["index"].tolist()
        states.append(loader.state_dict())
    merged = loader_state(states[0])
    assert merged["consumed"] == 2 * 5 * BATCH
    for rank in range(3):
        dataset = MixtureDataset(spec, rank=rank, world_size=3)
        dataset.load_state_dict(merged)
        batches = dataset.batches(BATCH)
        for _ in range(4):
            seen += next(batches)["index"].tolist()
    assert sorted(seen) == list(range(2 * 5 * BATCH + 3 * 4 * BATCH))


def test_sample_mode_with_dataloader_batching(spec):
    expected = reference(spec, 6)
    adapter = MixtureDataset(spec).torch(batch_size=None, block=BATCH)
    assert isinstance(adapter, TorchMixtureDataset)
    loader = torch.utils.data.DataLoader(adapter, batch_size=BATCH, num_workers=2)
    stream = iter(loader)
    same([next(stream) for _ in range(6)], expected)


def test_streaming_report_for_the_demo(spec):
    from mixplane.load.preview import stream_through_torch

    report = stream_through_torch(spec, batches=25, batch_size=BATCH, num_workers=2)
    assert report["batches"] == 25 and report["sequences"] == 100
    for component in report["components"]:
        assert abs(component["realized"] - component["requested"]) * 100 < 1
    assert report["sequences_per_second"] > 0
