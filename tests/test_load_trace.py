"""Batch forensics: a traced step, re-read document by document from the catalog, is exactly
what the training loop received (ranks, accumulation, DataLoader workers, adaptive runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mixtures import three_sources
from readme_blocks import readme_block, run_commands
from traced_documents import Documents

from mixplane.errors import ConfigError
from mixplane.load import MixtureDataset
from mixplane.load.adaptive.weight_log import read_weight_log
from mixplane.load.tools.synthetic import write_catalog
from mixplane.load.tools.trace import trace

SEQ_LEN = 48
EOS = 0
# Blocks of a few dozen sequences: these runs read a few hundred (the default, ~2M tokens,
# would plan 40,000 at a time, again at each weight change).


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("trace")
    return write_catalog(
        str(folder),
        {
            "wiki": {
                "documents": 300,
                "seed": 1,
                "source": "wiki",
                "mean_tokens": 60,
                "shard_bytes": 12_000,
            },
            # Tokenized with EOS already: nothing is appended to its documents.
            "code": {
                "documents": 200,
                "seed": 2,
                "source": "code",
                "mean_tokens": 70,
                "eos_id": EOS,
            },
            "web": {"documents": 400, "seed": 3, "source": "web", "mean_tokens": 40},
        },
    )


def mixture(catalog: str, **fields) -> dict:
    return {
        "catalog": catalog,
        "cache_dir": str(Path(catalog).parent / "cache"),
        "seq_len": SEQ_LEN,
        "seed": 7,
        "eos_id": EOS,
        "components": three_sources(),
    } | fields


def check_step(documents: Documents, report: dict, batches: list[dict]) -> None:
    """The traced sequences are the given batches' rows, in order, token for token."""
    index = np.concatenate([np.asarray(b["index"]) for b in batches])
    tokens = np.concatenate([np.asarray(b["input_ids"]) for b in batches])
    components = np.concatenate([np.asarray(b["component"]) for b in batches])
    assert report["positions"] == index.tolist()
    for row, sequence in enumerate(report["sequences"]):
        assert sequence["index"] == index[row]
        assert np.array_equal(documents.sequence(sequence), tokens[row])
        assert {d["component"] for d in sequence["documents"]} == {sequence["component"]}
        assert report["sequences"][row]["component"] == three_names()[components[row]]


def three_names() -> list[str]:
    return list(three_sources())


def test_random_steps_and_ranks_with_accumulation_match_the_batches(catalog):
    """World size 2, micro-batches of 3, global batch 12: two micro-batches a rank a step."""
    spec = mixture(catalog, global_batch_size=12)
    documents = Documents(catalog, EOS)
    rng = np.random.default_rng(5)
    for rank in range(2):
        dataset = MixtureDataset(spec, rank=rank, world_size=2, prefetch=0, read_ahead=48)
        stream = dataset.batches(3)
        received = [next(stream) for _ in range(2 * 16)]
        for step in sorted(rng.choice(16, size=3, replace=False).tolist()):
            report = trace(spec, step=step, rank=rank, world_size=2, batch_size=3)
            assert [s["micro_batch"] for s in report["sequences"]] == [0, 0, 0, 1, 1, 1]
            assert {s["step"] for s in report["sequences"]} == {step}
            check_step(documents, report, received[2 * step : 2 * step + 2])
        dataset.close()


def test_dataloader_workers_receive_what_the_trace_says(catalog):
    pytest.importorskip("torch")
    from mixplane.load.torch.adapter import torch_loader

    spec = mixture(catalog)
    documents = Documents(catalog, EOS)
    for rank in (1,):
        dataset = MixtureDataset(spec, rank=rank, world_size=2, read_ahead=48, document_refs=True)
        # Small batches travel several to a DataLoader item: the loader splits them again.
        loader = torch_loader(dataset, 2, num_workers=2)
        assert loader.dataset.per_message > 1
        received = []
        for batch in loader:
            received.append({key: value.numpy() for key, value in batch.items()})
            if len(received) == 11:
                break
        for step in (0, 3, 7, 10):
            report = trace(spec, step=step, rank=rank, world_size=2, batch_size=2)
            check_step(documents, report, [received[step]])
            here = dataset.read_positions(np.array(report["positions"]))
            assert np.array_equal(received[step]["document_refs"], here["document_refs"])


def test_one_sequence_by_index_and_explain_agree(catalog):
    spec = mixture(catalog)
    dataset = MixtureDataset(spec, prefetch=0)
    report = trace(spec, index=57, properties=["language", "quality"])
    (sequence,) = report["sequences"]
    assert sequence["documents"] == dataset.explain(57, properties=["language", "quality"])
    received = dataset.read_positions(np.array([57]))["input_ids"][0]
    assert np.array_equal(Documents(catalog, EOS).sequence(sequence), received)
    for document in sequence["documents"]:
        assert document["source"] == document["dataset"].split("@")[0]
        assert document["properties"]["language"] in ("en", "de", "fr", "es")
        assert 0 <= document["properties"]["quality"] < 1
    dataset.close()


def test_reordered_components_read_their_own_documents(catalog):
    """The plan cache keeps per-component arrays: a spec listing the same components in
    another order must not take another order's entry (each would read the other's data)."""
    spec = mixture(catalog, seed=11)
    MixtureDataset(spec).close()
    components = dict(reversed(list(spec["components"].items())))
    reordered = MixtureDataset(spec | {"components": components}, prefetch=0)
    for position in range(40):
        for piece in reordered.explain(position):
            source = piece["id"].split("-")[0]
            assert source == {"wiki": "wiki", "code": "code", "web_de": "web"}[piece["component"]]
    # Their streams differ, so neither resumes from the other's state.
    first = MixtureDataset(spec, prefetch=0)
    with pytest.raises(ConfigError, match="listing its components as .* another order"):
        reordered.load_state_dict(first.state_dict())
    first.close()
    reordered.close()


def test_mistakes_are_clear_errors(catalog):
    spec = mixture(catalog)
    with pytest.raises(ConfigError, match="pass batch_size"):
        trace(spec, step=3)
    with pytest.raises(ConfigError, match="either step .* or index"):
        trace(spec, step=3, index=4, batch_size=2)
    with pytest.raises(ConfigError, match="rank must be in"):
        trace(spec, step=3, rank=2, world_size=2, batch_size=2)
    with pytest.raises(ConfigError, match="step: Input should be greater than or equal to 0"):
        trace(spec, step=-1, batch_size=2)
    with pytest.raises(ConfigError, match="not a multiple of world_size"):
        trace(mixture(catalog, global_batch_size=10), step=0, world_size=4)
    with pytest.raises(ConfigError, match="more than max_sequences 4"):
        trace(spec, step=0, batch_size=8, max_sequences=4)
    with pytest.raises(ConfigError, match="past any stream"):
        trace(spec, step=2**36, batch_size=8)
    with pytest.raises(ConfigError, match="has no column 'nope'; its columns: id, n_tokens"):
        trace(spec, index=0, properties=["nope"])
    ends = mixture(catalog, max_epochs=1)
    length = MixtureDataset(ends, prefetch=0).plan.length
    with pytest.raises(ConfigError, match=f"the stream ends after {length:,} sequences"):
        trace(ends, step=length, batch_size=1)


@pytest.fixture(scope="module")
def adaptive_run(catalog, tmp_path_factory) -> tuple[dict, Path, dict[int, np.ndarray]]:
    """A run of an adaptive mixture: its spec, weight log and the tokens it received."""
    torch = pytest.importorskip("torch")
    from mixplane.load.adaptive.feedback import Feedback
    from mixplane.load.torch.adapter import torch_loader

    folder = tmp_path_factory.mktemp("adaptive-run")
    policy = {"name": "adaptive_policies:LossSquared", "update_every": 4, "delay": 2}
    spec = mixture(catalog, global_batch_size=4, policy=policy)
    loader = torch_loader(MixtureDataset(spec, read_ahead=16), 4)
    feedback = Feedback(loader, log=folder / "weights.jsonl")
    received: dict[int, np.ndarray] = {}
    for step, batch in enumerate(loader):
        for index, ids in zip(batch["index"].tolist(), batch["input_ids"].numpy(), strict=True):
            received[index] = ids
        loss = batch["component"].double()[:, None] + torch.remainder(batch["input_ids"], 5)
        feedback.observe(step, loss, batch)
        if step == 29:
            break
    return spec, folder / "weights.jsonl", received


def test_an_adaptive_run_is_traced_from_its_weight_log(catalog, adaptive_run):
    spec, log, received = adaptive_run
    changes = read_weight_log(log)
    assert len(changes) >= 3  # the weights did change during the run
    documents = Documents(catalog, EOS)
    for step in (2, 11, 20, 29):
        report = trace(spec, step=step, weight_log=changes)
        assert report["positions"] == list(range(4 * step, 4 * step + 4))
        for sequence in report["sequences"]:
            assert np.array_equal(documents.sequence(sequence), received[sequence["index"]])
    # Without the log, the steps before the first possible change are still exact...
    early = trace(spec, step=4)
    assert np.array_equal(documents.sequence(early["sequences"][0]), received[16])
    # ...and later ones cannot be: the trace says what to give instead of guessing.
    with pytest.raises(ConfigError, match="from step 5 on .* give the run's weight log"):
        trace(spec, step=5)


def test_cli_json_and_table(catalog, cli, tmp_path, adaptive_run):
    spec, log, received = adaptive_run
    path = tmp_path / "mixture.yaml"
    path.write_text(json.dumps(spec))  # JSON is YAML
    code, out, err = cli(
        "trace", str(path), "--step", "12", "--weight-log", str(log), "--json",
        "--properties", "language",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report == json.loads(
        json.dumps(trace(spec, step=12, properties=["language"], weight_log=read_weight_log(log)))
    )
    documents = Documents(catalog, EOS)
    for sequence in report["sequences"]:
        assert np.array_equal(documents.sequence(sequence), received[sequence["index"]])
    code, out, err = cli("trace", str(path), "--step", "12", "--weight-log", str(log))
    assert code == 0, err
    first = report["sequences"][0]["documents"][0]
    assert first["id"] in out and "step 12, rank 0 of 1: 4 sequences" in out
    code, out, err = cli("trace", str(path), "--step", "12")
    assert code == 2 and "give the run's weight log" in err and "Traceback" not in err


def test_document_refs_name_each_tokens_document_and_its_properties(catalog):
    from mixplane.load.tools.properties import DocumentProperty

    spec = mixture(catalog)
    dataset = MixtureDataset(spec, document_refs=True, prefetch=0, read_ahead=48)
    plain = MixtureDataset(spec, prefetch=0, read_ahead=48)
    assert dataset.fingerprint == plain.fingerprint  # the same stream, more in each batch
    batch = next(dataset.batches(6))
    assert np.array_equal(batch["input_ids"], next(plain.batches(6))["input_ids"])
    refs = batch["document_refs"]
    assert refs.shape == (6, SEQ_LEN, 2) and refs.dtype == np.int64
    versions = [info["dataset"] for info in dataset.resolved.datasets]
    language = DocumentProperty(dataset, "language")
    quality = DocumentProperty(dataset, "quality")
    per_token = language.values(refs)
    assert language.names == ["de", "en", "es", "fr"]
    assert np.array_equal(np.array(language.names)[language.codes(refs)], per_token)
    documents = Documents(catalog, EOS)
    report = trace(spec, step=0, batch_size=6, properties=["language", "quality"])
    for row, sequence in enumerate(report["sequences"]):
        for piece in sequence["documents"]:
            begin, end = piece["tokens"]
            where = slice(piece["column"], piece["column"] + end - begin)
            assert (refs[row, where, 0] == versions.index(piece["dataset"])).all()
            number = refs[row, piece["column"], 1]
            assert (refs[row, where, 1] == number).all()
            # The number is the document's place in its version, shards in order.
            from mixplane.store.dataset import TokenizedDataset

            stored = TokenizedDataset(piece["folder"]).document(int(number))
            assert np.array_equal(stored, documents.tokens(piece["dataset"], piece["id"]))
            assert (per_token[row, where] == piece["properties"]["language"]).all()
            assert (quality.values(refs)[row, where] == piece["properties"]["quality"]).all()
    labelled = MixtureDataset(spec | {"labels": True, "document_refs": True}, prefetch=0)
    with_labels = labelled.read_positions(np.arange(3))
    assert with_labels["document_refs"].shape == (3, SEQ_LEN, 2)
    labelled.close()
    with pytest.raises(ConfigError, match="not a text column"):
        quality.codes(refs)
    with pytest.raises(ConfigError, match="build the dataset with document_refs=True"):
        language.values(batch["input_ids"])
    dataset.close()
    plain.close()


class Finished(Exception):
    """Ends a README loop after a few batches."""


def test_the_readme_section_as_written(catalog, cli, tmp_path, monkeypatch, capsys):
    spec = mixture(catalog)
    monkeypatch.chdir(tmp_path)
    # Blocks of ~85 sequences (the default, 2M tokens, is 40,000 of these short ones).
    monkeypatch.setattr("mixplane.load.dataset.READ_AHEAD_TOKENS", 4096)
    (tmp_path / "mixture.yaml").write_text(json.dumps(spec))  # JSON is YAML
    (tmp_path / "weights.jsonl").write_text("")  # a run that changed no weights
    outputs = run_commands(cli, readme_block("bash", "mixplane trace"))
    assert json.loads(outputs[1])["positions"] == list(range(1200 * 8, 1201 * 8))
    assert "sequence 9,603" in outputs[2]

    exec(readme_block("python", "from mixplane.load.tools.trace import trace"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"{1200 * 64 + 3} ")

    received: list[dict] = []

    def token_loss(batch: dict) -> np.ndarray:
        if len(received) == 3:
            raise Finished
        received.append(batch)
        return (batch["input_ids"] % 7).astype(np.float64)

    namespace = {"token_loss": token_loss}
    with pytest.raises(Finished):
        exec(readme_block("python", "DocumentProperty(dataset"), namespace)
    names = namespace["language"].names
    loss_sum, tokens = np.zeros(len(names)), np.zeros(len(names))
    for batch in received:  # the same sums, from each sequence's trace
        for row, index in enumerate(batch["index"].tolist()):
            (sequence,) = trace(spec, index=index, properties=["language"])["sequences"]
            for piece in sequence["documents"]:
                begin, end = piece["tokens"]
                where = slice(piece["column"], piece["column"] + end - begin)
                place = names.index(piece["properties"]["language"])
                loss_sum[place] += (batch["input_ids"][row, where] % 7).sum()
                tokens[place] += end - begin
    assert np.array_equal(namespace["tokens"], tokens)
    assert np.allclose(namespace["loss_sum"], loss_sum)


def test_the_command_starts_without_what_a_trace_does_not_use(catalog, tmp_path):
    """With the plan cached and local shards, a fresh `mixplane trace` process loads neither
    the catalog's engine nor fsspec, lineage, torch or Rich's progress bars (a tenth of a
    second or more each, on every start)."""
    spec = mixture(catalog)
    path = tmp_path / "mixture.yaml"
    path.write_text(json.dumps(spec))  # JSON is YAML
    trace(spec, index=0)  # the plan, cached
    unused = ("duckdb", "fsspec", "mixplane.catalog", "mixplane.lineage", "torch", "rich.progress")
    script = (
        "import sys\n"
        "from mixplane.cli import main\n"
        f"sys.argv = ['mixplane', 'trace', {str(path)!r}, '--step', '3', '--batch-size', '4',"
        " '--properties', 'language', '--json']\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        f"print(sorted(set({unused!r}) & set(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["positions"] == [12, 13, 14, 15]
    assert done.stderr.strip().splitlines()[-1] == "[]"
