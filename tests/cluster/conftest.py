"""The cluster every test of this folder shares: hosts in network namespaces, moto's S3
server on one, a Ray cluster on three (see `machines.py`). Made once, removed after the
folder's last test, whatever happened.

Where namespaces cannot be made (not root, no iproute2), the tests fail with one line
saying why; MIXPLANE_SKIP_CLUSTER=1 turns them off.
"""

from __future__ import annotations

import os

import pytest

from cluster.machines import Cluster
from cluster.netns import NamespaceError

SKIP = "MIXPLANE_SKIP_CLUSTER"


def cluster_unavailable(error: Exception) -> str:
    return (
        f"the cluster tests need Linux network namespaces (root and iproute2): {error}; "
        f"{SKIP}=1 turns them off"
    )


@pytest.fixture(scope="package")
def cluster(tmp_path_factory) -> Cluster:
    if os.environ.get(SKIP) == "1":
        pytest.skip(f"{SKIP}=1: the cluster tests are turned off")
    made = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        try:
            made.up()
        except NamespaceError as error:
            pytest.fail(cluster_unavailable(error), pytrace=False)
        yield made
    finally:
        made.stop()


@pytest.fixture
def ray_cluster(cluster: Cluster) -> Cluster:
    """The cluster with Ray on its three hosts (started again where a test killed it)."""
    cluster.ensure_ray()
    return cluster
