"""Training ranks on two hosts, as the README's torchrun recipe runs them: the same stream
as four ranks on one host, each host's cache filled from the store once, and a job that
loses a host resumes on the other with three ranks from its last checkpoint, nothing
repeated or skipped."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
import yaml
from readme_blocks import README, readme_block

from cluster.machines import Cluster

TRAIN = Path(__file__).with_name("train.py")
TORCHRUN = readme_block("bash", "torchrun --nnodes=2")
MIXTURE = {
    "catalog": "s3://my-bucket/train/catalog.duckdb",
    "seq_len": 64,
    "seed": 7,
    "components": {
        "wiki": {"where": "source = 'wiki'", "weight": 0.6},
        "code": {"where": "source = 'code'", "weight": 0.4},
    },
}
# Over a million tokens each: a loader's block (2M tokens) spans few epochs of them.
DATASETS = {
    "wiki": {"documents": 3000, "seed": 1, "source": "wiki", "mean_tokens": 400, "eos_id": 0},
    "code": {"documents": 2000, "seed": 2, "source": "code", "mean_tokens": 400, "eos_id": 0},
}
BATCH = 4  # the README's batch_size
SAVE_AT = 3
STEPS = 8
CHECKPOINT = "s3://my-bucket/train/checkpoints/step-3.json"
TRAINERS = ("worker1", "worker2")

REFERENCE = """
import hashlib, json, sys
from mixplane.load import MixtureDataset
count = int(sys.argv[1])
stream = []
for rank in range(4):
    dataset = MixtureDataset("mixture.yaml", rank=rank, world_size=4)
    for _, sample in zip(range(count), dataset):
        tokens = sample["input_ids"].astype("<i8").tobytes()
        stream.append([int(sample["index"]), hashlib.sha256(tokens).hexdigest()[:16]])
print(json.dumps(sorted(stream)))
"""


@pytest.fixture(scope="module")
def training(cluster: Cluster) -> None:
    """Two token datasets and their catalog on the store; `mixture.yaml` and `train.py`
    in the working folder of every host that trains (and of the head)."""
    cluster.python(
        "head",
        "import json, sys; from mixplane.load.tools.synthetic import write_catalog; "
        "write_catalog('s3://my-bucket/train', json.loads(sys.argv[1]))",
        json.dumps(
            {name: dict(options, shard_bytes=300_000) for name, options in DATASETS.items()}
        ),
    )
    for host in ("head", *TRAINERS):
        cluster.hosts[host].local("/tmp/mixture.yaml").write_text(yaml.safe_dump(MIXTURE))
        cluster.hosts[host].local("/tmp/train.py").write_text(TRAIN.read_text())


def torchrun(cluster: Cluster, host: str, node_rank: int, command: str, **env: str):
    """The README's torchrun line on `host`, node `node_rank`, the first trainer its
    master."""
    master = cluster.hosts[TRAINERS[0]].address
    extra = {"NODE_RANK": str(node_rank), "MASTER": master, "README": str(README), **env}
    return cluster.launch(host, ["bash", "-ec", command], **extra)


def downloads(cluster: Cluster, host: str, suffix: str) -> Counter:
    """GETs of the store's objects ending in `suffix`, by object, from `host`."""
    address = cluster.hosts[host].address
    return Counter(
        path.split("?")[0]
        for client, method, path in cluster.s3_requests()
        if client == address and method == "GET" and path.split("?")[0].endswith(suffix)
    )


def read_stream(path: Path) -> list[list]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_two_hosts_then_three_ranks_after_losing_one(cluster: Cluster, training):
    positions = SAVE_AT * 4 * BATCH + (STEPS - SAVE_AT) * 3 * BATCH
    # One host with four ranks, beside the job: the stream to compare with.
    reference = cluster.launch("head", ["python", "-c", REFERENCE, str(math.ceil(positions / 4))])

    # Two hosts, two ranks each, until worker2 is lost after the checkpoint at step 3.
    first, second = (
        torchrun(cluster, host, rank, TORCHRUN, SAVE_AT=str(SAVE_AT), CHECKPOINT=CHECKPOINT)
        for rank, host in enumerate(TRAINERS)
    )
    first.wait_for(rf"saved step {SAVE_AT}")
    cluster.network.kill(cluster.hosts["worker2"])
    assert first.wait() != 0  # its ranks' peers are gone
    second.wait()
    before = read_stream(cluster.hosts["worker1"].local("/tmp/stream.jsonl"))
    cluster.hosts["worker1"].local("/tmp/stream.jsonl").unlink()
    fetched = {host: downloads(cluster, host, ".bin") for host in TRAINERS}

    # The job again, on the surviving host with three ranks, from the checkpoint.
    resumed = TORCHRUN.replace("--nnodes=2 --nproc-per-node=2", "--nnodes=1 --nproc-per-node=3")
    assert resumed != TORCHRUN
    again = torchrun(cluster, "worker1", 0, resumed, RESUME=CHECKPOINT, STEPS=str(STEPS))
    cluster.finish(again)
    after = read_stream(cluster.hosts["worker1"].local("/tmp/stream.jsonl"))

    expected = dict(json.loads(cluster.finish(reference).splitlines()[-1]))
    # Four ranks on two hosts read what four ranks on one host read; three ranks go on
    # from the checkpoint's position; together, every position once, none skipped.
    kept = [row for row in before if row[0] <= SAVE_AT]
    assert sorted(r[1] for r in kept) == list(range(SAVE_AT * 4 * BATCH))
    assert sorted(r[0] for r in after) == [
        s for s in range(SAVE_AT + 1, STEPS + 1) for _ in range(3 * BATCH)
    ]
    stream = sorted((position, digest) for _, position, digest in kept + after)
    assert [p for p, _ in stream] == list(range(positions))
    assert all(expected[position] == digest for position, digest in stream)
    # Each trainer host fetched the shards its ranks read once, into its own cache; the
    # resumed job found them there.
    for host in TRAINERS:
        assert fetched[host] and set(fetched[host].values()) == {1}, fetched[host]
        assert set(downloads(cluster, host, "catalog.duckdb").values()) == {1}
    assert downloads(cluster, "worker1", ".bin") == fetched["worker1"]
    # One plan per host, in the host's own cache, whatever its ranks and restarts.
    for host in TRAINERS:
        plans = cluster.hosts[host].local("/tmp/home/.cache/mixplane/plans")
        assert len([entry for entry in plans.iterdir() if entry.is_dir()]) == 1
