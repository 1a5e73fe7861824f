"""A Prometheus endpoint inside a long-running process (a `process` run, a training job).

Example:
    >>> registry = prometheus().CollectorRegistry()  # doctest: +SKIP
    >>> server = start_exporter(registry, "127.0.0.1", 9108)  # doctest: +SKIP
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from mixplane.errors import ConfigError


def prometheus() -> ModuleType:
    """The `prometheus_client` module, or a `ConfigError` saying how to install it."""
    try:
        import prometheus_client
    except ImportError:
        raise ConfigError(
            "Prometheus metrics need prometheus_client: pip install 'mixplane[serve]'"
        ) from None
    return prometheus_client


def start_exporter(registry: Any, host: str, port: int) -> Any:
    """Serve `registry` at http://HOST:PORT/metrics from a background thread; returns the
    server (`server.shutdown()` stops it)."""
    try:
        server, _ = prometheus().start_http_server(port, addr=host, registry=registry)
    except OSError as error:
        raise ConfigError(f"cannot serve metrics on {host}:{port}: {error}") from None
    return server
