"""The audit trail: which runs read which dataset versions, when, and how far.

A loader appends one small JSON file per event (start, progress, stop) to a folder beside
the catalog, `CATALOG.audit/`. Files are only ever added, one writer each, so ranks on many
hosts record at once without a lock and the trail works the same on object storage. A run
is the events sharing a run id; reading the trail groups them.

Layout: `CATALOG.audit/runs/RUN/TIME-EVENT-rRANK-ID.json`, where TIME sorts as text.

Example:
    >>> import tempfile, os
    >>> catalog = os.path.join(tempfile.mkdtemp(), "catalog.duckdb")
    >>> start = RunEvent.now("run-1", "start", rank=0, world_size=2, mixture="ab12",
    ...                      datasets=("web@3",))
    >>> _ = record(catalog, start)
    >>> _ = record(catalog, start.follow("stop", consumed=4096))
    >>> [(run.run, run.datasets, run.stopped, run.consumed) for run in runs(catalog)]
    [('run-1', ('web@3',), True, 4096)]
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import orjson

from mixplane.errors import MixplaneError
from mixplane.io.atomic import is_local, join_url, local_path, write_bytes
from mixplane.io.urls import url_filesystem

AUDIT_SUFFIX = ".audit"
EVENTS = ("start", "progress", "stop")
_RUNS = "runs"


def audit_folder(catalog: str | os.PathLike) -> str:
    """Where the trail of the catalog at `catalog` (a path or URL) is kept."""
    return os.fspath(catalog).rstrip("/") + AUDIT_SUFFIX


@dataclass(frozen=True)
class RunEvent:
    """One thing a loader did: started reading, reached a checkpoint, stopped.

    `consumed` is how far the rank's stream was read (sequences of the global order, as the
    loader's resume state counts them); None at start. `datasets` are exact `NAME@N` refs.
    """

    run: str
    event: str
    at: str  # ISO 8601, UTC, microseconds: sorts as text
    rank: int
    world_size: int
    mixture: str  # the mixture's fingerprint
    datasets: tuple[str, ...]
    host: str = ""
    pid: int = 0
    user: str = ""
    consumed: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.event not in EVENTS:
            raise MixplaneError(f"audit event {self.event!r}: expected one of {EVENTS}")
        if not self.run or "/" in self.run or self.run.startswith("."):
            raise MixplaneError(f"audit run id {self.run!r}: give a non-empty name without '/'")

    @classmethod
    def now(cls, run: str, event: str, **fields: Any) -> RunEvent:
        """An event stamped with the current time, host, process and user."""
        fields.setdefault("host", socket.gethostname())
        fields.setdefault("pid", os.getpid())
        fields.setdefault("user", _user())
        fields["datasets"] = tuple(fields.get("datasets", ()))
        return cls(run=run, event=event, at=_utc_now(), **fields)

    def follow(self, event: str, consumed: int | None = None) -> RunEvent:
        """The same run and rank's next event, stamped now."""
        return replace(self, event=event, at=_utc_now(), consumed=consumed)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "datasets": list(self.datasets)}

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "") -> RunEvent:
        try:
            return cls(**{**data, "datasets": tuple(data["datasets"])})
        except (TypeError, KeyError) as error:
            raise MixplaneError(f"{where}: not an audit event ({error})") from None


@dataclass(frozen=True)
class Run:
    """A run as the trail tells it: every event of one run id, over all its ranks."""

    run: str
    events: tuple[RunEvent, ...]  # by time

    @property
    def started_at(self) -> str:
        return self.events[0].at

    @property
    def last_at(self) -> str:
        return self.events[-1].at

    @property
    def datasets(self) -> tuple[str, ...]:
        """Every version any of its ranks read, sorted."""
        return tuple(sorted({ref for event in self.events for ref in event.datasets}))

    @property
    def mixtures(self) -> tuple[str, ...]:
        return tuple(sorted({event.mixture for event in self.events}))

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(sorted({event.host for event in self.events}))

    @property
    def world_size(self) -> int:
        """The world size of its latest event (a resumed run may have changed it)."""
        return self.events[-1].world_size

    @property
    def stopped(self) -> bool:
        """Every rank that started has stopped since (a crashed rank never says so)."""
        last: dict[tuple[str, int, int], str] = {}
        for event in self.events:
            last[(event.host, event.pid, event.rank)] = event.event
        return all(event == "stop" for event in last.values())

    @property
    def consumed(self) -> int | None:
        """How far the run read: the furthest position any rank reported (None if none)."""
        reported = [event.consumed for event in self.events if event.consumed is not None]
        return max(reported) if reported else None

    def summary(self) -> dict[str, Any]:
        """What `mixplane audit` shows of the run: its id, first and last event, hosts,
        users, world size, ranks, mixture fingerprints, versions read, how far it read and
        whether it stopped."""
        return {
            "run": self.run,
            "first": self.started_at,
            "last": self.last_at,
            "hosts": list(self.hosts),
            "users": sorted({event.user for event in self.events}),
            "world_size": self.world_size,
            "ranks": sorted({event.rank for event in self.events}),
            "mixtures": list(self.mixtures),
            "datasets": list(self.datasets),
            "consumed": self.consumed,
            "stopped": self.stopped,
        }


def record(
    catalog: str | os.PathLike, event: RunEvent, storage_options: dict[str, Any] | None = None
) -> str:
    """Add `event` to the trail of `catalog`; returns the file written."""
    name = f"{event.at.replace(':', '')}-{event.event}-r{event.rank}-{uuid.uuid4().hex[:12]}.json"
    url = join_url(audit_folder(catalog), _RUNS, event.run, name)
    write_bytes(url, orjson.dumps(event.to_json(), option=orjson.OPT_SORT_KEYS), storage_options)
    return url


def read_events(
    catalog: str | os.PathLike, storage_options: dict[str, Any] | None = None
) -> list[RunEvent]:
    """Every event of the trail, by time (an empty list when nothing was recorded)."""
    folder = join_url(audit_folder(catalog), _RUNS)
    if is_local(folder):
        root = local_path(folder)
        if not os.path.isdir(root):
            return []
        files = [
            os.path.join(base, name)
            for base, _, names in os.walk(root)
            for name in names
            if name.endswith(".json") and not name.startswith(".")
        ]
        events = [_parse(path, _read_local(path)) for path in files]
    else:
        fs, path = url_filesystem(folder, storage_options)
        files = [name for name in fs.find(path) if name.endswith(".json")]
        events = [_parse(name, fs.cat_file(name)) for name in files]
    return sorted(events, key=lambda event: (event.at, event.run, event.rank, event.event))


def run_names(
    catalog: str | os.PathLike, prefix: str = "", storage_options: dict[str, Any] | None = None
) -> list[str]:
    """The ids of the recorded runs starting with `prefix`, sorted (one listing, no event
    read: what a starting rank looks at to find the run it belongs to)."""
    folder = join_url(audit_folder(catalog), _RUNS)
    if is_local(folder):
        root = local_path(folder)
        names = os.listdir(root) if os.path.isdir(root) else []
    else:
        fs, path = url_filesystem(folder, storage_options)
        names = [name.rstrip("/").rsplit("/", 1)[-1] for name in _listing(fs, path)]
    return sorted(name for name in names if name.startswith(prefix) and not name.startswith("."))


def started_ranks(
    catalog: str | os.PathLike, run: str, storage_options: dict[str, Any] | None = None
) -> set[int]:
    """The ranks with a start event in run `run`, read from the files' names alone."""
    folder = join_url(audit_folder(catalog), _RUNS, run)
    if is_local(folder):
        root = local_path(folder)
        names = os.listdir(root) if os.path.isdir(root) else []
    else:
        fs, path = url_filesystem(folder, storage_options)
        names = [name.rsplit("/", 1)[-1] for name in _listing(fs, path)]
    found = set()
    for name in names:
        parts = name.split("-start-r", 1)
        if len(parts) == 2 and parts[1].split("-", 1)[0].isdigit():
            found.add(int(parts[1].split("-", 1)[0]))
    return found


def _listing(fs: Any, path: str) -> list[str]:
    try:
        return fs.ls(path, detail=False)
    except FileNotFoundError:
        return []


def runs(catalog: str | os.PathLike, storage_options: dict[str, Any] | None = None) -> list[Run]:
    """The runs of the trail, oldest first."""
    return group_runs(read_events(catalog, storage_options))


def group_runs(events: Iterable[RunEvent]) -> list[Run]:
    """Events grouped by run id, each run's by time; runs by their first event."""
    grouped: dict[str, list[RunEvent]] = {}
    for event in sorted(events, key=lambda event: event.at):
        grouped.setdefault(event.run, []).append(event)
    found = [Run(run, tuple(events)) for run, events in grouped.items()]
    return sorted(found, key=lambda run: (run.started_at, run.run))


def _parse(where: str, data: bytes) -> RunEvent:
    try:
        return RunEvent.from_json(orjson.loads(data), where)
    except orjson.JSONDecodeError as error:
        raise MixplaneError(f"{where}: not an audit event (not JSON: {error})") from None


def _read_local(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _user() -> str:
    try:
        import getpass

        return getpass.getuser()
    except (KeyError, OSError):
        return ""
