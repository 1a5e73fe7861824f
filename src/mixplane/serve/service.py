"""What the service holds while it runs: its settings, the catalog queries, resolved plans
and the metrics jobs push. One instance per app, reached by routes as `request.app.state`."""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field

from fastapi import HTTPException, Request

from mixplane.serve.jobs import JobStore
from mixplane.serve.plans import PlanStore
from mixplane.serve.queries import QueryRunner
from mixplane.serve.settings import ServeSettings

TOKEN_HEADER = "X-Mixplane-Token"


@dataclass
class Service:
    settings: ServeSettings
    queries: QueryRunner = field(init=False)
    plans: PlanStore = field(init=False)
    jobs: JobStore = field(init=False)

    def __post_init__(self) -> None:
        settings = self.settings
        self.queries = QueryRunner(settings.catalog, settings.query_timeout)
        self.plans = PlanStore(settings.catalog, settings.cache_dir)
        self.jobs = JobStore(settings.max_jobs, settings.max_samples)


async def service(request: Request) -> Service:
    """The running service (a route dependency; async, so it runs on the event loop)."""
    return request.app.state.service


async def require_token(request: Request) -> None:
    """Refuse a request without the service's token, when it has one (a route dependency)."""
    expected = request.app.state.service.settings.token
    if expected is None:
        return
    given = request.headers.get(TOKEN_HEADER, "")
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        given = credentials.strip()
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(
            401,
            "missing or wrong token: send `Authorization: Bearer TOKEN` "
            "(in the dashboard: open it as /#token=TOKEN)",
            headers={"WWW-Authenticate": "Bearer"},
        )
