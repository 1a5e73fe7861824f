"""Prometheus metrics of the service: its requests, its queries and plans, and the figures
of the training jobs that push to it (read at scrape time from the job store).

Example:
    >>> metrics = ServiceMetrics(service)  # doctest: +SKIP
    >>> metrics.exposition()[:40]  # doctest: +SKIP
    b'# HELP mixplane_http_requests_total ...'
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from mixplane.serve.service import Service

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# Label values come from fixed sets, never from what a request sent: any other method is
# "other", and a path no route matched is "unmatched".
METHODS = frozenset(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
JOB_FIGURES = {
    "step": "Last step a job reported",
    "sequences_per_second": "Sequences per second the job's loader delivered",
    "tokens_per_second": "Tokens per second the job's loader delivered",
    "wait_seconds": "Seconds the job's training loop waited for data since its previous sample",
}


class ServiceMetrics:
    """The service's own registry (no process-global state: several apps can coexist)."""

    def __init__(self, service: Service):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "mixplane_http_requests",
            "HTTP requests answered, by route and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "mixplane_http_request_seconds",
            "Time to answer a request, by route",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_ServiceCollector(service))

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count a request; `route` is a route's path template or "unmatched"."""
        method = method if method in METHODS else "other"
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _ServiceCollector(Collector):
    def __init__(self, service: Service):
        self.service = service

    def collect(self) -> Iterator:
        queries, plans = self.service.queries, self.service.plans
        answers = CounterMetricFamily(
            "mixplane_query_answers", "Catalog query answers, by source", labels=["source"]
        )
        answers.add_metric(["cache"], queries.hits)
        answers.add_metric(["catalog"], queries.misses)
        yield answers
        yield CounterMetricFamily("mixplane_plans_served", "Plans handed out", value=plans.served)
        pool = self.service.pool
        yield GaugeMetricFamily("mixplane_scans_running", "Scans running now", value=pool.running)
        timeouts = CounterMetricFamily(
            "mixplane_scan_timeouts",
            "Requests not answered in time, by where their time ran out",
            labels=["during"],
        )
        for during, value in pool.timeouts.items():
            timeouts.add_metric([during], value)
        yield timeouts
        last = self.service.jobs.last()
        for figure, text in JOB_FIGURES.items():
            family = GaugeMetricFamily(f"mixplane_job_{figure}", text, labels=["job"])
            for job, sample in last.items():
                if sample.get(figure) is not None:
                    family.add_metric([job], sample[figure])
            yield family
        weights = GaugeMetricFamily(
            "mixplane_job_weight", "A job's current mixture weight", labels=["job", "component"]
        )
        cache = GaugeMetricFamily(
            "mixplane_job_cache", "A job's loader cache counters", labels=["job", "counter"]
        )
        for job, sample in last.items():
            for component, weight in (sample.get("weights") or {}).items():
                weights.add_metric([job, component], weight)
            for counter, value in (sample.get("cache") or {}).items():
                if value is not None:
                    cache.add_metric([job, counter], value)
        yield weights
        yield cache
