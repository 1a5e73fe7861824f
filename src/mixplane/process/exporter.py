"""Prometheus metrics of a `process` run, opt-in (`mixplane process --metrics-port N`):
documents in, kept, excluded, quarantined and errored by stage and reason, bytes read,
tasks done.
Rates (documents/s, bytes/s) are Prometheus's `rate()` over these counters.

A pipeline with global stages runs in phases; each phase counts under its own `phase` label
(a document kept by the first phase is read again by the next).

Example:
    >>> exporter = ProcessExporter(port=9108)  # doctest: +SKIP
    >>> pipeline.run(on_done=exporter.task_done, on_phase=exporter.phase)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from mixplane.io.exporter import prometheus, start_exporter


class ProcessExporter:
    """Counters fed by each completed task's statistics."""

    def __init__(self, port: int, host: str = "127.0.0.1"):
        client = prometheus()
        self.registry = client.CollectorRegistry()
        self.current = "tasks"
        self.documents = client.Counter(
            "mixplane_process_documents",
            "Documents by outcome (in, kept, excluded, quarantined, errored)",
            ["phase", "outcome"],
            registry=self.registry,
        )
        self.reasons = client.Counter(
            "mixplane_process_removed",
            "Documents excluded, quarantined or errored, by stage and reason",
            ["phase", "outcome", "stage", "reason"],
            registry=self.registry,
        )
        self.bytes = client.Counter(
            "mixplane_process_input_bytes", "Bytes of input read", ["phase"], registry=self.registry
        )
        self.tasks = client.Counter(
            "mixplane_process_tasks", "Tasks completed", ["phase"], registry=self.registry
        )
        self.server = start_exporter(self.registry, host, port)

    def phase(self, name: str, tasks: int | None = None) -> None:
        self.current = name

    def task_done(self, result: dict[str, Any]) -> None:
        phase = self.current
        self.tasks.labels(phase).inc()
        if result.get("skipped"):
            return  # done by an earlier run: nothing was read now
        stats = result.get("stats") or {}
        for outcome, key in (("in", "documents_in"), *((k, k) for k in OUTCOMES)):
            self.documents.labels(phase, outcome).inc(stats.get(key, 0))
        for outcome in ("excluded", "quarantined", "errored"):
            for stage, reasons in (stats.get(f"{outcome}_by") or {}).items():
                for reason, n in reasons.items():
                    self.reasons.labels(phase, outcome, stage, reason).inc(n)
        self.bytes.labels(phase).inc(stats.get("bytes_in", 0))

    def close(self) -> None:
        self.server.shutdown()


OUTCOMES = ("kept", "excluded", "quarantined", "errored")
