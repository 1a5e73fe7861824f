"""Processing on the three-node Ray cluster, as the README's "Running on a cluster" says:
the same bytes as one machine's local executor, and a node lost mid-run costs nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from readme_blocks import readme_block

from cluster.machines import WAIT_SECONDS, Cluster, CommandFailed

DOCS = 800
PIPELINE = readme_block("yaml", "executor: ray")
COMMANDS = readme_block("bash", "mixplane process pipeline.yaml --ray-address")
# What differs between two runs of the same work: timings, and where the output went.
VARYING = {"seconds", "created_at", "tokens_per_second", "config", "skipped_tasks",
           "skipped_by_segment", "skipped"}  # fmt: skip


@pytest.fixture(scope="module")
def corpus(cluster: Cluster) -> None:
    """A synthetic corpus with planted duplicates at s3://my-bucket/raw, the README's
    pipeline in the head's working folder."""
    cluster.shell(
        "head",
        f"mixplane synth /tmp/corpus --docs {DOCS} --seed 3 >/dev/null && "
        "python -m cluster.objects put /tmp/corpus/raw s3://my-bucket/raw",
    )
    cluster.hosts["head"].local("/tmp/pipeline.yaml").write_text(PIPELINE)
    cluster.hosts["worker1"].local("/tmp/pipeline.yaml").write_text(PIPELINE)


def tasks_by_host(cluster: Cluster) -> dict[str, int]:
    """Tasks of mixplane's steps each Ray host has run so far, from its workers' logs (on
    its own disk: Ray marks each task's start in its worker's log)."""
    counts = {}
    for host in ("head", "worker1", "worker2"):
        logs = cluster.hosts[host].local("/tmp/ray").glob("session_*/logs/worker-*.out")
        lines = (line for log in logs for line in log.read_text(errors="replace").splitlines())
        counts[host] = sum(
            line in (":task_name:run_segment_task", ":task_name:run_tokenize_task")
            for line in lines
        )
    return counts


def download(cluster: Cluster, *urls: str) -> list[Path]:
    """Copies of the folders `urls` on the head's disk; their paths on this machine."""
    inside = ["/tmp/got/" + url.removeprefix("s3://my-bucket/").replace("/", "-") for url in urls]
    pairs = [item for pair in zip(urls, inside, strict=True) for item in pair]
    cluster.run("head", ["python", "-m", "cluster.objects", "get", *pairs])
    return [cluster.hosts["head"].local(path) for path in inside]


def without_varying(value, varying: set[str]):
    if isinstance(value, dict):
        return {k: without_varying(v, varying) for k, v in value.items() if k not in varying}
    if isinstance(value, list):
        return [without_varying(item, varying) for item in value]
    return value


def assert_same_outputs(got: Path, expected: Path, varying: set[str] = VARYING) -> int:
    """Every data file of `got` has the bytes of `expected`'s; the statistics, markers and
    manifests agree but for timings and the output's URL. Returns the number of files
    compared."""
    names = sorted(p.relative_to(expected) for p in expected.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(got) for p in got.rglob("*") if p.is_file())
    for name in names:
        if name.suffix == ".json":
            expected_json = without_varying(json.loads((expected / name).read_text()), varying)
            got_json = without_varying(json.loads((got / name).read_text()), varying)
            assert got_json == expected_json, name
        else:
            assert (got / name).read_bytes() == (expected / name).read_bytes(), name
    return len(names)


def commands(block: str) -> list[str]:
    """A bash block's commands, continuation lines joined."""
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def test_the_readme_steps_on_three_nodes_give_one_machines_bytes(ray_cluster: Cluster, corpus):
    cluster = ray_cluster
    before = tasks_by_host(cluster)
    # One machine's run beside the cluster's: the same pipeline with the local executor,
    # then tokenized and registered, on worker1; the README's commands on the head.
    local = cluster.launch(
        "worker1",
        ["mixplane", "process", "pipeline.yaml", "--executor", "local",
         "--output", "s3://my-bucket/local/clean"],
    )  # fmt: skip
    for command in commands(COMMANDS):
        cluster.shell("head", command)
        if "train-tokenizer" in command:
            cluster.finish(local)
            local = cluster.launch(
                "worker1",
                ["bash", "-ec",
                 "mixplane tokenize s3://my-bucket/clean s3://my-bucket/local/tokens "
                 "-t s3://my-bucket/tokenizer.json --eos && "
                 "mixplane catalog register s3://my-bucket/local/tokens --name corpus "
                 "--catalog s3://my-bucket/local/catalog.duckdb"],
            )  # fmt: skip
    cluster.finish(local)
    ran = {host: count - before[host] for host, count in tasks_by_host(cluster).items()}
    assert all(ran.values()), f"every Ray host runs tasks: {ran}"
    clean, local_clean, tokens, local_tokens = download(
        cluster,
        *("s3://my-bucket/clean", "s3://my-bucket/local/clean"),
        *("s3://my-bucket/tokens", "s3://my-bucket/local/tokens"),
    )
    stats = json.loads((clean / "_stats.json").read_text())
    assert stats["excluded_by"]["dedup_exact"]["duplicate"] > 0
    assert stats["excluded_by"]["dedup_minhash"]["duplicate"] > 0
    assert assert_same_outputs(clean, local_clean) > 8
    assert assert_same_outputs(tokens, local_tokens) > 8
    # The catalogs on the store hold the same dataset (its content's fingerprint).
    cluster.python(
        "head",
        "import s3fs, sys; s3fs.S3FileSystem().get_file(sys.argv[1], sys.argv[2]); "
        "s3fs.S3FileSystem().get_file(sys.argv[3], sys.argv[4])",
        *("my-bucket/catalog.duckdb", "/tmp/got/catalog.duckdb"),
        *("my-bucket/local/catalog.duckdb", "/tmp/got/local-catalog.duckdb"),
    )
    head = cluster.hosts["head"]
    registered = fingerprints(head.local("/tmp/got/catalog.duckdb"))
    assert len(registered) == 1
    assert registered == fingerprints(head.local("/tmp/got/local-catalog.duckdb"))


def fingerprints(path: Path) -> list[tuple]:
    from mixplane.catalog import Catalog

    return [(v.ref, v.fingerprint, v.documents, v.tokens) for v in Catalog(path).versions()]


def test_local_paths_every_node_sees_or_a_clear_refusal(ray_cluster: Cluster, corpus):
    """A local output folder on the driver's disk alone stops the run before any task,
    in one line naming the node and the folder; one on a folder every host mounts (here
    /dev/shm) is used, with a tokenizer file only the driver's disk holds."""
    cluster = ray_cluster
    with pytest.raises(CommandFailed) as refused:
        cluster.run("head", ["mixplane", "process", "pipeline.yaml", "--ray-address",
                             cluster.ray_address, "--output", "/tmp/clean-here"])  # fmt: skip
    error = [line for line in str(refused.value).splitlines() if "error:" in line]
    assert len(error) == 1 and "does not see the output folder /tmp/clean-here: " in error[0]
    assert error[0].split("Ray node ")[1].split()[0] in (
        cluster.hosts["worker1"].address, cluster.hosts["worker2"].address
    )  # fmt: skip
    for host in ("head", "worker1", "worker2"):
        assert not list(cluster.hosts[host].local("/tmp").glob("clean-here/*"))
    shared = Path(f"/dev/shm/{cluster.network.id}")
    try:
        cluster.shell(
            "head",
            'python -c "import s3fs; s3fs.S3FileSystem().get_file('
            "'my-bucket/tokenizer.json', '/tmp/tokenizer.json')\" && "
            f"mixplane tokenize s3://my-bucket/clean {shared}/tokens -t /tmp/tokenizer.json "
            f"--eos --executor ray --ray-address {cluster.ray_address}",
        )
        (expected,) = download(cluster, "s3://my-bucket/tokens")
        shards = sorted(path.name for path in expected.glob("shard-*"))
        assert shards and all(
            (shared / "tokens" / name).read_bytes() == (expected / name).read_bytes()
            for name in shards
        )
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_node_killed_mid_run_changes_nothing(ray_cluster: Cluster, corpus):
    """worker2 dies while a task of the run is on it: its worker is frozen (the task cannot
    finish there), its raylet SIGKILLed, then the rest of the host. Ray runs the task again
    on another node, and the output and statistics are those of the run without the
    failure: nothing is counted twice."""
    cluster = ray_cluster
    run = cluster.launch(
        "head",
        ["mixplane", "process", "pipeline.yaml", "--ray-address", cluster.ray_address,
         "--output", "s3://my-bucket/failure/clean"],
    )  # fmt: skip
    worker = wait_for_task(cluster, "worker2", "ray::run_segment_task", run)
    os.kill(worker, signal.SIGSTOP)
    os.kill(cluster.pid_of("worker2", "raylet"), signal.SIGKILL)
    cluster.network.kill(cluster.hosts["worker2"])
    output = cluster.finish(run)
    assert "Task run_segment_task failed. There are 2 retries remaining" in output
    got, expected = download(cluster, "s3://my-bucket/failure/clean", "s3://my-bucket/clean")
    assert assert_same_outputs(got, expected) > 8


def test_a_node_cut_off_mid_run_changes_nothing(ray_cluster: Cluster, corpus):
    """worker2's link is cut while a task of the run is on it (held there, so the task
    cannot finish first): its processes live on but cannot be reached. With the README's
    keepalive settings Ray gives up on the node and runs the task elsewhere, and the output
    is that of the run without the failure. The host is then lost for good (killed, its
    link mended), as `ensure_ray` expects of a lost host."""
    cluster = ray_cluster
    worker2 = cluster.hosts["worker2"]
    run = cluster.launch(
        "head",
        ["mixplane", "process", "pipeline.yaml", "--ray-address", cluster.ray_address,
         "--output", "s3://my-bucket/cut/clean"],
    )  # fmt: skip
    os.kill(wait_for_task(cluster, "worker2", "ray::run_segment_task", run), signal.SIGSTOP)
    cluster.network.cut(worker2)
    try:
        output = cluster.finish(run)
    finally:
        cluster.network.kill(worker2)
        cluster.network.mend(worker2)
    assert "Task run_segment_task failed. There are 2 retries remaining" in output
    got, expected = download(cluster, "s3://my-bucket/cut/clean", "s3://my-bucket/clean")
    assert assert_same_outputs(got, expected) > 8


def test_a_run_resumes_on_a_restarted_head_from_the_tasks_it_completed(
    ray_cluster: Cluster, corpus
):
    """The head's machine is lost mid-run, with the driver on it, once a task has written
    its completion marker and while another is held on worker2 (so the run cannot end
    first). On a new Ray cluster (head and workers started again), the same command reuses
    the completed tasks and gives the bytes of a run without the loss."""
    cluster = ray_cluster
    output = "s3://my-bucket/restart/clean"
    argv = ["mixplane", "process", "pipeline.yaml", "--ray-address", cluster.ray_address,
            "--output", output]  # fmt: skip
    run = cluster.launch("head", argv)
    held = wait_for_task(cluster, "worker2", "ray::run_segment_task", run)
    os.kill(held, signal.SIGSTOP)
    wait_for_marker(cluster, "/my-bucket/restart/clean/", run)
    cluster.network.kill(cluster.hosts["head"])
    assert run.wait() != 0
    cluster.restart_ray()
    again = cluster.run("head", argv)
    reused = re.search(r"(\d+) of (\d+) tasks reused completed work", again)
    assert reused and 0 < int(reused[1]) < int(reused[2]), again[-2000:]
    got, expected = download(cluster, output, "s3://my-bucket/clean")
    assert assert_same_outputs(got, expected) > 8


def wait_for_marker(cluster: Cluster, prefix: str, run) -> None:
    """Until the S3 server has stored a task's completion marker under `prefix`; fails if
    the run ends first."""
    marker = re.compile(re.escape(prefix) + r".*/_tasks/task-\d+\.json$")
    deadline = time.monotonic() + WAIT_SECONDS
    while not any(
        method == "PUT" and marker.match(path) for _, method, path in cluster.s3_requests()
    ):
        if run.process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"no task marker under {prefix} while the run lasted")
        time.sleep(0.05)


def wait_for_task(cluster: Cluster, host: str, title: str, run) -> int:
    """The pid of a Ray worker of `host` running a task (its process title), once there
    is one; fails if the run ends first."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        for pid in cluster.hosts[host].pids():
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if command.startswith(title.encode()):
                return pid
        if run.process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"no task ran on {host} while the run lasted")
        time.sleep(0.05)
