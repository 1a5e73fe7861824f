"""The audit trail's store: events written beside the catalog, read back as runs."""

from __future__ import annotations

import pytest

from mixplane.catalog.audit import RunEvent, audit_folder, read_events, record, runs
from mixplane.errors import MixplaneError


def _start(run: str, rank: int, datasets=("web@1",)) -> RunEvent:
    return RunEvent.now(run, "start", rank=rank, world_size=2, mixture="f00d", datasets=datasets)


def test_runs_gather_their_ranks_and_say_when_all_stopped(tmp_path):
    catalog = tmp_path / "catalog.duckdb"
    first, second = _start("a", 0), _start("a", 1, datasets=("code@2",))
    for event in (first, second, first.follow("progress", 64), first.follow("stop", 128)):
        record(catalog, event)
    (run,) = runs(catalog)
    assert run.datasets == ("code@2", "web@1")
    assert run.consumed == 128
    assert not run.stopped  # rank 1 never said it stopped
    record(catalog, second.follow("stop", 96))
    assert runs(catalog)[0].stopped


def test_a_catalog_without_a_trail_has_no_runs(tmp_path):
    assert runs(tmp_path / "catalog.duckdb") == []


def test_events_are_read_from_object_storage(s3_bucket):
    bucket, options = s3_bucket
    catalog = f"s3://{bucket}/catalog.duckdb"
    record(catalog, _start("b", 0), options)
    events = read_events(catalog, options)
    assert [(event.run, event.event) for event in events] == [("b", "start")]


def test_a_damaged_event_file_is_named(tmp_path):
    catalog = tmp_path / "catalog.duckdb"
    path = record(catalog, _start("c", 0))
    with open(path, "w") as handle:
        handle.write('{"run": "c"')
    with pytest.raises(MixplaneError, match=r"c/.*\.json: not an audit event"):
        runs(catalog)


@pytest.mark.parametrize("run", ["", "a/b", ".hidden"])
def test_run_ids_that_would_escape_their_folder_are_refused(run):
    with pytest.raises(MixplaneError, match="run id"):
        _start(run, 0)


def test_the_trail_sits_beside_the_catalog():
    assert audit_folder("s3://bucket/catalog.duckdb/") == "s3://bucket/catalog.duckdb.audit"
