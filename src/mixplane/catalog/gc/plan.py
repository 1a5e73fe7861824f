"""Which versions gc keeps and why, and which files it removes: a pure function of the
versions, their files, the retention policy and what is in use.

A version is kept when any of these holds, and every reason is listed:

- it is among the latest `keep_latest` versions of its dataset (at least 1: the latest
  version, which mixtures that do not pin one follow, is never collected);
- it is pinned: named `NAME@N` by a mixture given, or with `--keep`;
- the audit trail has a run that read it whose last event is within `keep_used_days`, or
  one still running: some rank that started has not recorded a stop and the run's last
  event is within `running_days` (a run that crashed never records a stop; once it has
  been silent that long it counts as ended at its last event);
- a process of this host has one of its files open or mapped (`liveness`).

The files of a version not kept are removed, except any file a kept version also
references (the same identity: resolved path or URL), which is listed as shared.

Example:
    >>> from mixplane.catalog.gc.files import VersionFile
    >>> def version(number):
    ...     url = f"/d/v{number}/shard-00000-000.bin"
    ...     return VersionOnDisk("web", number, (VersionFile(url, 100, url),))
    >>> plan = plan_gc([version(1), version(2), version(3)], Retention(keep_latest=2),
    ...                InUse(now="2026-11-28T00:00:00Z"))
    >>> [removal.ref for removal in plan.removals], [kept.ref for kept in plan.kept]
    (['web@1'], ['web@2', 'web@3'])
    >>> plan.kept[0].reasons
    ('one of the latest 2 of web',)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mixplane.catalog.audit import Run
from mixplane.catalog.gc.files import VersionFile
from mixplane.errors import ConfigError

DEFAULT_KEEP_LATEST = 2
DEFAULT_KEEP_USED_DAYS = 30.0
# A loader records an event at each checkpoint; a week without one is a run that died.
DEFAULT_RUNNING_DAYS = 7.0


@dataclass(frozen=True)
class Retention:
    """What gc keeps: the latest `keep_latest` of each dataset, versions read by a run in
    the last `keep_used_days` days or by a run still running (not stopped, an event within
    `running_days`), and `pins` (exact `NAME@N` -> where it was pinned)."""

    keep_latest: int = DEFAULT_KEEP_LATEST
    keep_used_days: float = DEFAULT_KEEP_USED_DAYS
    pins: Mapping[str, str] = field(default_factory=dict)
    running_days: float = DEFAULT_RUNNING_DAYS

    def __post_init__(self) -> None:
        if self.keep_latest < 1:
            raise ConfigError(
                f"--keep-latest {self.keep_latest}: keep at least 1 (the latest version, which "
                "mixtures that name no version read)"
            )
        if not self.keep_used_days >= 0:
            raise ConfigError(f"--keep-used-days {self.keep_used_days}: give 0 or more days")
        if not self.running_days > 0:
            raise ConfigError(f"--running-days {self.running_days}: give more than 0 days")


@dataclass(frozen=True)
class VersionOnDisk:
    """A registered version and the files of it that exist now; `collected_on`: the date gc
    recorded it as collected (then it is never kept; files left by a gc stopped halfway are
    removed)."""

    name: str
    version: int
    files: tuple[VersionFile, ...]
    collected_on: str | None = None
    uri: str = ""  # its shards' folder

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class InUse:
    """What is being used: the audit trail's runs, files open on this host by version
    (`live`: ref -> (pid, path) holders), and the time it is now (ISO 8601, UTC)."""

    now: str
    runs: Sequence[Run] = ()
    live: Mapping[str, Sequence[tuple[int, str]]] = field(default_factory=dict)
    hidden_processes: int = 0


@dataclass(frozen=True)
class KeptVersion:
    ref: str
    reasons: tuple[str, ...]
    files: int
    bytes: int


@dataclass(frozen=True)
class Removal:
    """A version whose files go: `files` removed, `shared` kept for a kept version."""

    name: str
    version: int
    files: tuple[VersionFile, ...]
    shared: tuple[VersionFile, ...]
    collected_on: str | None = None  # an earlier gc recorded it but stopped before the end
    uri: str = ""  # its shards' folder

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def bytes(self) -> int:
        return sum(file.size for file in self.files)


@dataclass(frozen=True)
class GcPlan:
    """What gc keeps (with reasons), removes (per version) and found already collected."""

    retention: Retention
    kept: tuple[KeptVersion, ...]
    removals: tuple[Removal, ...]
    collected: tuple[tuple[str, str], ...] = ()  # (ref, date) removed by an earlier gc
    hidden_processes: int = 0

    @property
    def bytes(self) -> int:
        return sum(removal.bytes for removal in self.removals)

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly description of the plan."""
        return {
            "retention": {
                "keep_latest": self.retention.keep_latest,
                "keep_used_days": self.retention.keep_used_days,
                "pins": dict(self.retention.pins),
            },
            "remove": [
                {
                    "dataset": removal.ref,
                    "files": [file.url for file in removal.files],
                    "bytes": removal.bytes,
                    "shared_with_kept": [file.url for file in removal.shared],
                }
                for removal in self.removals
            ],
            "keep": [
                {"dataset": k.ref, "why": list(k.reasons), "files": k.files, "bytes": k.bytes}
                for k in self.kept
            ],
            "collected_earlier": [{"dataset": ref, "on": on} for ref, on in self.collected],
            "bytes": self.bytes,
            "hidden_processes": self.hidden_processes,
        }


def plan_gc(versions: Sequence[VersionOnDisk], retention: Retention, in_use: InUse) -> GcPlan:
    """Decide, for every version, keep (and why) or remove (and which files)."""
    known = {version.ref for version in versions}
    unknown = sorted(set(retention.pins) - known)
    if unknown:
        raise ConfigError(
            f"{unknown[0]} (pinned by {retention.pins[unknown[0]]}) is not in the catalog; "
            f"its versions: {', '.join(sorted(known, key=_order)) or 'none'}"
        )
    reasons = _reasons(versions, retention, in_use)
    live = [v for v in versions if v.collected_on is None]
    kept = [v for v in live if reasons[v.ref]]
    kept_identities = {file.identity for version in kept for file in version.files}
    removals, taken = [], set(kept_identities)
    going = [v for v in versions if v.collected_on is not None or not reasons[v.ref]]
    for version in sorted(going, key=lambda v: _order(v.ref)):
        if version.collected_on is not None and not version.files:
            continue  # collected earlier, nothing left
        mine = []
        for file in version.files:
            if file.identity not in taken:  # each file once, whoever else lists it
                mine.append(file)
                taken.add(file.identity)
        shared = [file for file in version.files if file.identity in kept_identities]
        removals.append(
            Removal(
                version.name,
                version.version,
                tuple(mine),
                tuple(shared),
                version.collected_on,
                version.uri,
            )
        )
    return GcPlan(
        retention,
        tuple(
            KeptVersion(v.ref, tuple(reasons[v.ref]), len(v.files), sum(f.size for f in v.files))
            for v in sorted(kept, key=lambda v: _order(v.ref))
        ),
        tuple(removals),
        tuple(
            (v.ref, v.collected_on)
            for v in sorted(versions, key=lambda v: _order(v.ref))
            if v.collected_on is not None and not v.files
        ),
        in_use.hidden_processes,
    )


def _reasons(
    versions: Sequence[VersionOnDisk], retention: Retention, in_use: InUse
) -> dict[str, list[str]]:
    reasons: dict[str, list[str]] = {version.ref: [] for version in versions}
    numbers: dict[str, list[int]] = {}
    for version in versions:
        numbers.setdefault(version.name, []).append(version.version)
    for name, found in numbers.items():
        for number in sorted(found)[-retention.keep_latest :]:
            reasons[f"{name}@{number}"].append(
                f"one of the latest {retention.keep_latest} of {name}"
                if retention.keep_latest > 1
                else f"the latest of {name}"
            )
    for ref, where in retention.pins.items():
        reasons[ref].append(f"pinned by {where}")
    now = _parse(in_use.now)
    since = now - dt.timedelta(days=retention.keep_used_days)
    alive = now - dt.timedelta(days=retention.running_days)
    for run in in_use.runs:
        last = _parse(run.last_at)
        for ref in run.datasets:
            if ref not in reasons:
                continue  # a version of another catalog, or removed from this one
            if not run.stopped and last >= alive:
                reasons[ref].append(f"read by run {run.run}, running (last event {run.last_at})")
            elif last >= since:
                ended = "" if run.stopped else " (never stopped: silent since)"
                reasons[ref].append(f"read by run {run.run} on {run.last_at[:10]}{ended}")
    for ref, holders in in_use.live.items():
        if holders and ref in reasons:
            pid, path = holders[0]
            more = f" and {len(holders) - 1} more" if len(holders) > 1 else ""
            reasons[ref].append(f"open on this host: process {pid} has {path}{more}")
    return reasons


def _parse(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _order(ref: str) -> tuple[str, int]:
    name, _, number = ref.partition("@")
    return name, int(number)
