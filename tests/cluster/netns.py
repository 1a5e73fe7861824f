"""Several hosts on one machine: Linux network namespaces joined by veth pairs and a bridge.

A `Network` makes, under one id of its own (`mxp<pid><random>`), a switch namespace that
holds a bridge, and one namespace per host, linked to the bridge by a veth pair, with an
address of a private subnet, loopback up and a default route (so programs that find "their"
address by routing to the internet, as Ray does, find the host's). Nothing is made or
changed in the machine's own namespace: the bridge and the switch ends of the links live in
the switch namespace, so two networks never share a name or a subnet.

Every process of a host runs through `Host.command`: `ip netns exec` puts it in the host's
network namespace and a mount namespace of its own, where the host's folder is mounted over
`/tmp`: the host's local disk. Processes of one host see the same `/tmp`; no host sees
another's. `destroy` kills the processes in the namespaces it made (`ip netns pids`) and
deletes those namespaces, and nothing else; it runs whatever happened before.

    python -m cluster.netns 3      # (from tests/) make 3 hosts, print them, wait for Enter
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SUBNET = "10.77.0"
PREFIX_LENGTH = 24
# The command line run inside a host: its folder mounted over /tmp, then the program.
_ENTER = 'mount --rbind "$0" /tmp && mkdir -p /tmp/home && cd /tmp && exec "$@"'


def _kept_in_tmp() -> list[Path]:
    """The project and its Python when they live under /tmp (a checkout there): the host's
    /tmp would hide them, so they are mounted into its disk first, at the same place."""
    project = Path(__file__).resolve().parents[2]
    places = {project, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    tmp = Path("/tmp").resolve()
    return sorted(place for place in places if place.is_relative_to(tmp))


def enter_script() -> str:
    """`_ENTER`, after binding what `_kept_in_tmp` names into the host's disk ("$0")."""
    tmp = Path("/tmp").resolve()
    binds = ""
    for place in _kept_in_tmp():
        inside = shlex.quote(str(place.relative_to(tmp)))
        binds += (
            f'mkdir -p "$0"/{inside} && mount --bind {shlex.quote(str(place))} "$0"/{inside} && '
        )
    return binds + _ENTER


class NamespaceError(RuntimeError):
    """Namespaces could not be made here (no iproute2, no privilege, no kernel support)."""


@dataclass(frozen=True)
class Host:
    """One host: its namespace, address on the bridge and local disk (a folder of the
    machine, seen inside the host as `/tmp`)."""

    name: str
    namespace: str
    address: str
    disk: Path

    def command(self, argv: list[str]) -> list[str]:
        """`argv` as run on this host, in `/tmp` (its disk), with HOME at `/tmp/home`."""
        script = enter_script()
        return ["ip", "netns", "exec", self.namespace, "sh", "-c", script, str(self.disk), *argv]

    def local(self, path: str) -> Path:
        """The machine's path of `path` on this host's disk (`/tmp/...` inside the host)."""
        inside = Path(path)
        if inside.parts[:2] != ("/", "tmp"):
            raise ValueError(f"{path} is not on the host's disk (/tmp)")
        return self.disk.joinpath(*inside.parts[2:])

    def pids(self) -> list[int]:
        """Processes running in this host's network namespace."""
        return namespace_pids(self.namespace)


@dataclass
class Network:
    """Hosts named `names` on one bridge, their disks under `root`.

    Example:
        >>> with Network(["a", "b"], Path("/tmp/net")) as network:  # doctest: +SKIP
        ...     subprocess.run(network.hosts["a"].command(["ping", "-c1", "10.77.0.2"]))
    """

    names: list[str]
    root: Path
    id: str = field(default_factory=lambda: f"mxp{os.getpid()}{secrets.token_hex(2)}")
    hosts: dict[str, Host] = field(default_factory=dict)
    made: list[str] = field(default_factory=list)  # namespaces made, in order

    @property
    def switch(self) -> str:
        return f"{self.id}-sw"

    def create(self) -> Network:
        """Make the switch and every host; on any failure, remove what was made and raise
        `NamespaceError` saying why in one line."""
        if shutil.which("ip") is None:
            raise NamespaceError("iproute2's `ip` is not installed (apt-get install iproute2)")
        try:
            self._add_namespace(self.switch)
            ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            ip("-n", self.switch, "link", "set", "br0", "up")
            for number, name in enumerate(self.names, 1):
                self._add_host(name, number)
        except BaseException:
            self.destroy()
            raise
        return self

    def _add_namespace(self, namespace: str) -> None:
        ip("netns", "add", namespace)
        self.made.append(namespace)
        ip("-n", namespace, "link", "set", "lo", "up")

    def _add_host(self, name: str, number: int) -> None:
        namespace = f"{self.id}-{number}"
        address = f"{SUBNET}.{number}"
        self._add_namespace(namespace)
        # Both ends are made in the switch namespace, one moved straight into the host's.
        ip("-n", self.switch, "link", "add", f"h{number}", "type", "veth",
           "peer", "name", "eth0", "netns", namespace)  # fmt: skip
        ip("-n", self.switch, "link", "set", f"h{number}", "master", "br0", "up")
        ip("-n", namespace, "addr", "add", f"{address}/{PREFIX_LENGTH}", "dev", "eth0")
        ip("-n", namespace, "link", "set", "eth0", "up")
        ip("-n", namespace, "route", "add", "default", "dev", "eth0")
        disk = self.root / name
        (disk / "home").mkdir(parents=True, exist_ok=True)
        self.hosts[name] = Host(name, namespace, address, disk)

    def kill(self, host: Host) -> None:
        """SIGKILL every process of `host`, as if it lost power, and wait until they are
        gone."""
        kill_all(host.namespace)

    def cut(self, host: Host) -> None:
        """Take `host`'s link to the bridge down: its processes live on, unreachable."""
        self._link(host, "down")

    def mend(self, host: Host) -> None:
        """Bring `host`'s link to the bridge up again."""
        self._link(host, "up")

    def _link(self, host: Host, state: str) -> None:
        number = self.names.index(host.name) + 1
        ip("-n", self.switch, "link", "set", f"h{number}", state)

    def destroy(self) -> None:
        """Kill the processes in the namespaces this network made, then delete them (the
        links and the bridge go with them)."""
        for namespace in reversed(self.made):
            kill_all(namespace)
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        self.made.clear()

    def __enter__(self) -> Network:
        return self.create()

    def __exit__(self, *_: object) -> None:
        self.destroy()


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode:
        problem = (done.stderr or done.stdout).strip().splitlines()
        raise NamespaceError(f"`ip {' '.join(args)}` failed: {problem[-1] if problem else '?'}")


def namespace_pids(namespace: str) -> list[int]:
    done = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return [int(pid) for pid in done.stdout.split()]


def kill_all(namespace: str) -> None:
    """SIGKILL the processes in `namespace` until none is left (a dying parent may start
    a child meanwhile); each is waited for until it is gone or a zombie (its parent, this
    process for those it started, reaps it)."""
    while pids := namespace_pids(namespace):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in pids:
            _wait_dead(pid)


def _wait_dead(pid: int) -> None:
    state = Path(f"/proc/{pid}/stat")
    while True:
        try:
            if state.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.01)


def main(count: int) -> None:
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"mixplane-net-{os.getpid()}"
    with Network([f"host{i}" for i in range(count)], root) as network:
        for host in network.hosts.values():
            print(host.name, host.namespace, host.address, host.disk, flush=True)
        input("press Enter to tear the hosts down\n")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
