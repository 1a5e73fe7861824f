"""`mixplane serve`: the catalog, its processing runs and live training jobs over HTTP."""

from __future__ import annotations

import typer

from mixplane.cli.common import status
from mixplane.errors import ConfigError

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
        10.0, "--query-timeout", min=0.001, help="Seconds a catalog query may run."
    ),
    cache_dir: str | None = typer.Option(
        None, "--cache-dir", help="Where resolved plans are kept (default $MIXPLANE_CACHE)."
    ),
) -> None:
    """Serve the catalog's HTTP API, the web dashboard and Prometheus metrics.

    Read-only: the catalog and the datasets' files are never changed. Binds to 127.0.0.1
    unless told otherwise; any other address needs a token.

    Example: mixplane serve --catalog catalog.duckdb   (then open http://127.0.0.1:8000/)
    """
    try:
        import uvicorn

        from mixplane.serve import ServeSettings, create_app
    except ImportError as error:
        raise ConfigError(
            f"serving needs the serve extra ({error.name} is missing): "
            "pip install 'mixplane[serve]'"
        ) from None
    settings = ServeSettings(
        catalog=catalog,
        host=host,
        port=port,
        token=token,
        query_timeout=query_timeout,
        cache_dir=cache_dir,
    )
    app = create_app(settings)  # checks the settings, taking the token from the environment
    shown = f"[{host}]" if ":" in host else host
    fragment = "/#token=…" if app.state.service.settings.token else "/"
    status.print(f"serving {catalog} on http://{shown}:{port}{fragment}  (Ctrl-C stops)")
    uvicorn.run(app, host=host, port=port, log_level="warning")
