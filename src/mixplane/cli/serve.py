"""`mixplane serve`: the catalog, its processing runs and live training jobs over HTTP."""

from __future__ import annotations

import typer

from mixplane.cli.common import status
from mixplane.configs import validate_config
from mixplane.errors import ConfigError
from mixplane.io.sizes import parse_size

DEFAULT_CATALOG = "catalog.duckdb"


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(
    catalog: str = typer.Option(DEFAULT_CATALOG, "--catalog", "-c", help="Catalog file (DuckDB)."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind; any but loopback needs --token."
    ),
    port: int = typer.Option(8000, "--port", "-p", min=0, max=65535),
    token: str | None = typer.Option(
        None,
        "--token",
        help="Token every API request must carry (default $MIXPLANE_SERVE_TOKEN).",
        show_default=False,
    ),
    query_timeout: float = typer.Option(
        10.0,
        "--query-timeout",
        min=0.001,
        help="Seconds from a request's arrival to its answer for anything that scans "
        "(queries, documents, lineage, runs, previews, plans), waiting included; then 408.",
    ),
    cache_dir: str | None = typer.Option(
        None, "--cache-dir", help="Where resolved plans are kept (default $MIXPLANE_CACHE)."
    ),
    allowed_host: list[str] = typer.Option(
        [],
        "--allowed-host",
        help="A host name clients use for this service besides the address it is bound to "
        "(repeatable); requests naming any other Host are refused.",
    ),
    allow_policy: list[str] = typer.Option(
        [],
        "--allow-policy",
        help="A policy import path (module:Class) posted mixtures may name besides the "
        "built-in ones (repeatable); no other is imported.",
    ),
    max_metrics_bytes: str = typer.Option(
        "256MiB",
        "--max-metrics-bytes",
        help="Memory for the metrics training jobs push (the least recently pushed job's "
        "oldest samples go first).",
    ),
) -> None:
    """Serve the catalog's HTTP API, the web dashboard and Prometheus metrics.

    Read-only: the catalog and the datasets' files are never changed. Binds to 127.0.0.1
    unless told otherwise; any other address needs a token.

    Example: mixplane serve --catalog catalog.duckdb   (then open http://127.0.0.1:8000/)
    """
    try:
        from mixplane.serve import ServeSettings, create_app
        from mixplane.serve.server import run
    except ImportError as error:
        raise ConfigError(
            f"serving needs the serve extra ({error.name} is missing): "
            "pip install 'mixplane[serve]'"
        ) from None
    try:
        metrics_bytes = parse_size(max_metrics_bytes)
    except ValueError as error:
        raise ConfigError(f"--max-metrics-bytes: {error}") from None
    settings = validate_config(
        ServeSettings,
        {
            "catalog": catalog,
            "host": host,
            "port": port,
            "token": token,
            "query_timeout": query_timeout,
            "cache_dir": cache_dir,
            "allowed_hosts": allowed_host,
            "allow_policies": allow_policy,
            "max_metrics_bytes": metrics_bytes,
        },
        "mixplane serve",
    )
    app = create_app(settings)  # checks the settings, taking the token from the environment
    shown = f"[{host}]" if ":" in host else host
    fragment = "/#token=…" if app.state.service.settings.token else "/"
    status.print(f"serving {catalog} on http://{shown}:{port}{fragment}  (Ctrl-C stops)")
    run(app, host, port)
