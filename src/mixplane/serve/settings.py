"""How the service runs: one model for `mixplane serve`'s options and `create_app`.

Example:
    >>> settings = ServeSettings(catalog="catalog.duckdb")
    >>> settings.host, settings.port, settings.needs_token
    ('127.0.0.1', 8000, False)
"""

from __future__ import annotations

import ipaddress
import os

from pydantic import BaseModel, ConfigDict, Field

from mixplane.errors import ConfigError
from mixplane.load.resolve.plan_service import TOKEN_ENV


class ServeSettings(BaseModel):
    """Options of the data service."""

    model_config = ConfigDict(extra="forbid")

    catalog: str = Field("catalog.duckdb", description="catalog file (DuckDB) to show")
    host: str = Field("127.0.0.1", description="address to bind; off loopback needs a token")
    port: int = Field(8000, ge=0, le=65535)
    token: str | None = Field(
        None, description=f"required on every API request (default ${TOKEN_ENV})"
    )
    query_timeout: float = Field(
        10.0,
        gt=0,
        description="seconds from a request's arrival to its answer for anything that scans "
        "(queries, documents, lineage, runs, previews, plans), waiting included",
    )
    cache_dir: str | None = Field(None, description="where resolved plans are kept")
    max_jobs: int = Field(100, ge=1, description="training jobs whose metrics are kept")
    max_samples: int = Field(10_000, ge=1, description="metric samples kept per job")
    max_metrics_bytes: int = Field(
        256 << 20,
        ge=2 << 20,  # more than any one sample (a body is at most 1 MB)
        description="bytes of pushed metric samples kept in all; the least recently "
        "pushed job loses its oldest samples first",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="host names the service answers to besides those it is bound to "
        "(the Host header of every request is checked, against DNS rebinding)",
    )
    allow_policies: list[str] = Field(
        default_factory=list,
        description="policy import paths (module:Class) posted mixtures may name besides "
        "the built-in ones; no other is ever imported for a request",
    )

    @property
    def needs_token(self) -> bool:
        return not is_loopback(self.host)

    def checked(self) -> ServeSettings:
        """These settings with the token from the environment, refused when the service
        would be reachable from other machines without one."""
        token = self.token or os.environ.get(TOKEN_ENV) or None
        if self.needs_token and not token:
            raise ConfigError(
                f"serving on {self.host} makes the catalog reachable from other machines: "
                f"give a token (--token, or ${TOKEN_ENV}) or bind to 127.0.0.1"
            )
        if token is not None and len(token) < 16:
            raise ConfigError("the token must be at least 16 characters long")
        return self.model_copy(update={"token": token})


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable only from this machine.

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
