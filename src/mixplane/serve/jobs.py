"""Metrics that training jobs push: kept in memory, bounded in jobs, samples and bytes.

A sample is kept as its JSON, so what it costs is known exactly: its length plus a fixed
overhead. Past `max_bytes` in all, the job that pushed least recently loses its oldest
samples first, and goes once it has none; so does the least recent job past `max_jobs`, and
a job's oldest sample past `max_samples`.

Example:
    >>> jobs = JobStore(max_jobs=2, max_samples=3)
    >>> jobs.push("run-1", {"step": 10, "weights": {"web": 0.7, "code": 0.3}})["step"]
    10
    >>> [job["job"] for job in jobs.list()], jobs.bytes < 200
    (['run-1'], True)
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from typing import Any

import orjson

from mixplane.errors import MixplaneError

MAX_BYTES = 256 << 20
# What Python spends on a kept sample besides its JSON: the bytes object's header (33) and
# its slot in the job's deque (8), rounded up.
SAMPLE_OVERHEAD = 48


class JobStore:
    """Samples per job in arrival order, within `max_jobs`, `max_samples` per job and
    `max_bytes` in all.

    `since` counts the samples a reader already has, so a dashboard asks only for new ones;
    it keeps counting across samples dropped from the front.
    """

    def __init__(self, max_jobs: int = 100, max_samples: int = 10_000, max_bytes: int = MAX_BYTES):
        self.max_jobs = max_jobs
        self.max_samples = max_samples
        self.max_bytes = max_bytes
        self.bytes = 0  # what the kept samples cost, overheads included
        self._jobs: OrderedDict[str, _Job] = OrderedDict()  # least recently pushed first
        self._lock = threading.Lock()

    def push(self, job: str, sample: dict[str, Any]) -> dict[str, Any]:
        """Record one sample (stamped with the arrival time); returns it."""
        stamped = {"time": time.time(), **sample}
        # Copied to a bytes object of its own size: orjson's keeps its whole output buffer
        # (about 130 kB for a 7 kB sample), which the count in bytes would not see.
        encoded = bytes(memoryview(orjson.dumps(stamped)))
        if len(encoded) + SAMPLE_OVERHEAD > self.max_bytes:
            raise MixplaneError(
                f"a sample of {len(encoded):,} bytes is over the {self.max_bytes:,} bytes "
                "the service keeps for all jobs"
            )
        with self._lock:
            entry = self._jobs.get(job)
            if entry is None:
                entry = self._jobs[job] = _Job()
            self._jobs.move_to_end(job)
            entry.samples.append(encoded)
            entry.total += 1
            self.bytes += len(encoded) + SAMPLE_OVERHEAD
            if len(entry.samples) > self.max_samples:
                self._drop_oldest(job)
            while len(self._jobs) > self.max_jobs:
                self._drop_job(next(iter(self._jobs)))
            while self.bytes > self.max_bytes:  # the sample just pushed fits: it stays
                self._drop_oldest(next(iter(self._jobs)))
        return stamped

    def list(self) -> list[dict[str, Any]]:
        """Every job with its sample count and last sample, the most recent job first."""
        with self._lock:
            last = [(name, entry.total, entry.samples[-1]) for name, entry in self._jobs.items()]
        return [
            {"job": name, "samples": total, "last": orjson.loads(sample)}
            for name, total, sample in reversed(last)
        ]

    def samples(self, job: str, since: int = 0) -> list[dict[str, Any]] | None:
        """The samples after the first `since` ones (None: no such job)."""
        with self._lock:
            entry = self._jobs.get(job)
            if entry is None:
                return None
            first_kept = entry.total - len(entry.samples)
            skip = max(0, since - first_kept)
            kept = list(entry.samples)[skip:]
        return [orjson.loads(sample) for sample in kept]

    def last(self) -> dict[str, dict[str, Any]]:
        """Each job's last sample."""
        with self._lock:
            last = {name: entry.samples[-1] for name, entry in self._jobs.items()}
        return {name: orjson.loads(sample) for name, sample in last.items()}

    def _drop_oldest(self, job: str) -> None:
        """The oldest sample of `job` goes; the job goes with its last one (lock held)."""
        entry = self._jobs[job]
        self.bytes -= len(entry.samples.popleft()) + SAMPLE_OVERHEAD
        if not entry.samples:
            del self._jobs[job]

    def _drop_job(self, job: str) -> None:
        entry = self._jobs.pop(job)
        self.bytes -= sum(len(sample) + SAMPLE_OVERHEAD for sample in entry.samples)


class _Job:
    def __init__(self) -> None:
        self.samples: deque[bytes] = deque()  # each sample's JSON, oldest first
        self.total = 0
