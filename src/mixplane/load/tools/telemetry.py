"""A training job's loader figures, pushed to a `mixplane serve` service and/or exposed to
Prometheus: sequences and tokens per second, the time the training loop waited for data,
the mixture weights in force, and the node cache's counters.

Wrap the loader; the loop itself does not change:

    reporter = JobReporter("run-7", dataset, url="http://127.0.0.1:8000")
    for batch in reporter.watch(loader):
        ...  # train
    reporter.close()

Pushes happen on a background thread at most every `every` seconds; a service that is down
costs the loop nothing (failures are counted in `reporter.failures`, the latest one kept).

Example:
    >>> reporter = JobReporter("smoke", url=None)
    >>> [len(b) for b in reporter.watch([[1, 2], [3, 4]])]
    [2, 2]
    >>> reporter.step
    2
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import numpy as np

from mixplane.io.exporter import prometheus, start_exporter
from mixplane.load.resolve.plan_service import TOKEN_ENV

T = TypeVar("T")
QUEUED = 64  # samples waiting to be pushed; older ones are dropped if the service is slow
CACHE_COUNTERS = {"hits": "hits", "downloads": "downloads", "bytes": "downloaded_bytes"}


class JobReporter:
    """Measures what `watch` hands to the loop and reports it every `every` seconds.

    `dataset` (a `MixtureDataset`) adds the weights in force and the cache's counters. `url`
    is the service to push to (None: push nowhere); `prometheus_port` starts a Prometheus
    endpoint in this process with the same figures (needs `prometheus_client`), on
    `prometheus_host` (loopback unless told otherwise).
    """

    def __init__(
        self,
        job: str,
        dataset: Any = None,
        *,
        url: str | None = None,
        token: str | None = None,
        every: float = 1.0,
        prometheus_port: int | None = None,
        prometheus_host: str = "127.0.0.1",
        start_step: int = 0,
    ):
        self.job = job
        self.dataset = dataset
        self.url = url.rstrip("/") if url else None
        self.token = token or os.environ.get(TOKEN_ENV)
        self.every = every
        self.step = start_step
        self.failures = 0
        self.last_error: str | None = None
        self._window = _Window(time.perf_counter())
        self._wait_total = 0.0
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUED)
        self._sender: threading.Thread | None = None
        if self.url:
            self._sender = threading.Thread(target=self._send, name="mixplane-report", daemon=True)
            self._sender.start()
        self._prometheus = (
            _PrometheusFigures(job, prometheus_host, prometheus_port) if prometheus_port else None
        )

    def watch(self, loader: Iterable[T]) -> Iterator[T]:
        """The loader's batches, timing how long each took to arrive."""
        iterator = iter(loader)
        while True:
            started = time.perf_counter()
            try:
                batch = next(iterator)
            except StopIteration:
                break
            self.record(batch, time.perf_counter() - started)
            yield batch
        self.report()

    def record(self, batch: Any, wait_seconds: float) -> None:
        """Count one batch the loop waited `wait_seconds` for (`watch` calls this)."""
        sequences, tokens = _size(batch)
        self.step += 1
        self._window.add(sequences, tokens, wait_seconds)
        self._wait_total += wait_seconds
        if self._window.age() >= self.every:
            self.report()

    def report(self) -> dict[str, Any]:
        """Send the figures of the window since the last report now; returns the sample."""
        sample = self._window.sample(self.step)
        self._window = _Window(time.perf_counter())
        weights = self._weights()
        if weights:
            sample["weights"] = weights
        cache = self._cache()
        if cache:
            sample["cache"] = cache
        if self._prometheus is not None:
            self._prometheus.update(sample, self._wait_total)
        if self._sender is not None:
            try:
                self._queue.put_nowait(sample)
            except queue.Full:
                self.failures += 1
                self.last_error = "the service is slower than the reports; a sample was dropped"
        return sample

    def close(self, timeout: float = 5.0) -> None:
        """Report the batches not yet reported, push what is queued (waiting at most
        `timeout` seconds) and stop; the Prometheus endpoint, if any, closes too."""
        if self._window.sequences:
            self.report()
        if self._sender is not None:
            self._queue.put(None)
            self._sender.join(timeout)
            self._sender = None
        if self._prometheus is not None:
            self._prometheus.server.shutdown()
            self._prometheus = None

    def _weights(self) -> dict[str, float] | None:
        """The weights of the blend segment holding the next position (the last segment's
        once the stream has ended)."""
        if self.dataset is None:
            return None
        plan, position = self.dataset.plan, self.dataset.consumed
        current = None
        for segment in plan.blend.segments:
            if segment.start <= position or current is None:
                current = segment
        if current is None:
            return None
        return {n: float(w) for n, w in zip(plan.names, current.weights, strict=True)}

    def _cache(self) -> dict[str, int] | None:
        if self.dataset is None:
            return None
        stats = self.dataset.source.stats()
        if not stats:
            return None
        figures = {name: int(stats.get(key, 0)) for name, key in CACHE_COUNTERS.items()}
        figures["retries"] = int((stats.get("retry") or {}).get("retries", 0))
        return figures

    def _send(self) -> None:
        while (sample := self._queue.get()) is not None:
            try:
                _post(f"{self.url}/api/jobs/{self.job}/metrics", sample, self.token)
            except Exception as error:  # noqa: BLE001 - reporting must never stop training
                self.failures += 1
                self.last_error = f"{type(error).__name__}: {error}"


class _Window:
    """What the loop received since the last report."""

    def __init__(self, started: float):
        self.started = started
        self.sequences = 0
        self.tokens = 0
        self.wait = 0.0

    def add(self, sequences: int, tokens: int, wait: float) -> None:
        self.sequences += sequences
        self.tokens += tokens
        self.wait += wait

    def age(self) -> float:
        return time.perf_counter() - self.started

    def sample(self, step: int) -> dict[str, Any]:
        seconds = max(self.age(), 1e-9)
        return {
            "step": step,
            "sequences_per_second": self.sequences / seconds,
            "tokens_per_second": self.tokens / seconds,
            "wait_seconds": self.wait,
        }


def _size(batch: Any) -> tuple[int, int]:
    """Sequences and tokens of a batch: the rows and elements of its `input_ids`."""
    ids = batch.get("input_ids") if isinstance(batch, dict) else None
    if ids is None:
        return 1, 0
    shape = tuple(ids.shape)
    return (shape[0] if shape else 1), int(np.prod(shape)) if shape else 1


def _post(url: str, body: dict[str, Any], token: str | None) -> None:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


class _PrometheusFigures:
    """The reporter's figures on a Prometheus endpoint of this process."""

    def __init__(self, job: str, host: str, port: int):
        client = prometheus()
        self.registry = client.CollectorRegistry()
        labels = {"labelnames": ["job"], "registry": self.registry}
        self.gauges = {
            name: client.Gauge(f"mixplane_loader_{name}", text, **labels)
            for name, text in {
                "step": "Batches the training loop received",
                "sequences_per_second": "Sequences per second delivered",
                "tokens_per_second": "Tokens per second delivered",
                "wait_seconds_total": "Seconds the training loop waited for data in all",
            }.items()
        }
        self.weight = client.Gauge(
            "mixplane_loader_weight",
            "Mixture weight in force",
            ["job", "component"],
            registry=self.registry,
        )
        self.cache = client.Gauge(
            "mixplane_loader_cache",
            "Node cache counters",
            ["job", "counter"],
            registry=self.registry,
        )
        self.job = job
        self.server = start_exporter(self.registry, host, port)

    def update(self, sample: dict[str, Any], wait_total: float) -> None:
        figures = sample | {"wait_seconds_total": wait_total}
        for name, gauge in self.gauges.items():
            gauge.labels(self.job).set(figures[name])
        for component, weight in (sample.get("weights") or {}).items():
            self.weight.labels(self.job, component).set(weight)
        for counter, value in (sample.get("cache") or {}).items():
            self.cache.labels(self.job, counter).set(value)
