"""The ASGI app of `mixplane serve`: the API, the dashboard's files and `/metrics`.

Example:
    >>> app = create_app(ServeSettings(catalog="catalog.duckdb"))  # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import time
from importlib.resources import files

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.routing import compile_path

from mixplane._version import __version__
from mixplane.errors import MixplaneError
from mixplane.serve import activity_routes, catalog_routes, trace_routes
from mixplane.serve.guard import Guard, allowed_hosts
from mixplane.serve.metrics import ServiceMetrics
from mixplane.serve.models import Problem
from mixplane.serve.plans import UnknownPlan
from mixplane.serve.pool import ServiceStopping
from mixplane.serve.queries import QueryTimeout
from mixplane.serve.scans import NotFound
from mixplane.serve.service import Service
from mixplane.serve.settings import ServeSettings

# An error's text in an answer: at most this many characters, and no word (a name, a
# value, a path) longer than MAX_ECHO, so a refusal never sends the request back.
MAX_DETAIL = 400
MAX_ECHO = 80
MAX_PROBLEMS = 20  # of a request that does not have the expected shape
ERRORS = {
    status: {"model": Problem, "description": text}
    for status, text in {
        400: "a refused predicate, mixture or parameter",
        401: "missing or wrong token",
        404: "no such dataset, shard, run, plan or job",
        408: "not answered within the time limit (--query-timeout)",
        413: "a request body over the size limit",
        503: "the service is stopping",
    }.items()
}
# The dashboard loads only its own files and talks only to this origin. blob: URLs are made
# by its own scripts of what they fetched from here with the token (thumbnails; audio clips
# when there is a token, which an <audio src> cannot send): no media from anywhere else.
POLICY = (
    b"default-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; "
    b"frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", POLICY),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


# Swagger UI's files that /docs loads, served from the `swagger-ui-py` package (Apache-2.0).
SWAGGER_UI_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "LICENSE")


def swagger_ui_folder() -> str:
    """The folder of Swagger UI's files in the installed `swagger-ui-py` package, found
    without importing it (its own code is for other web frameworks)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise MixplaneError(
            "the service's /docs needs swagger-ui-py: pip install 'mixplane[serve]'"
        )
    return os.path.join(next(iter(spec.submodule_search_locations)), "static")


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
        lifespan=_scan_processes,
    )
    app.state.service = Service(settings)
    metrics = ServiceMetrics(app.state.service)
    for router in (catalog_routes.router, activity_routes.router, trace_routes.router):
        app.include_router(router, responses=ERRORS)

    @app.get("/metrics", include_in_schema=False)
    def prometheus() -> Response:
        return Response(metrics.exposition(), media_type="text/plain; version=0.0.4")

    static = files("mixplane.serve") / "static"
    swagger = swagger_ui_folder()

    # Only the two files /docs loads, from the installed package (no CDN): nothing else
    # of its folder is reachable.
    @app.get("/static/swagger-ui/{name}", include_in_schema=False)
    def swagger_ui(name: str) -> FileResponse:
        if name not in SWAGGER_UI_FILES:
            raise HTTPException(404, "Not Found")
        return FileResponse(os.path.join(swagger, name))

    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    @app.get("/", include_in_schema=False)
    def dashboard() -> FileResponse:
        return FileResponse(str(static / "index.html"))

    @app.get("/docs", include_in_schema=False)
    def docs() -> FileResponse:
        return FileResponse(str(static / "docs.html"))

    # Observe wraps Guard: refused requests are counted and carry the security headers too.
    hosts = allowed_hosts(settings.host, settings.allowed_hosts)
    app.add_middleware(Guard, hosts=hosts, token=settings.token)
    app.add_middleware(Observe, metrics=metrics)
    app.add_exception_handler(405, _method_not_allowed)
    app.add_exception_handler(QueryTimeout, _answer(408))
    app.add_exception_handler(UnknownPlan, _answer(404))
    app.add_exception_handler(NotFound, _answer(404))
    app.add_exception_handler(ServiceStopping, _answer(503))
    app.add_exception_handler(MixplaneError, _answer(400))
    app.add_exception_handler(RequestValidationError, _invalid)
    return app


@contextlib.asynccontextmanager
async def _scan_processes(app: FastAPI):
    """The scan processes live as long as the app serves (it serves once they are up)."""
    pool = app.state.service.pool
    await pool.start()
    try:
        yield
    finally:
        pool.close()


class Observe:
    """Counts and times every request, stamps its arrival (`state.arrived`, where its
    deadline starts) and adds the security headers.

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
        scope.setdefault("state", {})["arrived"] = time.monotonic()
        status = 500

        async def send_with_headers(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        try:
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
        return JSONResponse({"detail": _detail(str(error))}, status_code=status)

    return handler


async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
    """422 naming each problem's place and kind, never the input (FastAPI's own answer
    repeats it: a megabyte body would come back whole)."""
    problems = [
        {
            "loc": [_short(part, 64) if isinstance(part, str) else part for part in item["loc"]],
            "msg": _short(str(item["msg"]), 200),
            "type": _short(str(item["type"]), 64),
        }
        for item in error.errors()[:MAX_PROBLEMS]
    ]
    return JSONResponse({"detail": problems}, status_code=422)


def _detail(text: str) -> str:
    """An error's text as an answer gives it: long words cut, then the whole.

    Example:
        >>> _detail("unknown column '" + "x" * 500 + "'")[:20], len(_detail("x" * 500))
        ("unknown column 'xxxx", 80)
    """
    words = re.split(r"(\s+)", text)
    return _short("".join(_short(word, MAX_ECHO) for word in words), MAX_DETAIL)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
