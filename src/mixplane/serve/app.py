"""The ASGI app of `mixplane serve`: the API, the dashboard's files and `/metrics`.

Example:
    >>> app = create_app(ServeSettings(catalog="catalog.duckdb"))  # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
"""

from __future__ import annotations

import time
from importlib.resources import files

from fastapi import Depends, FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from mixplane._version import __version__
from mixplane.errors import MixplaneError
from mixplane.serve import activity_routes, catalog_routes
from mixplane.serve.metrics import ServiceMetrics
from mixplane.serve.models import Problem
from mixplane.serve.plans import UnknownPlan
from mixplane.serve.queries import QueryTimeout
from mixplane.serve.service import Service, require_token
from mixplane.serve.settings import ServeSettings

MAX_BODY = 1 << 20  # bytes of a request body (a mixture, a metric sample)
ERRORS = {
    status: {"model": Problem, "description": text}
    for status, text in {
        400: "a refused predicate, mixture or parameter",
        401: "missing or wrong token",
        404: "no such dataset, shard, run, plan or job",
        408: "a query ran past the time limit",
        413: "a request body over the size limit",
    }.items()
}
# The dashboard loads only its own files and talks only to this origin.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def create_app(settings: ServeSettings) -> FastAPI:
    """The service's app over `settings.catalog` (the token is checked here as well)."""
    settings = settings.checked()
    app = FastAPI(
        title="mixplane",
        version=__version__,
        description="The catalog, its processing history and live training mixtures.",
    )
    app.state.service = Service(settings)
    metrics = ServiceMetrics(app.state.service)
    guarded = [Depends(require_token)]
    for router in (catalog_routes.router, activity_routes.router):
        app.include_router(router, dependencies=guarded, responses=ERRORS)

    @app.get("/metrics", dependencies=guarded, include_in_schema=False)
    def prometheus() -> Response:
        return Response(metrics.exposition(), media_type="text/plain; version=0.0.4")

    static = files("mixplane.serve") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    @app.get("/", include_in_schema=False)
    def dashboard() -> FileResponse:
        return FileResponse(str(static / "index.html"))

    @app.middleware("http")
    async def observe(request: Request, call_next):
        started = time.perf_counter()
        length = request.headers.get("content-length", "0")
        if not length.isdigit() or int(length) > MAX_BODY:
            response: Response = JSONResponse(
                {"detail": f"request bodies are limited to {MAX_BODY:,} bytes"}, status_code=413
            )
        else:
            response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        metrics.observe(request.method, path, response.status_code, time.perf_counter() - started)
        response.headers.update(SECURITY_HEADERS)
        return response

    app.add_exception_handler(QueryTimeout, _answer(408))
    app.add_exception_handler(UnknownPlan, _answer(404))
    app.add_exception_handler(MixplaneError, _answer(400))
    return app


def _answer(status: int):
    async def handler(_: Request, error: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=status)

    return handler
