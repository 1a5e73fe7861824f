"""What the service holds while it runs: its settings, its scan processes and the answers
they gave, resolved plans and the metrics jobs push. One instance per app, reached by routes
as `request.app.state.service`."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request

from mixplane.serve.jobs import JobStore
from mixplane.serve.plans import PlanStore
from mixplane.serve.pool import ScanPool
from mixplane.serve.queries import QueryRunner
from mixplane.serve.scans import ScopeSpec
from mixplane.serve.settings import ServeSettings


@dataclass
class Service:
    settings: ServeSettings
    pool: ScanPool = field(init=False)
    queries: QueryRunner = field(init=False)
    plans: PlanStore = field(init=False)
    jobs: JobStore = field(init=False)

    def __post_init__(self) -> None:
        settings = self.settings
        scope = ScopeSpec(settings.catalog, settings.cache_dir, tuple(settings.allow_policies))
        self.pool = ScanPool(scope)
        self.queries = QueryRunner(settings.catalog, settings.query_timeout, self.pool)
        self.plans = PlanStore()
        self.jobs = JobStore(settings.max_jobs, settings.max_samples, settings.max_metrics_bytes)


async def service(request: Request) -> Service:
    """The running service (a route dependency; async, so it runs on the event loop)."""
    return request.app.state.service


async def deadline(request: Request) -> float:
    """When the request must be answered (`time.monotonic()`): its arrival, stamped before
    its body was read, plus the service's time limit (a route dependency)."""
    return request.state.arrived + request.app.state.service.settings.query_timeout
