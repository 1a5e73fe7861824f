"""Batch forensics of unpacked mixtures (`packing: none`): a traced step's rows, re-read
document by document from the catalog by id, are exactly the padded batch the rank received,
bucketed or in fixed batches, on every rank."""

from __future__ import annotations

import json

import numpy as np
import pytest
from mixtures import EOS, SEQ_LEN, three_sources, unpacked_catalog
from mixtures import unpacked_mixture as mixture
from traced_documents import Documents

from mixplane.errors import ConfigError
from mixplane.load.tools.trace import trace
from mixplane.load.unpacked import UnpackedDataset

WORLD_SIZE = 2


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    return unpacked_catalog(str(tmp_path_factory.mktemp("trace-unpacked")), code_shard_bytes=4_000)


def check_batch(documents: Documents, report: dict, batch: dict) -> None:
    """Each traced row, cut from its document as the trace says, is the batch's row up to
    its padding, in order."""
    ids, mask = np.asarray(batch["input_ids"]), np.asarray(batch["attention_mask"])
    assert report["packing"] == "none"
    assert report["positions"] == np.asarray(batch["index"]).tolist()
    assert len(report["sequences"]) == len(ids)
    names = list(three_sources())
    for row, sequence in enumerate(report["sequences"]):
        (document,) = sequence["documents"]
        assert (sequence["row"], document["column"], document["tokens"][0]) == (row, 0, 0)
        assert sequence["component"] == names[int(batch["component"][row])]
        tokens = documents.sequence(sequence)
        assert len(tokens) == mask[row].sum() <= SEQ_LEN
        assert np.array_equal(ids[row, : len(tokens)], tokens)


@pytest.mark.parametrize(
    ("fields", "batch_size"),
    [({}, None), ({"bucketing": None}, 3)],
    ids=["bucketed", "fixed"],
)
def test_random_steps_and_ranks_match_the_batches(catalog, fields, batch_size):
    """Steps drawn over several windows on both ranks (bucketed: 100 documents, a few
    steps each; fixed: 64 steps each, so step 66 is in the second)."""
    spec = mixture(catalog, **fields)
    documents = Documents(catalog, EOS)
    rng = np.random.default_rng(3)
    ends = []
    for rank in range(WORLD_SIZE):
        dataset = UnpackedDataset(
            spec, rank=rank, world_size=WORLD_SIZE, batch_size=batch_size, prefetch=0
        )
        stream = iter(dataset)
        received = [next(stream) for _ in range(70)]
        dataset.close()
        for step in [*sorted(rng.choice(64, size=4, replace=False).tolist()), 66]:
            report = trace(spec, step=step, rank=rank, world_size=WORLD_SIZE, batch_size=batch_size)
            assert {s["step"] for s in report["sequences"]} == {step}
            check_batch(documents, report, received[step])
            ends += [s["documents"][0]["tokens"][1] for s in report["sequences"]]
    assert SEQ_LEN in ends  # documents cut to seq_len were traced too


def test_one_document_by_index_and_explain_agree(catalog):
    spec = mixture(catalog)
    dataset = UnpackedDataset(spec, prefetch=0)
    batch = next(iter(dataset))
    position = int(batch["index"][1])
    (sequence,) = trace(spec, index=position, properties=["language"])["sequences"]
    assert sequence["documents"] == dataset.explain(position, ["language"])
    assert sequence["documents"][0]["properties"]["language"] in ("en", "de", "fr", "es")
    check_batch(
        Documents(catalog, EOS),
        {"packing": "none", "positions": [position], "sequences": [sequence | {"row": 0}]},
        {k: np.asarray(v)[1:2] for k, v in batch.items()},
    )
    dataset.close()


def test_mistakes_are_clear_errors(catalog):
    bucketed, fixed = mixture(catalog), mixture(catalog, bucketing=None)
    with pytest.raises(ConfigError, match="trace it without batch_size"):
        trace(bucketed, step=0, batch_size=4)
    with pytest.raises(ConfigError, match="without bucketing: pass batch_size"):
        trace(fixed, step=0)
    with pytest.raises(ConfigError, match="without a weight log"):
        trace(bucketed, step=0, weight_log=[{"step": 0, "weights": {"wiki": 1.0}}])
    once = mixture(catalog, bucketing=None, max_epochs=1, on_exhausted="drop")
    length = UnpackedDataset(once, batch_size=1, prefetch=0).stream.length
    with pytest.raises(ConfigError, match=f"the stream ends after {length:,} documents"):
        trace(once, index=length)
    steps = length // 4  # whole global batches of 2 x 2
    with pytest.raises(ConfigError, match=f"ends after step {steps - 1} .it has {steps} steps"):
        trace(once, step=steps, world_size=2, batch_size=2)
    assert trace(once, step=steps - 1, world_size=2, batch_size=2)["positions"]
    with pytest.raises(ConfigError, match="more than max_sequences 2"):
        trace(fixed, step=0, batch_size=3, max_sequences=2)


def test_a_bucketed_step_past_the_windows_a_trace_plans_is_refused(catalog, monkeypatch):
    monkeypatch.setattr("mixplane.load.unpacked.forensics.MAX_WINDOWS", 3)
    spec = mixture(catalog)
    steps = sum(UnpackedDataset(spec, prefetch=0).window(n).steps for n in range(3))
    assert trace(spec, step=steps - 1)["positions"]
    with pytest.raises(ConfigError, match=f"past the first 3 bucketing windows .{steps} steps"):
        trace(spec, step=steps)


def test_the_command_line_shows_a_padded_batch(catalog, cli, tmp_path):
    path = tmp_path / "sft.yaml"
    path.write_text(json.dumps(mixture(catalog)))  # JSON is YAML
    code, out, err = cli("trace", str(path), "--step", "4", "--world-size", "2", "--json")
    assert code == 0, err
    assert json.loads(out) == trace(mixture(catalog), step=4, world_size=2)
    code, out, err = cli("trace", str(path), "--step", "4", "--rank", "1", "--world-size", "2")
    assert code == 0, err
    assert "step 4, rank 1 of 2: a padded batch of" in out and "cut to 96 tokens" in out
    code, out, err = cli("trace", str(path), "--step", "4", "--batch-size", "2")
    assert code == 2 and "trace it without batch_size" in err and "Traceback" not in err
