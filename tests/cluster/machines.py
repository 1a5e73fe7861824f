"""A cluster on one machine: an S3 server and a Ray cluster on hosts of a `netns.Network`.

Hosts: `store` runs moto's S3 server, the only thing the hosts share; `head` runs `ray
start --head`; `worker1` and `worker2` run `ray start --address`. Each host's processes
get a clean environment of their own (HOME and the caches on the host's disk), and Ray on
each host believes the host has one CPU and a small object store
(`RAY_OVERRIDE_RESOURCES`), so the README's commands run unchanged.

    python -m cluster.machines     # (from tests/) start it all, print the hosts, wait for Enter
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

from readme_blocks import readme_block

from cluster.netns import Host, Network

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
S3_PORT = 9000
RAY_PORT = 6379
BUCKET = "my-bucket"
HOSTS = ("store", "head", "worker1", "worker2")
RAY_WORKERS = ("worker1", "worker2")
# Per Ray node: one CPU (one task at a time) and an object store of 80 MB.
RAY_RESOURCES = {"CPU": 1, "object_store_memory": 80 * 1000 * 1000}
# A node whose raylet died is noticed within two seconds instead of about 30.
RAY_HEALTH = {"RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "3"}
WAIT_SECONDS = 120  # how long a service may take to come up before the test gives up


def host_env(host: Host, **extra: str) -> dict[str, str]:
    """The environment of a process on `host`: nothing inherited from the test's own
    process but the paths to Python and mixplane's sources."""
    return {
        "PATH": f"{BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/tmp/home",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tests'}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_OVERRIDE_RESOURCES": json.dumps(RAY_RESOURCES),
        # gloo finds its interface by the host name, which names the machine, not the host
        "GLOO_SOCKET_IFNAME": "eth0",
        **RAY_HEALTH,
        **KEEPALIVE,
        **extra,
    }


class CommandFailed(RuntimeError):
    pass


class Service:
    """A process on a host whose output (stdout and stderr) goes to a log on the test's
    side, line by line, so a test can wait for a line to appear."""

    def __init__(self, host: Host, argv: list[str], log: Path, env: dict[str, str]):
        self.host, self.argv, self.log = host, argv, log
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.process = subprocess.Popen(
            host.command(argv),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        with open(self.log, "a") as log:
            for line in self.process.stdout:
                log.write(line)
                log.flush()
                with self.changed:
                    self.lines.append(line)
                    self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def wait_for(self, pattern: str, start: int = 0, seconds: float = WAIT_SECONDS) -> re.Match:
        """The first match of `pattern` in a line from line `start` on, waiting for it;
        raises if the process ends or `seconds` pass without one."""
        expression = re.compile(pattern)
        deadline = time.monotonic() + seconds
        with self.changed:
            while True:
                for line in self.lines[start:]:
                    if found := expression.search(line):
                        return found
                start = len(self.lines)
                done = not self.reader.is_alive()
                left = deadline - time.monotonic()
                if done or left <= 0:
                    state = "ended" if done else f"ran {seconds:.0f} s"
                    raise CommandFailed(
                        f"{self.host.name}: {shlex.join(self.argv)} {state} without "
                        f"printing {pattern!r}; log: {self.log}"
                    )
                self.changed.wait(left)

    def wait(self) -> int:
        """Its exit code, once it ended and its output is read."""
        code = self.process.wait()
        self.reader.join()
        return code

    @property
    def output(self) -> str:
        with self.changed:
            return "".join(self.lines)


class Cluster:
    """Hosts, the S3 server and the Ray cluster, made under `root`; `stop` removes all."""

    def __init__(self, root: Path):
        self.root = root
        self.logs = root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.network = Network(list(HOSTS), root / "disks")
        self.services: list[Service] = []
        self.commands = 0

    @property
    def hosts(self) -> dict[str, Host]:
        return self.network.hosts

    @property
    def endpoint(self) -> str:
        return f"http://{self.hosts['store'].address}:{S3_PORT}"

    @property
    def ray_address(self) -> str:
        return f"{self.hosts['head'].address}:{RAY_PORT}"

    def env(self, host: str, **extra: str) -> dict[str, str]:
        """A process's environment on `host`: the store's endpoint as every host of a
        cluster on an S3-compatible store has it (AWS_ENDPOINT_URL, as boto reads it), and
        the head's address as the README's commands name it ($HEAD)."""
        names = {"HEAD": self.hosts["head"].address, "AWS_ENDPOINT_URL": self.endpoint}
        return host_env(self.hosts[host], **names, **extra)

    def run(self, host: str, argv: list[str], **extra: str) -> str:
        """Run `argv` on `host` to its end; its output, or `CommandFailed` with the output
        when it exits with an error."""
        return self.finish(self.launch(host, argv, **extra))

    def shell(self, host: str, script: str, **extra: str) -> str:
        """Run a shell script on `host` (as a user types it, `set -e`)."""
        return self.run(host, ["bash", "-ec", script], **extra)

    def start(self, host: str, argv: list[str], name: str, **extra: str) -> Service:
        """Start a long-running process on `host`; it is stopped with the cluster."""
        log = self.logs / f"{name}.log"
        service = Service(self.hosts[host], argv, log, self.env(host, **extra))
        self.services.append(service)
        return service

    def python(self, host: str, code: str, *args: str, **extra: str) -> str:
        return self.run(host, [sys.executable, "-c", code, *args], **extra)

    def up(self, ray: bool = True) -> Cluster:
        """Make the hosts, start the S3 server (with bucket BUCKET) and the Ray cluster;
        what can start side by side does."""
        self.network.create()
        store = self.hosts["store"]
        self.s3 = self.start(
            "store",
            [sys.executable, "-m", "moto.server", "-H", store.address, "-p", str(S3_PORT)],
            "s3",
        )
        head = self.launch("head", ["bash", "-ec", RAY_HEAD]) if ray else None
        self.s3.wait_for(r"Running on http://")
        self.python("head", MAKE_BUCKET, BUCKET)
        if head is not None:
            self.finish(head)
            self.start_ray_workers(RAY_WORKERS)
        return self

    def start_ray_head(self) -> None:
        """`ray start --head` on the head, as the README says."""
        self.shell("head", RAY_HEAD)
        self.wait_for_nodes(1)

    def start_ray_workers(self, workers: tuple[str, ...], alive: int = 3) -> None:
        """`ray start --address` on `workers`, as the README says, side by side; returns
        once the cluster has `alive` nodes alive."""
        for started in [self.launch(host, ["bash", "-ec", RAY_WORKER]) for host in workers]:
            self.finish(started)
        self.wait_for_nodes(alive)

    def launch(self, host: str, argv: list[str], **extra: str) -> Service:
        """Start a command on `host`, its output in the next numbered log."""
        self.commands += 1
        log = self.logs / f"{self.commands:03d}-{host}.log"
        return Service(self.hosts[host], argv, log, self.env(host, **extra))

    def finish(self, service: Service) -> str:
        code = service.wait()
        if code:
            tail = service.output[-3000:]
            raise CommandFailed(
                f"{service.host.name}: {shlex.join(service.argv)} exited with {code}:\n{tail}"
            )
        return service.output

    def ensure_ray(self) -> None:
        """Ray on every host again where a test killed it: what is left of such a host is
        killed (it was lost), then `ray start` runs on it. A lost head takes the workers'
        Ray with it: they belonged to its cluster."""
        if self.pid_of("head", "gcs_server") is None:
            self.restart_ray()
            return
        lost = tuple(host for host in RAY_WORKERS if self.pid_of(host, "raylet") is None)
        for host in lost:
            self.network.kill(self.hosts[host])
        if lost:
            self.start_ray_workers(lost)

    def restart_ray(self) -> None:
        """A new Ray cluster on the same hosts, as after a head's machine was lost: every
        Ray process is killed (the head's disk keeps what it held), then the README's
        `ray start` commands run again."""
        for host in ("head", *RAY_WORKERS):
            self.network.kill(self.hosts[host])
        self.start_ray_head()
        self.start_ray_workers(RAY_WORKERS)

    def pid_of(self, host: str, name: str) -> int | None:
        """A process of `host` whose command is `name` (as /proc/PID/comm has it)."""
        for pid in self.hosts[host].pids():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == name:
                    return pid
            except OSError:
                continue
        return None

    def wait_for_nodes(self, count: int) -> None:
        """Until the Ray cluster has `count` nodes alive."""
        self.python("head", WAIT_FOR_NODES, self.ray_address, str(count), str(WAIT_SECONDS))

    def s3_requests(self) -> list[tuple[str, str, str]]:
        """Every request the S3 server answered: (client address, method, path)."""
        pattern = re.compile(r'^(\S+) - - \[[^\]]*\] "(\w+) (\S+) HTTP')
        text = re.sub(r"\x1b\[[0-9;]*m", "", self.s3.output)  # the log's colours
        return [m.groups() for line in text.splitlines() if (m := pattern.match(line))]

    def stop(self) -> None:
        """Stop everything that was started and delete the namespaces that were made."""
        self.network.destroy()
        for service in self.services:
            service.wait()
        self.services.clear()

    def __enter__(self) -> Cluster:
        return self.up()

    def __exit__(self, *_: object) -> None:
        self.stop()


def readme_line(marker: str, block_marker: str = "ray start --head") -> str:
    """The line of the README's bash block holding `block_marker` that holds `marker`."""
    block = readme_block("bash", block_marker)
    return next(line for line in block.splitlines() if marker in line)


# The README's commands, as written (`$HEAD` is set on every host), and the settings it
# exports on every host.
RAY_HEAD = readme_line("--head")
RAY_WORKER = readme_line("--address")
KEEPALIVE = dict(
    setting.split("=", 1)
    for line in readme_block("bash", "ray start --head").splitlines()
    if line.startswith("export ")
    for setting in line.split()[1:]
)

MAKE_BUCKET = """
import sys, boto3
boto3.client("s3").create_bucket(Bucket=sys.argv[1])
"""

WAIT_FOR_NODES = """
import sys, time, ray
ray.init(address=sys.argv[1], log_to_driver=False)
deadline = time.monotonic() + float(sys.argv[3])
while sum(node["Alive"] for node in ray.nodes()) < int(sys.argv[2]):
    if time.monotonic() > deadline:
        sys.exit(f"the Ray cluster has not {sys.argv[2]} nodes alive: {ray.nodes()}")
    time.sleep(0.2)
"""


def main() -> None:
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"mixplane-cluster-{os.getpid()}"
    with Cluster(root) as cluster:
        for host in cluster.hosts.values():
            print(host.name, host.namespace, host.address, host.disk, flush=True)
        print(f"S3: {cluster.endpoint}  Ray: {cluster.ray_address}  logs: {cluster.logs}")
        input("press Enter to stop the cluster\n")


if __name__ == "__main__":
    main()
