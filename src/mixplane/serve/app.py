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
from starlette.exceptions import HTTPException
from starlette.routing import compile_path

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
# The dashboard loads only its own files and talks only to this origin (blob: images are
# thumbnails it fetched with its token).
POLICY = b"default-src 'self'; img-src 'self' data: blob:; frame-ancestors 'none'"
SECURITY_HEADERS = [
    (b"content-security-policy", POLICY),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


def create_app(settings: ServeSettings) -> FastAPI:
    """The service's app over `settings.catalog` (the token is checked here as well)."""
    settings = settings.checked()
    app = FastAPI(
        title="mixplane",
        version=__version__,
        description="The catalog, its processing history and live training mixtures.",
        # /docs is served from the package below (no CDN, no inline script); no ReDoc.
        docs_url=None,
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
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

    @app.get("/docs", include_in_schema=False)
    def docs() -> FileResponse:
        return FileResponse(str(static / "docs.html"))

    app.add_middleware(Observe, metrics=metrics)
    app.add_exception_handler(405, _method_not_allowed)
    app.add_exception_handler(QueryTimeout, _answer(408))
    app.add_exception_handler(UnknownPlan, _answer(404))
    app.add_exception_handler(MixplaneError, _answer(400))
    return app


class Observe:
    """Counts and times every request, adds the security headers, refuses big bodies.

    A plain ASGI middleware: the answer's body passes through untouched, piece by piece,
    so streaming a plan's files costs nothing here.
    """

    def __init__(self, app, metrics: ServiceMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        length = dict(scope["headers"]).get(b"content-length", b"0")

        async def send_with_headers(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        try:
            if not length.isdigit() or int(length) > MAX_BODY:
                too_big = {"detail": f"request bodies are limited to {MAX_BODY:,} bytes"}
                await JSONResponse(too_big, 413)(scope, receive, send_with_headers)
            else:
                await self.app(scope, receive, send_with_headers)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.observe(scope["method"], route, status, time.perf_counter() - started)


async def _method_not_allowed(request: Request, error: HTTPException) -> JSONResponse:
    """405 allowing every method the spec gives the path: the router names only the methods
    of the first route matching it (`Allow: POST` where GET is allowed as well)."""
    allowed: set[str] = set()
    for template, operations in request.app.openapi()["paths"].items():
        if compile_path(template)[0].match(request.url.path):
            allowed |= {method.upper() for method in operations}
    allow = ", ".join(sorted(allowed)) or (error.headers or {}).get("Allow", "")
    return JSONResponse({"detail": "method not allowed"}, status_code=405, headers={"Allow": allow})


def _answer(status: int):
    async def handler(_: Request, error: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=status)

    return handler
