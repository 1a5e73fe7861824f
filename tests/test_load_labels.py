"""Megatron-style samples (`labels: true`): seq_len + 1 tokens per sequence, the last one
shared with the component's next sequence; batches carry labels and a loss mask."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from mixplane.errors import ConfigError
from mixplane.load import MixtureDataset
from mixplane.load.tools.synthetic import write_catalog
from mixplane.load.torch import torch_loader

SEQ_LEN = 32


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("labels")
    return write_catalog(
        str(folder),
        {
            "wiki": {"documents": 300, "seed": 1, "source": "wiki", "mean_tokens": 50},
            "code": {"documents": 200, "seed": 2, "source": "code", "mean_tokens": 70},
        },
    )


def mixture(catalog: str, labels: bool, **components) -> dict:
    return {
        "catalog": catalog,
        "cache_dir": str(Path(catalog).parent / "cache"),
        "seq_len": SEQ_LEN,
        "seed": 3,
        "eos_id": 0,
        "labels": labels,
        "components": components or {"wiki": {"where": "source = 'wiki'", "weight": 1}},
    }


def test_labels_are_the_next_tokens_across_sequences(catalog):
    dataset = MixtureDataset(mixture(catalog, labels=True), boundaries="both")
    batch = dataset.read_positions(np.arange(40))
    tokens, labels = batch["input_ids"], batch["labels"]
    assert tokens.shape == labels.shape == batch["loss_mask"].shape == (40, SEQ_LEN)
    assert batch["document_ids"].shape == batch["position_ids"].shape == (40, SEQ_LEN)
    assert np.array_equal(labels[:, :-1], tokens[:, 1:])
    # The last label of a sequence is the first input of the component's next sequence.
    assert np.array_equal(labels[:-1, -1], tokens[1:, 0])
    assert batch["loss_mask"].dtype == np.float32 and np.all(batch["loss_mask"] == 1)


def test_inputs_are_the_sequences_without_labels(catalog):
    """The windows start where the plain sequences start, so the inputs are the same."""
    plain = MixtureDataset(mixture(catalog, labels=False), boundaries="both")
    shifted = MixtureDataset(mixture(catalog, labels=True), boundaries="both")
    per_epoch = shifted.plan.components[0].sequences_per_epoch
    assert plain.plan.components[0].sequences_per_epoch - per_epoch in (0, 1)
    positions = np.arange(per_epoch)
    a, b = plain.read_positions(positions), shifted.read_positions(positions)
    for key in ("input_ids", "document_ids", "position_ids"):
        assert np.array_equal(a[key], b[key]), key
    assert "labels" not in a
    assert plain.fingerprint != shifted.fingerprint  # a state of one does not load in the other
    with pytest.raises(ConfigError, match="another mixture"):
        shifted.load_state_dict(plain.state_dict())


def test_labels_through_dataloader_workers(catalog):
    spec = mixture(
        catalog,
        labels=True,
        wiki={"where": "source = 'wiki'", "weight": 0.6},
        code={"where": "source = 'code'", "weight": 0.4},
    )
    loader = torch_loader(MixtureDataset(spec), batch_size=4, num_workers=2)
    batches = []
    for batch in loader:
        batches.append(batch)
        if len(batches) == 5:
            break
    expected = MixtureDataset(spec).read_positions(np.arange(20))
    for key in ("input_ids", "labels", "loss_mask", "document_ids", "component"):
        got = torch.cat([b[key] for b in batches]).numpy()
        assert np.array_equal(got, expected[key]), key
