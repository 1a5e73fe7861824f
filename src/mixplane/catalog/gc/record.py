"""The catalog's record of versions whose files gc removed, so loading one says so.

A table of its own, `gc_collected`, made by the first gc that removes something: catalogs
without it (older ones, opened read-only) read as having nothing collected. The version's
rows in `versions` and `shards` stay: lineage and `mixplane catalog show` still tell what
it was; only reading its data is refused, with the date and the version to use instead.

Example:
    >>> import duckdb
    >>> connection = duckdb.connect()
    >>> collected(connection)
    {}
    >>> mark_collected(connection, "web", 1, files=3, size=300, at="2026-11-28 00:10:00")
    >>> collected(connection)
    {'web@1': '2026-11-28'}
"""

from __future__ import annotations

from typing import Any

from mixplane.errors import MixplaneError

TABLE = "gc_collected"
_SCHEMA = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    name VARCHAR, version INTEGER, collected_at TIMESTAMP, files BIGINT, bytes BIGINT,
    PRIMARY KEY (name, version))"""


def mark_collected(
    connection: Any, name: str, version: int, files: int, size: int, at: str
) -> None:
    """Record that `name@version`'s files are being removed (before the first goes, so a
    loader starting meanwhile is refused rather than finding half a version)."""
    connection.execute(_SCHEMA)
    connection.execute(
        f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, ?, ?)", [name, version, at, files, size]
    )


def unmark_collected(connection: Any, name: str, version: int) -> None:
    """Take the record back: the version was found in use just before its files went."""
    connection.execute(f"DELETE FROM {TABLE} WHERE name = ? AND version = ?", [name, version])


def collected(connection: Any) -> dict[str, str]:
    """`NAME@N` -> the date (YYYY-MM-DD, UTC) gc removed its files."""
    exists = connection.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [TABLE]
    ).fetchone()[0]
    if not exists:
        return {}
    rows = connection.execute(
        f"SELECT name, version, strftime(collected_at, '%Y-%m-%d') FROM {TABLE}"
    ).fetchall()
    return {f"{name}@{version}": day for name, version, day in rows}


def refuse_collected(connection: Any, refs: list[str]) -> None:
    """Raise, naming the date and the dataset's latest version, if gc removed the files of
    any of `refs` (exact `NAME@N`)."""
    gone = collected(connection)
    for ref in refs:
        if ref in gone:
            name = ref.partition("@")[0]
            latest = connection.execute(
                "SELECT max(version) FROM versions WHERE name = ?", [name]
            ).fetchone()[0]
            raise MixplaneError(
                f"{ref}'s files were removed by gc on {gone[ref]}; use {name}@{latest}, its "
                "latest version (`mixplane gc` lists the versions it kept)"
            )
