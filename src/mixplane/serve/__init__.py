"""The data service: `mixplane serve` (HTTP API, dashboard, Prometheus metrics).

Needs `pip install 'mixplane[serve]'`.

Example:
    >>> from mixplane.serve import ServeSettings, create_app  # doctest: +SKIP
    >>> app = create_app(ServeSettings(catalog="catalog.duckdb"))  # doctest: +SKIP
"""

from mixplane.serve.app import create_app
from mixplane.serve.settings import ServeSettings

__all__ = ["ServeSettings", "create_app"]
