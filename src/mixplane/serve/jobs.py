"""Metrics that training jobs push: kept in memory, a bounded number of samples per job.

Example:
    >>> jobs = JobStore(max_jobs=2, max_samples=3)
    >>> jobs.push("run-1", {"step": 10, "weights": {"web": 0.7, "code": 0.3}})["step"]
    10
    >>> [job["job"] for job in jobs.list()]
    ['run-1']
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from typing import Any


class JobStore:
    """Samples per job in arrival order; the oldest job and samples go first past the limits.

    `since` counts the samples a reader already has, so a dashboard asks only for new ones;
    it keeps counting across samples dropped from the front.
    """

    def __init__(self, max_jobs: int = 100, max_samples: int = 10_000):
        self.max_jobs = max_jobs
        self.max_samples = max_samples
        self._jobs: OrderedDict[str, _Job] = OrderedDict()
        self._lock = threading.Lock()

    def push(self, job: str, sample: dict[str, Any]) -> dict[str, Any]:
        """Record one sample (stamped with the arrival time); returns it."""
        stamped = {"time": time.time(), **sample}
        with self._lock:
            entry = self._jobs.get(job)
            if entry is None:
                entry = self._jobs[job] = _Job(self.max_samples)
                while len(self._jobs) > self.max_jobs:
                    self._jobs.popitem(last=False)
            self._jobs.move_to_end(job)
            entry.samples.append(stamped)
            entry.total += 1
        return stamped

    def list(self) -> list[dict[str, Any]]:
        """Every job with its sample count and last sample, the most recent job first."""
        with self._lock:
            return [
                {"job": name, "samples": entry.total, "last": entry.samples[-1]}
                for name, entry in reversed(self._jobs.items())
            ]

    def samples(self, job: str, since: int = 0) -> list[dict[str, Any]] | None:
        """The samples after the first `since` ones (None: no such job)."""
        with self._lock:
            entry = self._jobs.get(job)
            if entry is None:
                return None
            first_kept = entry.total - len(entry.samples)
            skip = max(0, since - first_kept)
            return list(entry.samples)[skip:]

    def last(self) -> dict[str, dict[str, Any]]:
        """Each job's last sample."""
        with self._lock:
            return {name: entry.samples[-1] for name, entry in self._jobs.items()}


class _Job:
    def __init__(self, max_samples: int):
        self.samples: deque[dict[str, Any]] = deque(maxlen=max_samples)
        self.total = 0
