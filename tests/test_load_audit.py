"""The audit trail of training runs: what each rank's loader records, and `mixplane audit`
answering which runs read a version or a document, checked against the batches a run read."""

from __future__ import annotations

import datetime as dt
import json
import shlex
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from mixtures import demo_mixture
from readme_blocks import ROOT, readme_block

from mixplane.catalog import Catalog
from mixplane.catalog.audit import audit_folder, read_events, runs
from mixplane.load import MixtureDataset
from mixplane.load.tools.document_audit import DocumentAudit, document_reads
from mixplane.load.tools.synthetic import write_catalog
from mixplane.load.torch import torch_loader
from mixplane.load.trail import AuditWarning, derived_run_id
from mixplane.store.dataset import TokenizedDataset

SEQ_LEN = 32
BATCH = 4
BATCHES = 9  # per rank: a part of the stream, so some documents are read and some not
GOVERNANCE = ROOT / "docs" / "governance.md"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("audit")
    return write_catalog(
        str(folder),
        {
            "wiki": {"documents": 40, "seed": 1, "source": "wiki", "mean_tokens": 40},
            "web": {"documents": 50, "seed": 2, "source": "web", "mean_tokens": 30},
            # Registered, never mixed: a version no run read.
            "forum": {"documents": 10, "seed": 3, "source": "forum", "mean_tokens": 20},
        },
    )


def mixture(catalog: str, **fields) -> dict:
    return {
        "catalog": catalog,
        "datasets": ["wiki", "web"],
        "seq_len": SEQ_LEN,
        "seed": 5,
        "eos_id": 0,
        "global_batch_size": 2 * BATCH,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.6},
            "web": {"where": "source = 'web'", "weight": 0.4},
        },
    } | fields


@pytest.fixture(scope="module")
def run(catalog) -> dict:
    """A run of two ranks, each with two DataLoader workers, as the README trains: a few
    batches, a checkpoint, the loader closed; what the loop received, with each token's
    document (`document_refs`)."""
    spec = mixture(catalog, run_id="pretrain-7", document_refs=True)
    received: dict[tuple[int, int], set[tuple[int, int]]] = {}
    states = []
    for rank in range(2):
        dataset = MixtureDataset(spec, rank=rank, world_size=2, read_ahead=2 * BATCH)
        loader = torch_loader(dataset, batch_size=BATCH, num_workers=2)
        for number, batch in enumerate(loader):
            refs = batch["document_refs"].numpy()
            for row, position in enumerate(batch["index"].tolist()):
                for ref in set(map(tuple, refs[row].tolist())):
                    received.setdefault(ref, set()).add((position, rank))
            if number + 1 == BATCHES:
                break
        states.append(dataset.state_dict())
        datasets = [info["dataset"] for info in dataset.resolved.datasets]
        dataset.close()
    ids = {}  # (dataset index, document number) -> id, as document_refs number them
    for index, ref in enumerate(datasets):
        version = Catalog(catalog).get(ref)
        names = []
        for url in TokenizedDataset(version.uri).meta_urls():
            names += pq.read_table(url, columns=["id"]).column("id").to_pylist()
        ids.update({(index, number): name for number, name in enumerate(names)})
    return {"received": received, "states": states, "ids": ids}


def test_each_rank_records_one_start_a_checkpoint_and_a_stop(catalog, run):
    (recorded,) = [found for found in runs(catalog) if found.run == "pretrain-7"]
    assert recorded.run == "pretrain-7"
    events = [(event.event, event.rank) for event in recorded.events]
    # The DataLoader workers wrote nothing: one start per rank, from its training process.
    assert sorted(events) == sorted([(e, r) for r in (0, 1) for e in ("start", "progress", "stop")])
    consumed = run["states"][0]["consumed"]
    assert consumed == 2 * BATCH * BATCHES
    assert {e.consumed for e in recorded.events if e.event != "start"} == {consumed}
    assert recorded.stopped and recorded.consumed == consumed
    assert recorded.datasets == ("web@1", "wiki@1") and recorded.world_size == 2
    start = recorded.events[0]
    assert start.mixture == run["states"][0]["fingerprint"]
    assert start.pid and start.host and start.details["run_id_from"] == "option"
    assert "storage_options" not in json.loads(start.details["mixture"])


def test_audit_document_agrees_with_the_batches_the_run_read(catalog, run):
    read = unread = 0
    audit = DocumentAudit(catalog, run="pretrain-7")  # the trail read, the order rebuilt once
    for (index, number), name in sorted(run["ids"].items()):
        (entry,) = audit.reads(name)["runs"]
        found = {(r["position"], r["rank"]) for r in entry["reads"]}
        assert found == run["received"].get((index, number), set()), name
        assert entry["status"] == ("read" if found else "not read")
        for piece in entry["reads"]:
            assert piece["step"] == piece["position"] // (2 * BATCH)
            assert 0 <= piece["tokens"][0] < piece["tokens"][1]
        read, unread = read + bool(found), unread + (not found)
    audit.close()
    assert read > 10 and unread > 10  # the check saw both answers


def test_the_token_ranges_are_what_the_batches_hold(catalog, run):
    dataset = MixtureDataset(mixture(catalog), prefetch=0, audit=False)
    name = run["ids"][min(run["received"])]
    (entry,) = document_reads(catalog, name, "wiki@1" if "wiki" in name else "web@1")["runs"]
    for piece in entry["reads"]:
        (sequence,) = [e for e in dataset.explain(piece["position"]) if e["id"] == name]
        assert sequence["tokens"] == piece["tokens"]
    dataset.close()


def test_a_document_of_a_version_no_run_read(catalog, run, cli):
    report = document_reads(catalog, "forum-3-2", "forum@1")
    assert [p["dataset"] for p in report["places"]] == ["forum@1"] and report["runs"] == []
    code, out, _ = cli("audit", "forum@1", "--catalog", catalog, "--json")
    assert code == 0 and json.loads(out) == []
    code, out, _ = cli("audit", "--document", "forum-3-2", "--dataset", "forum@1", "-c", catalog)
    assert code == 0 and "no recorded run read" in out
    # An id is a value in the query, never part of it.
    assert document_reads(catalog, "x' OR '1'='1")["places"] == []


def test_a_finished_stream_records_its_stop(tmp_path, catalog):
    spec = mixture(catalog, run_id="finite", max_epochs=1)
    dataset = MixtureDataset(spec, read_ahead=64)
    loader = torch_loader(dataset, batch_size=BATCH, num_workers=2)
    count = sum(len(batch["index"]) for batch in loader)
    (recorded,) = [r for r in runs(catalog) if r.run == "finite"]
    assert [e.event for e in recorded.events] == ["start", "stop"]
    assert recorded.consumed == dataset.consumed == count
    dataset.close()  # stopped already: nothing more is recorded
    assert len([r for r in runs(catalog) if r.run == "finite"][0].events) == 2


def test_an_unwritable_trail_warns_once_and_training_goes_on(tmp_path, catalog):
    copy = tmp_path / "catalog.duckdb"
    copy.write_bytes(Path(catalog).read_bytes())
    Path(audit_folder(copy)).write_text("a file where the trail's folder would be")
    with pytest.warns(AuditWarning) as caught:
        dataset = MixtureDataset(mixture(str(copy)), prefetch=0)
        batches = list(zip(range(3), dataset.batches(BATCH), strict=False))
        state = dataset.state_dict()
        dataset.close()
    assert len(caught) == 1 and "could not be written" in str(caught[0].message)
    assert len(batches) == 3 and state["consumed"] == 3 * BATCH


def test_audit_false_records_nothing(catalog):
    before = read_events(catalog)
    dataset = MixtureDataset(mixture(catalog, audit=False), prefetch=0)
    next(dataset.batches(BATCH))
    dataset.state_dict()
    dataset.close()
    assert read_events(catalog) == before


def test_ranks_of_a_launch_share_a_derived_run_id_across_a_window_edge(tmp_path):
    from mixplane.catalog.audit import RunEvent, record

    copy, fingerprint = str(tmp_path / "catalog.duckdb"), "ab12" * 8
    early = dt.datetime(2026, 5, 1, 9, 59, 58, tzinfo=dt.timezone.utc)
    late = early + dt.timedelta(seconds=5)  # the next ten-minute window
    name = derived_run_id(copy, fingerprint, 2, 0, early)
    assert name == "ab12ab12ab12-w2-20260501T0950"
    record(copy, RunEvent.now(name, "start", rank=0, world_size=2, mixture=fingerprint))
    assert derived_run_id(copy, fingerprint, 2, 1, late) == name  # rank 1 joins rank 0
    record(copy, RunEvent.now(name, "start", rank=1, world_size=2, mixture=fingerprint))
    # A second launch of the same mixture soon after is a run of its own, for all its ranks.
    second = derived_run_id(copy, fingerprint, 2, 0, late)
    assert second == "ab12ab12ab12-w2-20260501T1000"
    record(copy, RunEvent.now(second, "start", rank=0, world_size=2, mixture=fingerprint))
    assert derived_run_id(copy, fingerprint, 2, 1, late) == second
    assert derived_run_id(copy, fingerprint, 2, 0, late) == second + "-1"  # and a third


def test_the_launchers_job_id_names_the_run(tmp_path, catalog, monkeypatch):
    copy = tmp_path / "catalog.duckdb"
    copy.write_bytes(Path(catalog).read_bytes())
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    monkeypatch.delenv("MIXPLANE_RUN_ID", raising=False)
    for rank in range(2):
        MixtureDataset(mixture(str(copy)), rank=rank, world_size=2, prefetch=0).close()
    (recorded,) = runs(copy)
    assert recorded.run == "slurm-4242" and recorded.stopped


def run_block(cli, block: str) -> list[str]:
    """Run each `mixplane ...` line of a documented block; their outputs."""
    outputs = []
    for line in block.strip().splitlines():
        program, *arguments = shlex.split(line, comments=True)
        assert program == "mixplane"
        code, out, err = cli(*arguments)
        assert code == 0, err
        outputs.append(out)
    return outputs


def test_the_readme_commands_as_written(catalog, run, cli, monkeypatch):
    monkeypatch.chdir(Path(catalog).parent)
    outputs = run_block(cli, readme_block("bash", "mixplane audit"))
    assert "pretrain-7" in outputs[0]
    assert "pretrain-7" in outputs[1] and "+eos" in outputs[1]
    listed = json.loads(outputs[2])
    assert [r["run"] for r in listed if r["run"] == "pretrain-7"] == ["pretrain-7"]
    run_block(cli, readme_block("bash", "mixplane audit", GOVERNANCE))


def test_audit_refuses_what_it_cannot_answer(catalog, cli):
    code, _, err = cli("audit", "-c", catalog)
    assert code != 0 and "give one of" in err
    code, _, err = cli("audit", "wiki", "-c", catalog)
    assert code != 0 and "NAME@N" in err
    code, _, err = cli("audit", "wiki@9", "-c", catalog)
    assert code != 0 and "no version 9" in err


def test_weight_changes_are_kept_and_the_order_rebuilt_with_them(tmp_path, catalog):
    copy = tmp_path / "catalog.duckdb"
    copy.write_bytes(Path(catalog).read_bytes())
    spec = mixture(str(copy), run_id="steered", document_refs=True)
    dataset = MixtureDataset(spec, prefetch=0, read_ahead=2 * BATCH)
    dataset.set_weights(1, {"wiki": 0.1, "web": 0.9})
    batches = dataset.batches(2 * BATCH)
    received = {}
    for _ in range(5):
        batch = next(batches)
        for row, position in enumerate(batch["index"].tolist()):
            for ref in set(map(tuple, batch["document_refs"][row].tolist())):
                received.setdefault(ref, set()).add(position)
    dataset.state_dict()
    dataset.close()
    (recorded,) = runs(copy)
    changes = recorded.events[-1].details["weight_changes"]
    assert changes == [{"step": 1, "weights": {"wiki": 0.1, "web": 0.9}}]
    web = dataset.resolved.datasets.index(
        next(i for i in dataset.resolved.datasets if i["dataset"] == "web@1")
    )
    audit = DocumentAudit(copy, "web@1")
    for number in range(12):
        (entry,) = audit.reads(f"web-2-{number}")["runs"]
        found = {read["position"] for read in entry["reads"]}
        assert found == received.get((web, number), set()), number


def test_unpacked_runs_are_recorded_and_not_searched_by_document(tmp_path, catalog):
    from mixplane.load.unpacked import UnpackedDataset

    spec = mixture(catalog, packing="none", pad_id=0, run_id="sft-1")
    dataset = UnpackedDataset(spec, batch_size=BATCH, prefetch=0)
    batches = iter(dataset)
    next(batches), next(batches)
    dataset.state_dict()
    dataset.close()
    (recorded,) = [found for found in runs(catalog) if found.run == "sft-1"]
    assert [event.event for event in recorded.events] == ["start", "progress", "stop"]
    assert recorded.consumed == 2 * BATCH  # documents: what the resume state counts
    assert recorded.events[0].details["kind"] == "unpacked"
    report = document_reads(catalog, "wiki-1-3", "wiki@1")
    (entry,) = [entry for entry in report["runs"] if entry["run"] == "sft-1"]
    assert entry["status"] == "unknown" and "packed" in entry["note"]


def test_a_run_resumed_with_another_world_size_is_searched_rank_by_rank(catalog, run):
    spec = mixture(catalog, run_id="resumed", document_refs=True)
    received: dict[tuple[int, int], set[tuple[int, int]]] = {}

    def read(dataset, rank: int, batches: int) -> None:
        stream = dataset.batches(BATCH)
        for _ in range(batches):
            batch = next(stream)
            for row, position in enumerate(batch["index"].tolist()):
                for ref in set(map(tuple, batch["document_refs"][row].tolist())):
                    received.setdefault(ref, set()).add((position, rank))

    options = {"prefetch": 0, "read_ahead": 2 * BATCH}
    first = [MixtureDataset(spec, rank=r, world_size=2, **options) for r in range(2)]
    for rank, dataset in enumerate(first):
        read(dataset, rank, 3)
    state = first[0].state_dict()
    for dataset in first:
        dataset.close()
    resumed = MixtureDataset(spec, rank=0, world_size=1, **options)  # one rank now
    resumed.load_state_dict(state)
    read(resumed, 0, 4)
    resumed.state_dict()
    resumed.close()
    audit = DocumentAudit(catalog, run="resumed")
    for (index, number), name in sorted(run["ids"].items()):
        (entry,) = audit.reads(name)["runs"]
        found = {(r["position"], r["rank"]) for r in entry["reads"]}
        assert found == received.get((index, number), set()), name
    audit.close()


def test_a_plan_from_the_service_is_recorded_beside_the_catalog(demo_service, demo_work, tmp_path):
    catalog = str(demo_work / "catalog.duckdb")  # the service's, on a disk the rank shares
    spec = demo_mixture() | {"catalog": catalog, "run_id": "served", "cache_dir": str(tmp_path)}
    dataset = MixtureDataset(spec, plan_url=demo_service.url, prefetch=0)
    next(dataset.batches(BATCH))
    dataset.close()
    assert list((tmp_path / "plans").glob("served-*"))  # the plan came from the service
    (recorded,) = [found for found in runs(catalog) if found.run == "served"]
    assert [event.event for event in recorded.events] == ["start", "stop"]
    assert recorded.datasets == ("demo@1",) and recorded.consumed == BATCH
    assert json.loads(recorded.events[0].details["mixture"])["plan_url"] == demo_service.url


def test_image_text_runs_are_recorded_in_samples(tmp_path):
    from mixplane.load.images import ImageTextDataset
    from mixplane.load.images.synthetic import write_image_catalog

    catalog = write_image_catalog(
        str(tmp_path), {"photos": {"samples": 12, "seed": 1, "shards": 1, "size": (16, 16)}}
    )
    spec = {
        "kind": "image_text",
        "catalog": catalog,
        "run_id": "clip-1",
        "components": {"photos": {"datasets": ["photos"], "weight": 1.0}},
    }
    dataset = ImageTextDataset(
        spec, batch_size=4, image_size=8, context_length=4, tokenizer=lambda text: [1]
    )
    next(iter(dataset))
    state = dataset.state_dict()
    dataset.close()
    (recorded,) = runs(catalog)
    assert [event.event for event in recorded.events] == ["start", "progress", "stop"]
    assert recorded.consumed == state["consumed"] == 4 and recorded.datasets == ("photos@1",)
    assert recorded.events[0].details["kind"] == "image_text"


def test_image_text_runs_are_searched_by_sample_as_their_batches_held(tmp_path, cli):
    """Every sample of an image-text run over two ranks, an epoch and a bit: the audit's
    positions, steps and ranks are where the ranks' batches held its pixels."""
    import io
    import itertools

    import numpy as np
    from PIL import Image

    from mixplane.load.images import ImageTextDataset
    from mixplane.load.images.synthetic import write_image_catalog
    from mixplane.store.images import ImageShardReader

    size = {"shards": 1, "size": (12, 12)}
    catalog = write_image_catalog(
        str(tmp_path),
        {"photos": {"samples": 14, "seed": 1} | size, "art": {"samples": 9, "seed": 2} | size},
    )
    pixels = lambda image: np.asarray(image, dtype=np.float32).transpose(2, 0, 1)  # noqa: E731
    ids = {}  # the stored images' pixels -> their sample's id, read from the shards
    for name in ("photos", "art"):
        reader = ImageShardReader(str(tmp_path / name), "part-00000")
        for sample in reader.samples(list(range(len(reader)))):
            image = Image.open(io.BytesIO(sample["jpg"])).convert("RGB")
            ids[pixels(image).tobytes()] = json.loads(sample["json"])["id"]
    spec = {
        "kind": "image_text",
        "catalog": catalog,
        "run_id": "clip-audit",
        "seed": 5,
        "components": {
            "photos": {"datasets": ["photos"], "weight": 0.6},
            "art": {"datasets": ["art"], "weight": 0.4},
        },
    }
    ranks = [
        ImageTextDataset(spec, rank, 2, batch_size=2, tokenizer=lambda text: [1], transform=pixels)
        for rank in range(2)
    ]
    received: dict[str, set] = {}
    for rank, dataset in enumerate(ranks):
        # An epoch, then two batches of the next.
        batches = list(dataset) + list(itertools.islice(iter(dataset), 2))
        for step, batch in enumerate(batches):
            for row, position in zip(batch["images"], batch["index"].tolist(), strict=True):
                received.setdefault(ids[row.tobytes()], set()).add((position, step, rank))
        dataset.state_dict()
        dataset.close()
    assert sum(len(reads) for reads in received.values()) == 2 * 7 * 2
    with DocumentAudit(catalog) as audit:
        for sample in ids.values():
            (found,) = audit.reads(sample)["runs"]
            got = {(r["position"], r["step"], r["rank"]) for r in found["reads"]}
            assert got == received.get(sample, set()), sample
            assert found["status"] == ("read" if got else "not read")
    sample = max(received, key=lambda name: len(received[name]))
    code, shown, _ = cli("audit", "--document", sample, "-c", catalog)
    assert code == 0 and "whole sample" in shown and "read" in shown


def test_a_relative_catalog_keeps_its_trail_when_the_directory_changes(
    catalog, tmp_path, monkeypatch
):
    monkeypatch.chdir(Path(catalog).parent)
    dataset = MixtureDataset(mixture("catalog.duckdb", run_id="moved"), prefetch=0)
    monkeypatch.chdir(tmp_path)  # a training script may change directory before it ends
    dataset.close()
    (recorded,) = [found for found in runs(catalog) if found.run == "moved"]
    assert [event.event for event in recorded.events] == ["start", "stop"]
    assert not (tmp_path / "catalog.duckdb.audit").exists()


def test_a_run_still_going_says_its_answer_stops_at_its_last_checkpoint(catalog):
    dataset = MixtureDataset(mixture(catalog, run_id="live"), prefetch=0, read_ahead=BATCH)
    next(dataset.batches(BATCH))
    dataset.state_dict()
    (entry,) = document_reads(catalog, "wiki-1-3", "wiki@1", run="live")["runs"]
    assert entry["consumed"] == BATCH and not entry["stopped"]
    assert "after its last checkpoint is not known" in entry["note"]
    dataset.close()
    (entry,) = document_reads(catalog, "wiki-1-3", "wiki@1", run="live")["runs"]
    assert entry["stopped"] and entry["note"] is None


def test_a_process_that_ends_with_its_loader_open_records_its_stop(catalog):
    import subprocess
    import sys

    from conftest import child_env

    script = f"""
from mixplane.load import MixtureDataset
spec = {mixture(catalog, run_id="left-open")!r}
dataset = MixtureDataset(spec, prefetch=0, read_ahead={BATCH})
batches = dataset.batches({BATCH})
next(batches), next(batches)
"""  # no state saved, no close: the process just ends
    subprocess.run([sys.executable, "-c", script], env=child_env(), check=True)
    (recorded,) = [found for found in runs(catalog) if found.run == "left-open"]
    assert [event.event for event in recorded.events] == ["start", "stop"]
    assert recorded.consumed == 2 * BATCH and recorded.stopped


def test_a_trail_on_object_storage_gets_its_stop_at_exit(s3_bucket):
    import subprocess
    import sys

    from conftest import child_env

    bucket, options = s3_bucket
    catalog = f"s3://{bucket}/catalog.duckdb"
    script = f"""
from mixplane.catalog.audit import RunEvent
from mixplane.load.trail import RunTrail
start = RunEvent.now("remote", "start", rank=0, world_size=1, mixture="f00d")
trail = RunTrail({catalog!r}, start, {options!r})
trail.progress(64)
"""  # the process ends with the trail open
    subprocess.run([sys.executable, "-c", script], env=child_env(), check=True)
    (recorded,) = runs(catalog, options)
    assert [event.event for event in recorded.events] == ["progress", "stop"]
    assert recorded.consumed == 64 and recorded.stopped
