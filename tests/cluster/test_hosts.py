"""The hosts themselves: each its own address and disk, reachable over the bridge, and
namespaces made and removed by the ids the harness created, nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.conftest import SKIP
from cluster.machines import HOSTS, RAY_RESOURCES
from cluster.netns import NamespaceError, Network

TESTS = Path(__file__).resolve().parents[1]


def namespaces() -> set[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in listed.splitlines() if line.strip()}


def test_each_host_has_its_address_and_disk_and_reaches_the_others(ray_cluster):
    cluster = ray_cluster
    hosts = cluster.hosts
    for name in HOSTS:
        shown = cluster.run(name, ["ip", "-4", "-o", "addr", "show", "eth0"])
        assert f"inet {hosts[name].address}/" in shown
    # A file on one host's disk is on no other.
    cluster.shell("head", "echo only-here > /tmp/marker && test -d $HOME")
    assert hosts["head"].local("/tmp/marker").read_text() == "only-here\n"
    for name in ("worker1", "worker2", "store"):
        cluster.shell(name, "test ! -e /tmp/marker")
    # The store answers every host over the bridge (not loopback: it listens on its address).
    probe = "import urllib.request, os; urllib.request.urlopen(os.environ['AWS_ENDPOINT_URL'])"
    for name in ("head", "worker1", "worker2"):
        cluster.python(name, probe)
    with pytest.raises(Exception, match="refused|unreachable|timed out"):
        cluster.python("head", "import socket; socket.create_connection(('127.0.0.1', 9000), 5)")
    # Ray sees one node per Ray host, each with the one CPU the harness gives it.
    nodes = cluster.python(
        "head",
        "import ray, json; ray.init(address='auto', log_to_driver=False); "
        "print(json.dumps([(n['NodeManagerAddress'], n['Resources']['CPU']) "
        "for n in ray.nodes() if n['Alive']]))",
    )
    alive = sorted(tuple(node) for node in json.loads(nodes.strip().splitlines()[-1]))
    ray_hosts = ("head", "worker1", "worker2")
    assert alive == sorted((hosts[h].address, RAY_RESOURCES["CPU"]) for h in ray_hosts)


def test_a_network_removes_exactly_the_namespaces_it_made(tmp_path):
    before = namespaces()
    network = Network(["a", "b"], tmp_path)
    try:
        network.create()
        made = namespaces() - before
        assert made == {f"{network.id}-sw", f"{network.id}-1", f"{network.id}-2"}
        # A process left running on a host is ended with it.
        sleeper = subprocess.Popen(
            network.hosts["a"].command(["sh", "-c", "echo up; exec sleep 600"]),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert sleeper.stdout.readline() == "up\n"
        assert sleeper.pid in network.hosts["a"].pids()
    finally:
        network.destroy()
    assert sleeper.wait() != 0
    assert namespaces() == before


def test_a_network_that_fails_halfway_removes_what_it_made(tmp_path):
    before = namespaces()
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("the hosts' disks cannot go under a file")
    with pytest.raises(OSError):
        Network(["a", "b"], blocker).create()
    assert namespaces() == before


def test_without_namespaces_the_tests_fail_in_one_line_unless_turned_off(tmp_path):
    """Without `ip` the cluster fixture fails with one line saying why; with
    MIXPLANE_SKIP_CLUSTER=1 it skips."""
    (tmp_path / "bin").mkdir()
    os.symlink(sys.executable, tmp_path / "bin" / "python")
    test = "test_hosts.py::test_each_host_has_its_address_and_disk_and_reaches_the_others"
    # Without the plugins this test does not need, pytest starts in a second, not five.
    plugins = ("cacheprovider", "hypothesispytest", "schemathesis", "playwright", "anyio")
    command = [sys.executable, "-m", "pytest", "-q", "-o", "addopts=", f"{TESTS}/cluster/{test}"]
    command += [f"-pno:{plugin}" for plugin in plugins]
    env = os.environ | {"PATH": str(tmp_path / "bin")}
    env.pop(SKIP, None)
    failed = subprocess.run(command, capture_output=True, text=True, env=env, cwd=TESTS.parent)
    assert failed.returncode == 1, failed.stdout
    reason = "the cluster tests need Linux network namespaces (root and iproute2): iproute2's"
    lines = [line for line in failed.stdout.splitlines() if reason in line]
    assert lines and f"{SKIP}=1 turns them off" in lines[0], failed.stdout
    skipped = subprocess.run(command, capture_output=True, text=True, env=env | {SKIP: "1"},
                             cwd=TESTS.parent)  # fmt: skip
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout


def test_a_namespace_error_says_what_failed():
    with pytest.raises(NamespaceError, match="`ip netns add .*` failed: "):
        Network(["a"], Path("/nonexistent"), id="bad/name").create()
