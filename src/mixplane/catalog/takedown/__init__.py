"""Takedowns: remove documents named by domain, URL or id from every dataset of a catalog.

Example:
    >>> from mixplane.catalog import Catalog
    >>> from mixplane.catalog.takedown import TakedownRequest, apply_takedown
    >>> request = TakedownRequest.build(domains=["example.com"], reference="TICKET-123")
    >>> apply_takedown(Catalog("catalog.duckdb"), request).documents  # doctest: +SKIP
    41
"""

from mixplane.catalog.takedown.apply import (
    Progress,
    TakedownResult,
    apply_takedown,
    plan_takedown,
)
from mixplane.catalog.takedown.ledger import Superseded, TakedownRow, every_superseded, superseded
from mixplane.catalog.takedown.recheck import recheck
from mixplane.catalog.takedown.request import TakedownRequest, parse_request_file

__all__ = [
    "Progress",
    "Superseded",
    "TakedownRequest",
    "TakedownResult",
    "TakedownRow",
    "apply_takedown",
    "every_superseded",
    "parse_request_file",
    "plan_takedown",
    "recheck",
    "superseded",
]
