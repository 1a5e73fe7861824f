"""A loader's entries in the catalog's audit trail: one rank's start, checkpoints and stop.

Each rank's loader, built in its training process, records a `start` event (run id, rank,
world size, host, pid, user, the mixture's fingerprint, the exact dataset versions it reads,
and the mixture itself, so the order it read can be rebuilt later); `state_dict()` adds a
`progress` event with how far the run read, and closing or finishing the stream, or the
process ending, a `stop` event. DataLoader workers never write (only the process that built
the loader does), nothing is written per batch, and a trail that cannot be written (a
read-only disk, storage down) costs a warning, once, never the training run.

The run id, shared by the ranks of a run, is the first of:
  1. the mixture's `run_id` option;
  2. the launcher's job id: `MIXPLANE_RUN_ID`, `TORCHELASTIC_RUN_ID` (torchrun), `SLURM_JOB_ID`,
     `PBS_JOBID`, `LSB_JOBID`; these are kept when a job is requeued or resumed;
  3. derived: `FINGERPRINT-wWORLD-TIME`, TIME the UTC time floored to ten minutes. A rank
     joins the newest run of the same mixture and world size from this window or the one
     before that has no start of its own rank yet, so ranks that start seconds (or minutes)
     apart share a run, even across a window's edge, and a second launch of the same mixture
     soon after gets its own (`...-1`). A resume later is a new run in the trail: give
     `run_id` (or use a launcher) to keep one name across resumes.

Example:
    >>> trail = RunTrail.begin(spec, None, rank=0, world_size=8, kind="packed",  # doctest: +SKIP
    ...                        fingerprint=resolved.fingerprint, datasets=["web@3"])
    >>> trail.progress(4096, {}); trail.stop(8192, {})  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import os
import re
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from mixplane.mix.spec import MixtureSpec

LAUNCHER_IDS = (
    ("MIXPLANE_RUN_ID", ""),
    ("TORCHELASTIC_RUN_ID", "torchrun-"),
    ("SLURM_JOB_ID", "slurm-"),
    ("PBS_JOBID", "pbs-"),
    ("LSB_JOBID", "lsf-"),
)
WINDOW_SECONDS = 600  # ranks of one launch start within this of each other
RECENT_RUNS = 8  # of those, the newest a starting rank may join
# What the trail keeps of the mixture: never credentials or this machine's paths.
NOT_RECORDED = {"storage_options", "cache_dir", "cache_limit", "cache", "audit", "run_id"}


AT_EXIT_SECONDS = 5.0  # the most a process's exit waits for its trails' stop events


class AuditWarning(UserWarning):
    """The audit trail could not be written; training goes on."""


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(catalog: str, error: BaseException | str) -> None:
    """Warn that the trail of `catalog` was not written, the first time only."""
    with _warned_lock:
        if catalog in _warned:
            return
        _warned.add(catalog)
    warnings.warn(
        f"the audit trail of {catalog} could not be written ({error}); training goes on "
        "without it (set audit: false in the mixture to stop recording)",
        AuditWarning,
        stacklevel=3,
    )


def trail_catalog(spec: MixtureSpec, catalog: Any = None) -> str | None:
    """The catalog whose trail a loader records into: a `Catalog` given to it, else the
    mixture's own (None: neither)."""
    path = getattr(catalog, "path", None) if catalog is not None else None
    where = str(path) if path else spec.catalog
    if where and "://" not in where:
        # Later events (at exit, say) must not follow a change of working directory.
        where = os.path.abspath(where)
    return where


def recorded_mixture(spec: MixtureSpec) -> str:
    """The mixture as the trail keeps it, as JSON text (its components' order decides the
    stream, and the trail's files sort their keys): everything that decides the stream (the
    start event's `datasets` pin its versions), no credentials or this machine's paths."""
    return orjson.dumps(spec.model_dump(mode="json", exclude=NOT_RECORDED)).decode()


def launcher_run_id(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """`(run id, where it came from)` from the launcher's environment, or None."""
    environ = os.environ if environ is None else environ
    for name, prefix in LAUNCHER_IDS:
        value = environ.get(name, "").strip()
        if value and value.lower() != "none":  # torchrun's rendezvous id defaults to "none"
            return safe_id(prefix + value), f"env:{name}"
    return None


def safe_id(text: str) -> str:
    """`text` as a run id the trail takes (one folder name).

    Example:
        >>> safe_id("slurm-1234_5/a")
        'slurm-1234_5_a'
    """
    cleaned = re.sub(r"[^A-Za-z0-9._:=+-]", "_", text).lstrip(".") or "run"
    return cleaned[:128]


def derived_run_id(
    catalog: str,
    fingerprint: str,
    world_size: int,
    rank: int,
    now: dt.datetime,
    storage_options: dict[str, Any] | None = None,
) -> str:
    """The run a rank without a given id joins or opens (see the module's docstring)."""
    from mixplane.catalog.audit import run_names, started_ranks

    stem = f"{fingerprint[:12]}-w{world_size}-"
    epoch = int(now.timestamp()) // WINDOW_SECONDS * WINDOW_SECONDS
    windows = [_window_name(epoch - WINDOW_SECONDS), _window_name(epoch)]
    existing = run_names(catalog, stem, storage_options)
    # Newest first: a launch's ranks join the run its first rank opened moments ago; older
    # runs of the windows are earlier launches (a few looked at, however many there are).
    candidates = [
        (window, _suffix(name, stem + window), name)
        for window in windows
        for name in existing
        if _suffix(name, stem + window) is not None
    ]
    candidates.sort(reverse=True)
    for _, _, name in candidates[:RECENT_RUNS]:
        if rank not in started_ranks(catalog, name, storage_options):
            return name
    base = stem + windows[-1]
    taken = [suffix for window, suffix, _ in candidates if window == windows[-1]]
    return base if not taken else f"{base}-{max(taken) + 1}"


def _suffix(name: str, base: str) -> int | None:
    """0 for `base`, N for `base-N`, None for another run's name."""
    if name == base:
        return 0
    tail = name[len(base) + 1 :]
    return int(tail) if name.startswith(base + "-") and tail.isdigit() else None


def _window_name(epoch: int) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y%m%dT%H%M")


def with_options(spec: MixtureSpec, audit: bool | None, run_id: str | None) -> MixtureSpec:
    """`spec` with a loader's own `audit` and `run_id` arguments, which win over it."""
    update = {
        name: value for name, value in (("audit", audit), ("run_id", run_id)) if value is not None
    }
    if not update:
        return spec
    # Only the fields the spec set: a media mixture refuses the text fields' defaults.
    fields = spec.model_dump(mode="json", exclude_unset=True)
    return MixtureSpec.parse({**fields, **update}, where="loader options")


class RunTrail:
    """One rank's events in the trail of `catalog`, written only by the process that began
    it; every failure to write is a warning (once per trail), never an error."""

    def __init__(self, catalog: str, start: Any, storage_options: dict[str, Any] | None):
        self.catalog = catalog
        self.start = start  # the RunEvent that opened it
        self.storage_options = storage_options or {}
        self.pid = os.getpid()
        self.open = True  # no stop recorded since the last start or progress
        self.consumed: int | None = None
        self._position: Callable[[], Any] | None = None
        _still_open(self, True)

    def __getstate__(self) -> dict[str, Any]:
        # A copy in another process never writes (its pid differs); a weak method does not
        # pickle.
        return self.__dict__ | {"_position": None}

    @classmethod
    def begin(
        cls,
        spec: MixtureSpec,
        catalog: Any,
        *,
        rank: int,
        world_size: int,
        fingerprint: str,
        datasets: Sequence[str],
        kind: str,
        position: Callable[[], Any] | None = None,
    ) -> RunTrail | None:
        """Record this rank's start, unless the mixture says `audit: false`.

        `position` (a bound method, held weakly) gives `(consumed, details)` when the
        process ends without closing the loader.
        """
        if not spec.audit:
            return None
        where = trail_catalog(spec, catalog)
        if not where:
            warn_once("a mixture without a catalog", "it names none to keep the trail beside")
            return None
        options = getattr(catalog, "storage_options", None) or spec.storage_options
        try:
            from mixplane.catalog.audit import RunEvent

            run, origin = _run_id(spec, where, fingerprint, world_size, rank, options)
            details = {
                "kind": kind,
                "run_id_from": origin,
                "mixture": recorded_mixture(spec),
            }
            start = RunEvent.now(
                run,
                "start",
                rank=rank,
                world_size=world_size,
                mixture=fingerprint,
                datasets=tuple(datasets),
                details=details,
            )
        except Exception as error:  # a training run never fails for its trail
            warn_once(where, error)
            return None
        trail = cls(where, start, options)
        if position is not None:
            trail._position = weakref.WeakMethod(position)  # type: ignore[arg-type]
        trail._write(start)
        return trail

    def progress(self, consumed: int | None, details: dict[str, Any] | None = None) -> None:
        """A checkpoint: the rank's loader state says it read up to `consumed`."""
        self.consumed = consumed
        self.open = True
        _still_open(self, True)
        self._record("progress", consumed, details)

    def stop(self, consumed: int | None, details: dict[str, Any] | None = None) -> None:
        """The rank stopped reading (recorded once after each start or checkpoint)."""
        if not self.open:
            return
        self.consumed = consumed
        self.open = False
        _still_open(self, False)
        self._record("stop", consumed, details)

    def _record(self, event: str, consumed: int | None, details: dict[str, Any] | None) -> None:
        if os.getpid() != self.pid:  # a DataLoader worker's copy: its parent records
            return
        self._write(replace(self.start.follow(event, consumed), details=details or {}))

    def _write(self, event: Any) -> None:
        # A trail that failed once is not tried again by this process: with storage down,
        # every checkpoint (and the exit) would otherwise wait out the retries.
        if os.getpid() != self.pid or self.catalog in _warned:
            return
        try:
            from mixplane.catalog.audit import record

            record(self.catalog, event, self.storage_options)
        except Exception as error:  # read-only disk, storage down: warn, train on
            warn_once(self.catalog, error)

    def _at_exit(self) -> None:
        """The process ends with the loader still open: it stopped where it was."""
        if not self.open or os.getpid() != self.pid:
            return
        parent = os.path.dirname(self.catalog)
        if "://" not in self.catalog and parent and not os.path.isdir(parent):
            return  # the catalog's folder is gone (a temporary one): nothing to add to
        consumed, details = self.consumed, None
        method = self._position() if self._position is not None else None
        if method is not None:
            # A loader whose state is past reading keeps the last known position.
            with contextlib.suppress(Exception):
                consumed, details = method()
        self.stop(consumed, details)


# The trails of this process with no stop recorded since their last start or checkpoint:
# at exit each records that it stopped where it was.
_open: set[RunTrail] = set()
_open_lock = threading.Lock()


def _still_open(trail: RunTrail, is_open: bool) -> None:
    with _open_lock:
        if is_open:
            _open.add(trail)
        else:
            _open.discard(trail)


def _stop_open_trails() -> None:
    """At exit: every open trail records its stop, the trails of each catalog in a thread
    of their own, all within `AT_EXIT_SECONDS` (object storage that is down would make each
    write wait out its retries, and the exit with it)."""
    with _open_lock:
        trails = [trail for trail in _open if trail.pid == os.getpid()]
    by_catalog: dict[str, list[RunTrail]] = {}
    for trail in trails:
        by_catalog.setdefault(trail.catalog, []).append(trail)

    def stop_all(group: list[RunTrail]) -> None:
        for trail in group:
            trail._at_exit()

    threads = []
    for group in by_catalog.values():
        thread = threading.Thread(target=stop_all, args=(group,), daemon=True)
        try:
            thread.start()
            threads.append(thread)
        except RuntimeError:  # no new threads this late: write them here
            stop_all(group)
    deadline = time.monotonic() + AT_EXIT_SECONDS
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


# Run before thread pools shut down at exit (they are asked in reverse order): object
# storage clients resolve hosts in a pool, so after that a write to a remote trail fails.
import concurrent.futures.thread  # noqa: E402, F401  (registered first: shut down after ours)

getattr(threading, "_register_atexit", atexit.register)(_stop_open_trails)


def weight_details(weight_changes: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """What a progress or stop event keeps beside `consumed`: the run's weight changes
    (steps and weights only; none for most runs), which an adaptive run's order needs to be
    rebuilt."""
    return {
        "weight_changes": [
            {"step": int(c["step"]), "weights": dict(c["weights"])} for c in weight_changes or ()
        ]
    }


def _run_id(
    spec: MixtureSpec,
    catalog: str,
    fingerprint: str,
    world_size: int,
    rank: int,
    storage_options: dict[str, Any] | None,
) -> tuple[str, str]:
    if spec.run_id:
        return spec.run_id, "option"
    found = launcher_run_id()
    if found is not None:
        return found
    now = dt.datetime.now(dt.timezone.utc)
    return derived_run_id(catalog, fingerprint, world_size, rank, now, storage_options), "derived"


class RecordsRun:
    """What a loader adds to take part in the trail: `begin_trail` once built, then
    `checkpointed` from `state_dict()` and `stopped` from `close()`; the stream's end as the
    training loop receives it calls `finished`. A loader says how far it read with
    `_trail_position` and names its mixture by `fingerprint`."""

    trail: RunTrail | None = None
    fingerprint: str

    def _trail_position(self) -> tuple[int | None, dict[str, Any]]:
        """How far this loader read, in its resume state's units, and what else a
        checkpoint records (each loader says)."""
        raise TypeError(f"{type(self).__name__} must implement _trail_position()")

    def begin_trail(
        self,
        spec: MixtureSpec,
        catalog: Any,
        rank: int,
        world_size: int,
        datasets: Sequence[str],
        kind: str,
    ) -> None:
        """Record this rank's start (nothing with `audit: false`)."""
        self.trail = RunTrail.begin(
            spec,
            catalog,
            rank=rank,
            world_size=world_size,
            fingerprint=self.fingerprint,
            datasets=datasets,
            kind=kind,
            position=self._trail_position,
        )

    def checkpointed(self) -> None:
        """A state was saved: the trail notes how far the run read."""
        if self.trail is not None:
            self.trail.progress(*self._trail_position())

    def stopped(self) -> None:
        """The loader was closed: the trail says the rank stopped."""
        if self.trail is not None:
            self.trail.stop(*self._trail_position())

    def finished(self) -> None:
        """The training process received the whole stream: the rank stopped."""
        self.stopped()
