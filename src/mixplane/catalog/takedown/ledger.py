"""The catalog's record of takedowns: a `takedowns` table in the registry, and which
pinned versions a takedown superseded.

One row per dataset a request changed: the request, its reference and criteria, when, the
version it replaced and the one it made, and what it removed. The table is created by the
first takedown; catalogs written before it open as they did (read-only too), and simply
have no takedowns.

Example:
    >>> with Registry("catalog.duckdb") as registry:  # doctest: +SKIP
    ...     superseded(registry, ["web@1"])[0].message()
    'web@1 was superseded by takedown td-… (reference T-1): move to web@2'
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from mixplane.catalog.registry import Registry
from mixplane.refs import parse_ref

TABLE = "takedowns"
SCHEMA = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    request VARCHAR, reference VARCHAR, criteria VARCHAR, taken_at TIMESTAMP,
    name VARCHAR, old_version INTEGER, new_version INTEGER,
    documents BIGINT, tokens BIGINT, shards_rewritten INTEGER,
    PRIMARY KEY (name, old_version))"""


@dataclass(frozen=True)
class TakedownRow:
    """What a request did to one dataset."""

    request: str
    reference: str
    criteria: dict[str, list[str]]
    at: str  # ISO time, UTC
    name: str
    old_version: int
    new_version: int
    documents: int
    tokens: int
    shards_rewritten: int

    def to_json(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "reference": self.reference,
            "criteria": self.criteria,
            "at": self.at,
            "dataset": self.name,
            "from": f"{self.name}@{self.old_version}",
            "to": f"{self.name}@{self.new_version}",
            "removed": {
                "documents": self.documents,
                "tokens": self.tokens,
                "shards_rewritten": self.shards_rewritten,
            },
        }


@dataclass(frozen=True)
class Superseded:
    """A pinned version a takedown replaced, and the version to move to (the end of the
    chain of takedowns that followed it)."""

    pin: str
    row: TakedownRow
    move_to: str
    where: str = ""  # the mixture that pins it, if any
    # False: the pin is older than the version the takedown replaced, so it may hold the
    # documents the takedown removed (a version registered in between may not have).
    direct: bool = True

    def message(self) -> str:
        place = f"{self.where}: " if self.where else ""
        done = (
            f"takedown {self.row.request} (reference {self.row.reference}, "
            f"{self.row.documents:,} documents removed)"
        )
        what = (
            f"was superseded by {done}"
            if self.direct
            else f"is older than {self.row.name}@{self.row.old_version}, which {done} "
            "replaced, and may hold the documents it removed"
        )
        return (
            f"{place}{self.pin} {what}: move to {self.move_to}, or drop the pin to follow "
            "the latest version"
        )

    def to_json(self) -> dict[str, Any]:
        found = {
            "pin": self.pin,
            "move_to": self.move_to,
            "direct": self.direct,
            "takedown": self.row.to_json(),
        }
        return found | ({"mixture": self.where} if self.where else {})


def create_table(registry: Registry) -> None:
    """Create the table if the catalog has none yet (a writable registry)."""
    registry.connection.execute(SCHEMA)


def has_table(registry: Registry) -> bool:
    row = registry.connection.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [TABLE]
    ).fetchone()
    return bool(row and row[0])


def insert(registry: Registry, row: TakedownRow) -> None:
    """Record one dataset's takedown (inside the caller's transaction)."""
    at = dt.datetime.fromisoformat(row.at).astimezone(dt.timezone.utc).replace(tzinfo=None)
    registry.connection.execute(
        f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            row.request,
            row.reference,
            orjson.dumps(row.criteria).decode(),
            at,
            row.name,
            row.old_version,
            row.new_version,
            row.documents,
            row.tokens,
            row.shards_rewritten,
        ],
    )


def rows(registry: Registry) -> list[TakedownRow]:
    """Every recorded takedown, oldest first (none in a catalog without the table)."""
    if not has_table(registry):
        return []
    found = registry.connection.execute(
        "SELECT request, reference, criteria, strftime(taken_at, '%Y-%m-%dT%H:%M:%S+00:00'), name, "
        f"old_version, new_version, documents, tokens, shards_rewritten FROM {TABLE} "
        "ORDER BY taken_at, name, old_version"
    ).fetchall()
    return [
        TakedownRow(r[0], r[1], orjson.loads(r[2]), r[3], r[4], *map(int, r[5:])) for r in found
    ]


def superseded(registry: Registry, pins: Iterable[str], where: str = "") -> list[Superseded]:
    """The pinned references (`NAME@N`; a bare `NAME` follows the latest and is never
    superseded) that a takedown replaced, or that are older than a version a takedown
    replaced (they may hold what it removed: flagged rather than trusted)."""
    recorded = rows(registry)
    by_version = {(row.name, row.old_version): row for row in recorded}
    found = []
    for pin in pins:
        name, number = parse_ref(pin)
        if number is None:
            continue
        row = by_version.get((name, number))
        later = [r for r in recorded if r.name == name and r.old_version > number]
        if row is None and not later:
            continue
        first = row or min(later, key=lambda r: r.old_version)
        end = first
        while (name, end.new_version) in by_version:  # a later takedown replaced it too
            end = by_version[(name, end.new_version)]
        found.append(Superseded(pin, first, f"{name}@{end.new_version}", where, row is not None))
    return found


def every_superseded(registry: Registry) -> list[Superseded]:
    """Every version of the catalog a takedown replaced (what a pin must not name)."""
    return superseded(registry, [f"{row.name}@{row.old_version}" for row in rows(registry)])
