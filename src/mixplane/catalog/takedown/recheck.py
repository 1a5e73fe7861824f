"""Recorded takedowns checked again against the latest versions: data registered after a
takedown (a new tokenizing run, say) may hold the documents it removed.

Example:
    >>> [(found["dataset"], found["documents"]) for found in recheck(catalog)]  # doctest: +SKIP
    [('web@5', 41)]
"""

from __future__ import annotations

from typing import Any

from mixplane.catalog.catalog import Catalog
from mixplane.catalog.takedown import ledger
from mixplane.catalog.takedown.matches import find_matches
from mixplane.catalog.takedown.request import TakedownRequest


def recorded_requests(rows: list[ledger.TakedownRow]) -> list[TakedownRequest]:
    """Each recorded request once, as it was made (the same criteria give the same id)."""
    requests: dict[str, TakedownRequest] = {}
    for row in rows:
        criteria = row.criteria
        requests.setdefault(
            row.request,
            TakedownRequest.build(
                criteria.get("domains", ()),
                criteria.get("urls", ()),
                criteria.get("ids", ()),
                row.reference,
            ),
        )
    return list(requests.values())


def recheck(catalog: Catalog) -> list[dict[str, Any]]:
    """The documents of the latest version of each dataset that a recorded takedown names:
    one entry per request and dataset (`request`, `reference`, `dataset`, `documents`,
    `tokens`); none when every takedown still holds."""
    with catalog.session() as session:
        requests = recorded_requests(ledger.rows(session.registry))
        if not requests:
            return []
        versions = session.registry.latest()
        found = []
        for request in requests:
            for ref, matches in sorted(find_matches(session, versions, request).items()):
                found.append(
                    {
                        "request": request.request_id,
                        "reference": request.reference,
                        "dataset": ref,
                        "documents": matches.documents,
                        "tokens": matches.tokens,
                    }
                )
    return found
