"""`mixplane gc`: the retention policy, dry runs, removal that spares shared files, a loader
open in another process, the clear error after collection, object storage, the README."""

from __future__ import annotations

import datetime as dt
import inspect
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import child_env
from hypothesis import given, settings
from hypothesis import strategies as st
from readme_blocks import readme_block

from mixplane.catalog import Catalog
from mixplane.catalog.audit import RunEvent, audit_folder, record
from mixplane.catalog.columns import AddedColumn, ColumnFile
from mixplane.catalog.gc import InUse, Retention, VersionOnDisk, apply_plan, plan_gc, survey
from mixplane.catalog.gc.files import VersionFile
from mixplane.catalog.gc.liveness import open_files
from mixplane.catalog.gc.record import mark_collected
from mixplane.catalog.registry import Registry
from mixplane.errors import ConfigError, MixplaneError
from mixplane.load.dataset import MixtureDataset
from mixplane.load.remote.catalog_copy import open_catalog
from mixplane.load.resolve.query import resolve_mixture
from mixplane.load.tools.synthetic import write_token_dataset
from mixplane.manifest import file_digest
from mixplane.mix.spec import MixtureSpec

GOVERNANCE_MD = Path(__file__).parent.parent / "docs" / "governance.md"
SHARDS = {"documents": 30, "mean_tokens": 20, "vocab_size": 500, "shard_bytes": 700, "eos_id": 0}


def add_version(root: Path, number: int, name: str = "web") -> str:
    """A folder of real token shards (seeded by `number`) registered as the next version."""
    folder = root / f"{name}-v{number}"
    write_token_dataset(str(folder), seed=number, source=name, **SHARDS)
    return Catalog(root / "catalog.duckdb").register(str(folder), name).ref


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` with its size and modification time."""
    return {
        str(path.relative_to(root)): (path.lstat().st_size, path.lstat().st_mtime_ns)
        for path in sorted(root.rglob("*"))
        if path.is_file() or path.is_symlink()
    }


def stamp(days_ago: float) -> str:
    when = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=days_ago)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def run_event(run: str, event: str, refs: tuple[str, ...], days_ago: float) -> RunEvent:
    return RunEvent(run, event, stamp(days_ago), 0, 1, "f00d", refs, host="h", pid=7)


def mixture(root: Path, refs: list[str]) -> dict:
    return {
        "catalog": str(root / "catalog.duckdb"),
        "seq_len": 16,
        "seed": 3,
        "datasets": refs,
        "components": {"all": {"where": "TRUE", "weight": 1.0, "max_epochs": 1}},
    }


def test_the_plan_keeps_latest_pinned_recently_read_and_running_versions(tmp_path: Path):
    refs = [add_version(tmp_path, number) for number in range(1, 7)]
    assert refs == [f"web@{n}" for n in range(1, 7)]
    catalog = tmp_path / "catalog.duckdb"
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump(mixture(tmp_path, ["web@1"])))
    # web@2: a stopped run read it yesterday; web@3: a run that started long ago and has
    # not stopped, with a checkpoint yesterday; web@4: read only by a run that stopped 40
    # days ago; web@5: by a run that never stopped and has been silent for 50 days.
    record(catalog, run_event("recent", "start", ("web@2",), 1.5))
    record(catalog, run_event("recent", "stop", ("web@2",), 1))
    record(catalog, run_event("going", "start", ("web@3",), 90))
    record(catalog, run_event("going", "progress", ("web@3",), 1))
    record(catalog, run_event("crashed", "start", ("web@5",), 60))
    record(catalog, run_event("crashed", "progress", ("web@5",), 50))
    record(catalog, run_event("old", "start", ("web@4",), 41))
    record(catalog, run_event("old", "stop", ("web@4",), 40))
    before = tree(tmp_path)
    plan = survey(catalog, Retention(1, 30, {"web@1": "mix.yaml"}))
    assert [removal.ref for removal in plan.removals] == ["web@4", "web@5"]
    reasons = {kept.ref: kept.reasons for kept in plan.kept}
    assert reasons["web@1"] == ("pinned by mix.yaml",)
    assert reasons["web@2"][0].startswith("read by run recent on ")
    assert reasons["web@3"][0].startswith("read by run going, running (last event ")
    assert reasons["web@6"] == ("the latest of web",)
    # Planning changed nothing; every file of a removed version is listed, with its size.
    assert tree(tmp_path) == before
    web4 = sorted(str(p) for p in (tmp_path / "web-v4").glob("shard-*"))
    assert sorted(f.url for f in plan.removals[0].files) == web4
    assert plan.removals[0].bytes == sum(os.path.getsize(p) for p in web4)
    # A longer window keeps web@4 too, and web@5, whose run counts as ended at its last
    # event; more latest versions keep web@5; a shorter running window drops web@3.
    assert [r.ref for r in survey(catalog, Retention(1, 45)).removals] == ["web@1", "web@5"]
    longer = {k.ref: k.reasons for k in survey(catalog, Retention(1, 55)).kept}
    assert longer["web@5"][0].endswith("(never stopped: silent since)")
    assert "web@3" in [r.ref for r in survey(catalog, Retention(1, 0, {}, 0.5)).removals]
    assert [r.ref for r in survey(catalog, Retention(2, 0)).removals] == ["web@1", "web@2", "web@4"]
    with pytest.raises(ConfigError, match=r"web@9 \(pinned by --keep\) is not in the catalog"):
        survey(catalog, Retention(1, 30, {"web@9": "--keep"}))
    with pytest.raises(ConfigError, match="keep at least 1"):
        Retention(keep_latest=0)


def add_column(root: Path, source: str) -> str:
    """`source` with a column beside its shards: a version that reuses its shard files."""
    catalog = Catalog(root / "catalog.duckdb")
    version = catalog.get(source)
    folder = Path(version.uri) / "_columns" / "score"
    folder.mkdir(parents=True)
    files = []
    for shard in version.shards:
        path = folder / f"{shard.stem}.parquet"
        pq.write_table(pa.table({"score": [0.5] * shard.documents}), path)
        size, digest = file_digest(str(path))
        files.append(ColumnFile(path.name, size, digest, shard.documents))
    column = AddedColumn("score", "DOUBLE", str(folder), tuple(files), source)
    return catalog.add_column(version, column)[0].ref


def test_delete_removes_exactly_the_planned_files_and_spares_shared_ones(tmp_path: Path, cli):
    assert add_version(tmp_path, 1) == "web@1"
    assert add_column(tmp_path, "web@1") == "web@2"  # shares web@1's shards
    # web@3, as a takedown writes it: web@1's shards hard-linked, one a symlink instead.
    one, three = tmp_path / "web-v1", tmp_path / "web-v3"
    three.mkdir()
    names = sorted(path.name for path in one.iterdir() if path.is_file())
    for name in names:
        os.link(one / name, three / name)
    linked = next(name for name in names if name.endswith(".idx"))
    (three / linked).unlink()
    (three / linked).symlink_to(one / linked)
    catalog = Catalog(tmp_path / "catalog.duckdb")
    assert catalog.register(str(three), "web").ref == "web@3"
    # This host's cached plan of a mixture over web@1 goes with web@1's files.
    cached = resolve_mixture(MixtureSpec.model_validate(mixture(tmp_path, ["web@1"]))).folder
    assert os.path.exists(os.path.join(cached, "plan.json"))
    # Another catalog's web@1 is another dataset: its cached plan stays.
    other = tmp_path / "other"
    add_version(other, 1)
    kept = resolve_mixture(MixtureSpec.model_validate(mixture(other, ["web@1"]))).folder
    forget_runs(tmp_path / "catalog.duckdb")
    plan = survey(tmp_path / "catalog.duckdb", Retention(keep_latest=1))
    assert [removal.ref for removal in plan.removals] == ["web@1", "web@2"]
    web1, web2 = plan.removals
    shard_files = {str(one / name) for name in names if name.startswith("shard-")}
    # The symlinked file is web@3's through its target: it stays; each file is listed once.
    assert {f.url for f in web1.files} == shard_files - {str(one / linked)}
    assert [f.url for f in web1.shared] == [str(one / linked)]
    assert {Path(f.url).parent.name for f in web2.files} == {"score"}
    before = tree(tmp_path)
    code, out, err = cli("gc", "--catalog", str(tmp_path / "catalog.duckdb"), "--keep-latest", "1")
    assert code == 0, err
    assert "dry run: would remove" in out and "remove web@1" in out
    assert tree(tmp_path) == before  # a dry run changes nothing, the catalog included

    code, out, err = cli(
        "gc", "--catalog", str(tmp_path / "catalog.duckdb"), "--keep-latest", "1", "--delete"
    )
    assert code == 0, err
    planned = {f.url for removal in plan.removals for f in removal.files}
    gone = {str(tmp_path / name) for name in before} - {
        str(tmp_path / name) for name in tree(tmp_path)
    }
    assert gone == planned
    assert not os.path.exists(cached) and os.path.exists(os.path.join(kept, "plan.json"))
    # The folder keeps its manifest (lineage still tells what existed); web@3 reads whole.
    assert (one / "_manifest.json").exists() and (one / linked).exists()
    batch = next(MixtureDataset(mixture(tmp_path, ["web@3"])).batches(2))
    assert batch["input_ids"].shape == (2, 16)
    for ref in ("web@1", "web@2"):
        with pytest.raises(
            MixplaneError,
            match=rf"{ref}'s files were removed by gc on \d{{4}}-\d\d-\d\d; use web@3",
        ):
            MixtureDataset(mixture(tmp_path, [ref]))
    code, out, err = cli("gc", "--catalog", str(tmp_path / "catalog.duckdb"), "--json")
    assert code == 0 and '"collected_earlier"' in out and '"web@1"' in out
    # The catalog's listing says which versions are only a record now.
    code, out, _ = cli("catalog", "list", "--catalog", str(tmp_path / "catalog.duckdb"), "--json")
    listed = {row["dataset"]: row["collected"] for row in json.loads(out)}
    assert listed["web@3"] is None and listed["web@1"] and listed["web@1"] == listed["web@2"]
    code, out, _ = cli("catalog", "show", "web@1", "--catalog", str(tmp_path / "catalog.duckdb"))
    assert code == 0 and f"removed by gc on {listed['web@1']}" in out


def forget_runs(catalog: Path) -> None:
    """Remove the audit trail a loader may have written: these tests are about the host's
    open files (the trail's rules have a test of their own)."""
    shutil.rmtree(audit_folder(catalog), ignore_errors=True)


LOADER = """
import sys, json
from mixplane.load.dataset import MixtureDataset
from mixplane.load.remote.catalog_copy import open_catalog
from mixplane.load.resolve.query import resolve_mixture
dataset = MixtureDataset(json.loads(sys.argv[1]))
batch = next(dataset.batches(2))
print("ready", batch["input_ids"].shape[0], flush=True)
sys.stdin.read()  # until the test closes the pipe
"""


def test_a_loader_open_in_another_process_keeps_its_version(tmp_path: Path):
    for number in (1, 2, 3):
        add_version(tmp_path, number)
    catalog = tmp_path / "catalog.duckdb"
    stale = survey(catalog, Retention(keep_latest=1))  # made before the loader started
    assert [removal.ref for removal in stale.removals] == ["web@1", "web@2"]
    loader = subprocess.Popen(
        [sys.executable, "-c", LOADER, json.dumps(mixture(tmp_path, ["web@1"]))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert loader.stdout.readline().split() == ["ready", "2"], loader.stderr.read()
        forget_runs(catalog)
        plan = survey(catalog, Retention(keep_latest=1))
        assert [removal.ref for removal in plan.removals] == ["web@2"]
        (kept,) = [kept for kept in plan.kept if kept.ref == "web@1"]
        assert kept.reasons[0].startswith(f"open on this host: process {loader.pid} has ")
        # A plan made before the loader started is checked again before each version goes.
        result = apply_plan(stale, catalog)
        assert [removal.ref for removal in result.removed] == ["web@2"]
        assert [ref for ref, _ in result.skipped] == ["web@1"]
        assert all(os.path.exists(f.url) for f in stale.removals[0].files)
        assert not any(os.path.exists(f.url) for f in stale.removals[1].files)
    finally:
        loader.stdin.close()
        loader.wait()
    assert loader.returncode == 0, loader.stderr.read()
    assert not open_files().holders([f.identity for f in stale.removals[0].files])
    forget_runs(catalog)
    plan = survey(catalog, Retention(keep_latest=1))
    assert [removal.ref for removal in plan.removals] == ["web@1"]
    apply_plan(plan, catalog)
    assert not any(os.path.exists(f.url) for f in stale.removals[0].files)
    with pytest.raises(MixplaneError, match="web@1's files were removed by gc on .*; use web@3"):
        MixtureDataset(mixture(tmp_path, ["web@1"]))


def test_a_symlink_out_of_the_folder_goes_as_a_link_its_target_stays(tmp_path: Path):
    add_version(tmp_path, 1)
    outside = tmp_path / "elsewhere" / "tokens.bin"
    outside.parent.mkdir()
    link = next((tmp_path / "web-v1").glob("*.bin"))
    outside.write_bytes(link.read_bytes())
    link.unlink()
    link.symlink_to(outside)
    add_version(tmp_path, 2)
    plan = survey(tmp_path / "catalog.duckdb", Retention(keep_latest=1))
    (file,) = [f for f in plan.removals[0].files if f.url == str(link)]
    assert file.identity == str(outside) and file.size == outside.stat().st_size
    apply_plan(plan, tmp_path / "catalog.duckdb")
    assert not os.path.lexists(link) and outside.exists()
    assert {p.name for p in (tmp_path / "web-v1").iterdir()} == {"_manifest.json", "_stats.json"}


def test_a_gc_stopped_halfway_is_finished_by_the_next(tmp_path: Path, cli):
    for number in (1, 2, 3):
        add_version(tmp_path, number)
    catalog = tmp_path / "catalog.duckdb"
    (first, second) = survey(catalog, Retention(keep_latest=1)).removals
    # Stopped after recording both and removing web@1's files only.
    with Registry(catalog, writable=True) as registry:
        for r in (first, second):
            mark_collected(registry.connection, r.name, r.version, 1, 1, "2026-11-01 10:00:00")
    for file in first.files:
        os.unlink(file.url)
    plan = survey(catalog, Retention(keep_latest=1, pins={"web@2": "--keep"}))
    assert [(r.ref, r.collected_on) for r in plan.removals] == [("web@2", "2026-11-01")]
    assert plan.collected == (("web@1", "2026-11-01"),)
    code, out, err = cli("gc", "--catalog", str(catalog), "--keep-latest", "1", "--delete")
    assert code == 0, err
    assert "removed web@2: 8 files" in out and "left by the gc of 2026-11-01" in out
    assert not any(os.path.exists(f.url) for f in second.files)
    with pytest.raises(MixplaneError, match="web@2's files were removed by gc on 2026-11-01"):
        MixtureDataset(mixture(tmp_path, ["web@2"]))


def test_versions_on_object_storage_are_collected_the_same_way(tmp_path: Path, s3_bucket):
    import s3fs

    bucket, options = s3_bucket
    catalog = Catalog(tmp_path / "catalog.duckdb", storage_options=options)
    for number in (1, 2):
        url = f"s3://{bucket}/web-v{number}"
        write_token_dataset(url, seed=number, storage_options=options, **SHARDS)
        catalog.register(url, "web")
    plan = survey(tmp_path / "catalog.duckdb", Retention(keep_latest=1), options)
    (removal,) = plan.removals
    assert removal.ref == "web@1" and removal.files
    assert all(f.url.startswith(f"s3://{bucket}/web-v1/shard-") for f in removal.files)
    apply_plan(plan, tmp_path / "catalog.duckdb", options)
    fs = s3fs.S3FileSystem(**options)
    left = [Path(p).name for p in fs.ls(f"{bucket}/web-v1", refresh=True)]
    assert left == ["_manifest.json", "_stats.json"]
    assert len(fs.ls(f"{bucket}/web-v2", refresh=True)) > 1
    with pytest.raises(MixplaneError, match="web@1's files were removed by gc"):
        catalog.select("TRUE", ["web@1"])


def test_a_catalog_on_object_storage_is_collected_through_a_copy(tmp_path: Path, s3_bucket, cli):
    """gc on `s3://.../catalog.duckdb`: planned from a copy, the collected versions
    recorded in the uploaded catalog, so any machine's loader refuses them."""
    import s3fs

    bucket, options = s3_bucket
    url = f"s3://{bucket}/gc/catalog.duckdb"
    catalog = Catalog(url, storage_options=options)
    for number in (1, 2, 3):
        data = f"s3://{bucket}/gc/web-v{number}"
        write_token_dataset(data, seed=number, storage_options=options, **SHARDS)
        catalog.register(data, "web")
    plan = survey(url, Retention(keep_latest=2), options)
    assert [removal.ref for removal in plan.removals] == ["web@1"]
    fs = s3fs.S3FileSystem(**options)
    before = fs.info(f"{bucket}/gc/catalog.duckdb")["ETag"]
    apply_plan(plan, url, options)
    assert fs.info(f"{bucket}/gc/catalog.duckdb", refresh=True)["ETag"] != before
    left = [Path(p).name for p in fs.ls(f"{bucket}/gc/web-v1", refresh=True)]
    assert left == ["_manifest.json", "_stats.json"]
    # A loader on any machine reads the catalog's copy, which has the record.
    copy = open_catalog(url, str(tmp_path / "cache"), options)
    with pytest.raises(MixplaneError, match="web@1's files were removed by gc"):
        Catalog(copy.path, storage_options=options).select("TRUE", ["web@1"])
    assert Catalog(copy.path, storage_options=options).select("TRUE", ["web@2"]).documents
    flag = ["--storage-options", json.dumps(options)]
    code, out, _ = cli("gc", "--catalog", url, "--keep-latest", "2", "--json", *flag)
    assert code == 0 and json.loads(out)["dry_run"]
    # Recorded, its files gone: nothing is left to remove.
    assert survey(url, Retention(keep_latest=2), options).removals == ()
    with pytest.raises(ConfigError, match="no catalog there"):
        survey(f"s3://{bucket}/gc/none.duckdb", Retention(keep_latest=2), options)


def run_lines(cli, block: str) -> list[tuple[str, str]]:
    """Each `mixplane ...` line of a documented bash block, run as written: (stdout, stderr)
    of each."""
    outputs = []
    for line in (line for line in block.splitlines() if line.strip()):
        words = shlex.split(line.split("#")[0])
        assert words[0] == "mixplane", line
        code, out, err = cli(*words[1:])
        assert code == 0, (line, err)
        outputs.append((out, err))
    return outputs


def test_the_readme_commands_run_as_written(tmp_path: Path, cli, monkeypatch):
    from mixplane.catalog.gc.plan import DEFAULT_KEEP_LATEST, DEFAULT_KEEP_USED_DAYS
    from mixplane.cli.gc import gc

    options = inspect.signature(gc).parameters
    assert options["keep_latest"].default.default == DEFAULT_KEEP_LATEST
    assert options["keep_used_days"].default.default == DEFAULT_KEEP_USED_DAYS
    monkeypatch.chdir(tmp_path)
    for number in (1, 2, 3, 4):
        add_version(tmp_path, number)
    Path("mixture.yaml").write_text(yaml.safe_dump(mixture(tmp_path, ["web@1"])))
    (dry, _), (deleted, _) = run_lines(cli, readme_block("bash", "mixplane gc"))
    assert "would remove" in dry and "keep web@1 " in dry and "pinned by mixture.yaml" in dry
    assert "removed web@2:" in deleted
    # web@2 went (not pinned, not among the latest 2), web@1 stays (pinned).
    assert not list((tmp_path / "web-v2").glob("shard-*"))
    assert list((tmp_path / "web-v1").glob("shard-*"))
    code, out, err = cli("lineage", "web@2")  # the catalog still tells what it was
    assert code == 0, err
    refusals = {
        ("--keep", "web"): "--keep web: name a version, web@N",
        ("--keep", "web@9"): "web@9 (pinned by --keep) is not in the catalog",
        ("--keep-latest", "0"): "--keep-latest 0: keep at least 1",
        ("--mixtures", "missing.yaml"): "missing.yaml",
    }
    for args, message in refusals.items():
        code, _, err = cli("gc", *args)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    # A pin in a nested component counts as one at the top.
    nested = mixture(tmp_path, ["web@1"])
    del nested["datasets"]
    nested["components"] = {
        "all": {"weight": 1.0, "components": {"old": {"weight": 1.0, "datasets": ["web@3"]}}}
    }
    Path("nested.yaml").write_text(yaml.safe_dump(nested))
    code, out, err = cli("gc", "--mixtures", "nested.yaml", "--keep-latest", "1")
    assert code == 0, err
    assert "keep web@3 (8 files" in out and "pinned by nested.yaml" in out


def test_the_governance_page_commands_and_python_run_as_written(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for number in (1, 2, 3, 4, 5, 6):
        add_version(tmp_path, number)
    Path("prod.yaml").write_text(yaml.safe_dump(mixture(tmp_path, ["web@1"])))
    namespace: dict = {}
    exec(readme_block("python", "apply_plan(plan", GOVERNANCE_MD), namespace)
    assert [removal.ref for removal in namespace["plan"].removals] == ["web@2", "web@3", "web@4"]
    assert [removal.ref for removal in namespace["result"].removed] == ["web@2", "web@3", "web@4"]
    add_version(tmp_path, 7)
    documented = readme_block("bash", "mixplane gc --json", GOVERNANCE_MD)
    (dry, _), (deleted, warned), (listed, _) = run_lines(cli, documented)
    # No pins and the latest 2 (6 and 7): web@1 and web@5 would go.
    assert "remove web@1:" in dry and "remove web@5:" in dry and "would remove 16 files" in dry
    # The latest 3 and prod.yaml's pin: nothing left to remove.
    assert "removed 0 files" in deleted and "keep web@5 " in deleted
    assert "warning: web@2 is pinned by --keep, but gc removed its files on " in warned
    assert json.loads(listed)["collected_earlier"][0] == {
        "dataset": "web@2",
        "on": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
    }


def test_an_image_version_is_its_tars_indexes_and_metadata(tmp_path: Path):
    from mixplane.load.images.synthetic import write_image_dataset

    catalog = Catalog(tmp_path / "catalog.duckdb")
    for number in (1, 2):
        write_image_dataset(str(tmp_path / f"photos-v{number}"), samples=6, seed=number)
        catalog.register(str(tmp_path / f"photos-v{number}"), "photos")
    (removal,) = survey(tmp_path / "catalog.duckdb", Retention(keep_latest=1)).removals
    folder = tmp_path / "photos-v1"
    expected = [p for p in folder.iterdir() if p.name.startswith("part-")]
    assert {f.url for f in removal.files} == {str(p) for p in expected}
    assert {p.suffix for p in expected} == {".tar", ".idx", ".parquet"}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 12), max_size=6), min_size=1, max_size=7),
    st.integers(1, 3),
    st.sets(st.integers(1, 7)),
)
def test_no_plan_removes_a_file_a_kept_version_references(files, keep_latest, pinned):
    """Versions of one dataset over a pool of 13 files, some shared; any policy."""
    versions = [
        VersionOnDisk("web", n, tuple(VersionFile(f"/d/{i}", i + 1, f"/d/{i}") for i in ids))
        for n, ids in enumerate(files, start=1)
    ]
    pins = {f"web@{n}": "--keep" for n in pinned if n <= len(versions)}
    plan = plan_gc(versions, Retention(keep_latest, 30, pins), InUse(now=stamp(0)))
    kept = {k.ref for k in plan.kept}
    assert kept | {r.ref for r in plan.removals} == {v.ref for v in versions}
    assert set(pins) | {f"web@{n}" for n in range(len(versions) - keep_latest + 1, 99)} >= kept
    held = {f.identity for v in versions if v.ref in kept for f in v.files}
    removed = [f.identity for r in plan.removals for f in r.files]
    assert len(removed) == len(set(removed))  # each file once
    assert not held & set(removed)
    # Every file of a removed version goes unless a kept version holds it.
    for removal, version in ((r, versions[r.version - 1]) for r in plan.removals):
        assert {f.identity for f in version.files} - held <= set(removed)
        assert {f.identity for f in removal.shared} == {f.identity for f in version.files} & held
