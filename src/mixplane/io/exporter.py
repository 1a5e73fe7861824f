"""A Prometheus endpoint inside a long-running process (a `process` run, a training job).

Example:
    >>> from prometheus_client import CollectorRegistry  # doctest: +SKIP
    >>> server = start_exporter(CollectorRegistry(), "127.0.0.1", 9108)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from mixplane.errors import ConfigError


def start_exporter(registry: Any, host: str, port: int) -> Any:
    """Serve `registry` at http://HOST:PORT/metrics from a background thread; returns the
    server (`server.shutdown()` stops it)."""
    try:
        from prometheus_client import start_http_server
    except ImportError:
        raise ConfigError(
            "Prometheus metrics need prometheus_client: pip install 'mixplane[serve]'"
        ) from None
    try:
        server, _ = start_http_server(port, addr=host, registry=registry)
    except OSError as error:
        raise ConfigError(f"cannot serve metrics on {host}:{port}: {error}") from None
    return server
