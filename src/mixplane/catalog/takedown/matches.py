"""Finding the documents a takedown request names, with DuckDB over the shards' metadata.

The criteria become small tables joined to each version's documents: ids by equality, URL
prefixes by `starts_with`, domains by the host of the document's `url` (lower case, without
port, user or trailing dot) being the domain or ending in `.` + the domain. A document
without a `url` matches only by id. Each match keeps the first criterion (in the order
domain, url, id, then by value) that took it, as its reason.

Example:
    >>> with Catalog("catalog.duckdb").session() as session:  # doctest: +SKIP
    ...     found = find_matches(session, session.resolve(), request)
    >>> {ref: m.documents for ref, m in found.items()}  # doctest: +SKIP
    {'web@3': 41}
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from mixplane.catalog.catalog import CatalogSession
from mixplane.catalog.engine import ROW_COLUMN, SHARD_COLUMN, documents_view, engine_error
from mixplane.catalog.registry import DatasetVersion
from mixplane.catalog.takedown.request import TakedownRequest

# The host of an absolute URL: after the scheme and any user, up to a port, path, query or
# fragment.
HOST = r"^[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^@/?#]*@)?([^/:?#]*)"


@dataclass(frozen=True)
class VersionMatches:
    """The documents of one version a request names: shard index, row, id, url, tokens and
    the criterion that matched (`domain example.com`), sorted by shard then row."""

    version: DatasetVersion
    table: pa.Table  # columns shard, row, id, url, n_tokens, criterion

    @property
    def documents(self) -> int:
        return self.table.num_rows

    @property
    def tokens(self) -> int:
        return int(np.asarray(self.table.column("n_tokens")).sum())

    def shards(self) -> list[int]:
        """The shards (indexes into the version's shards) holding a match."""
        return sorted(set(self.table.column("shard").to_pylist()))

    def rows_of(self, shard: int) -> np.ndarray:
        """The matched rows of one shard, ascending."""
        rows = np.asarray(self.table.column("row"))
        return rows[np.asarray(self.table.column("shard")) == shard]


def match_sql(has_url: bool) -> str:
    """The query over a `documents` view and a table `criteria_KIND (value)` per kind (so
    a long list of ids is a hash join, not compared with every domain and URL)."""
    url = "CAST(url AS VARCHAR)" if has_url else "CAST(NULL AS VARCHAR)"
    docs = (
        f"SELECT {SHARD_COLUMN} AS shard, {ROW_COLUMN} AS row, CAST(id AS VARCHAR) AS id, "
        f"{url} AS url, coalesce(n_tokens, 0) AS n_tokens FROM documents"
    )
    hosts = f"SELECT *, rtrim(lower(regexp_extract(url, '{HOST}', 1)), '.') AS host FROM docs"
    return f"""
        WITH docs AS ({docs}), hosted AS ({hosts}),
        hits AS (
            SELECT d.*, 0 AS rank, 'domain ' || c.value AS criterion FROM hosted d
                JOIN criteria_domain c
                ON d.host = c.value OR ends_with(d.host, '.' || c.value)
            UNION ALL
            SELECT d.*, 1, 'url ' || c.value FROM hosted d
                JOIN criteria_url c ON starts_with(d.url, c.value)
            UNION ALL
            SELECT d.*, 2, 'id ' || c.value FROM hosted d
                JOIN criteria_id c ON d.id = c.value
        )
        SELECT shard, row, id, url, n_tokens, min({{'r': rank, 'c': criterion}}).c AS criterion
        FROM hits GROUP BY shard, row, id, url, n_tokens ORDER BY shard, row"""


def find_matches(
    session: CatalogSession, versions: list[DatasetVersion], request: TakedownRequest
) -> dict[str, VersionMatches]:
    """The documents of each version that `request` names (versions with none left out)."""
    found = {}
    engine = session.engine(versions)
    for version, urls in zip(versions, session.meta_urls(versions), strict=True):
        session.check_unchanged(version)
        has_url = any(name.lower() == "url" for name in version.schema)
        view = documents_view(
            urls, version.schema, {}, not version.uniform, version.added_sources()
        )
        with session.cursor(engine) as connection:
            try:
                connection.execute("CREATE OR REPLACE TEMP VIEW documents AS " + view)
                for kind, values in (
                    ("domain", request.domains),
                    ("url", request.urls),
                    ("id", request.ids),
                ):
                    connection.execute(
                        f"CREATE OR REPLACE TEMP TABLE criteria_{kind} AS "
                        "SELECT unnest(?::VARCHAR[]) AS value",
                        [list(values)],
                    )
                table = connection.sql(match_sql(has_url)).to_arrow_table()
            except duckdb.Error as error:
                raise engine_error(error, f"takedown query failed on {version.ref}") from error
        if table.num_rows:
            found[version.ref] = VersionMatches(version, table)
    return found
