"""Checking, before a run on a Ray cluster, that every node sees the local paths it names.

Hosts of a cluster share object storage, not disks: an output folder, an input file or a
model given as a local path is on the driver's machine and, unless it is in a folder every
host mounts, nowhere else. A run with such a path would scatter its outputs over the hosts'
disks and fail late, with a traceback (a merge cannot find the work files other hosts
wrote, the manifest cannot hash parts it cannot see). So a run on a Ray cluster first sends
one small task to each node that has CPUs: it checks that every local path is there as the
driver sees it (a folder the run writes holds the probe file the driver just put in it; a
file it reads has the same size; a folder it reads, the same files) and that the stages'
modules import. The run stops with one line naming the path and the node otherwise.

Example:
    >>> paths = [NodePath("/data/out", "output", writes=True)]
    >>> check_nodes_see(paths, [], ExecutorSettings(executor="ray", ray_address="head:6379"))
    ... # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import os
import secrets
from dataclasses import dataclass
from typing import Any

from mixplane.errors import ConfigError
from mixplane.io.atomic import is_local, local_path
from mixplane.process.executors import ExecutorSettings

PROBE_PREFIX = "_node_probe-"


@dataclass(frozen=True)
class NodePath:
    """A local path a run's tasks open: `what` it is (for the message) and whether tasks
    write into it (a folder) or only read it."""

    path: str
    what: str
    writes: bool = False


def describe(path: str) -> Any:
    """What a reader of `path` sees: a file's size, a folder's files and their sizes, or
    None when nothing is there."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    if os.path.isdir(path):
        with os.scandir(path) as entries:
            return sorted(
                (entry.name, entry.stat().st_size)
                for entry in entries
                if entry.is_file() and not entry.name.startswith(PROBE_PREFIX)
            )
    return None


def probe_node(expected: list[tuple[str, str, Any]], modules: list[str]) -> list[str]:
    """On one node: what differs from the driver's view of each `(path, label, what the
    driver saw)`, and which modules fail to import; one phrase per problem."""
    problems = []
    for path, label, seen in expected:
        if describe(path) != seen:
            problems.append(f"does not see the {label}")
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as error:
            problems.append(f"cannot import {module} ({type(error).__name__}: {error})")
    return problems


def check_nodes_see(paths: list[NodePath], modules: list[str], settings: ExecutorSettings) -> None:
    """On a Ray cluster (an address was given), check every node with CPUs sees `paths`
    as this process does and imports `modules`; raise `ConfigError` with the first
    problem otherwise. Call it inside `ray_session(settings)`."""
    if settings.executor != "ray" or settings.ray_address is None:
        return
    local = [item for item in paths if is_local(item.path)]
    if not local and not modules:
        return
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probes = []
    try:
        expected = []
        for item in local:
            path = os.path.abspath(local_path(item.path))
            label = f"{item.what} {path}"
            if item.writes:  # the folder as this process just wrote into it
                os.makedirs(path, exist_ok=True)
                label = f"{item.what} folder {path}"
                path = os.path.join(path, PROBE_PREFIX + secrets.token_hex(8))
                with open(path, "wb") as handle:
                    handle.write(b"probe")
                probes.append(path)
            expected.append((path, label, describe(path)))
        remote = ray.remote(num_cpus=0, max_retries=0)(probe_node)
        nodes = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
        refs = [
            remote.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            ).remote(expected, modules)
            for node in nodes
        ]
        for node, ref in zip(nodes, refs, strict=True):
            try:
                problems = ray.get(ref)
            except Exception as error:
                problems = [f"cannot run mixplane ({type(error).__name__})"]
            if problems:
                raise ConfigError(
                    f"Ray node {node['NodeManagerAddress']} {problems[0]}: on a cluster every "
                    "host must see the run's files; use object storage (s3://...) or a folder "
                    "every host mounts, and install the stages' packages on every host"
                )
    finally:
        for probe in probes:
            os.remove(probe)


def stage_modules(stage_names: list[str]) -> list[str]:
    """The modules of stages named by import path (`my_package.stages:MyStage`)."""
    from mixplane.stages import BUILTIN_STAGES

    modules = []
    for name in stage_names:
        if name in BUILTIN_STAGES or ("." not in name and ":" not in name):
            continue
        module = name.rpartition(":" if ":" in name else ".")[0]
        if module and module not in modules:
            modules.append(module)
    return modules
