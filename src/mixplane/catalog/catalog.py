"""The `Catalog`: register tokenized folders, list versions, select documents by predicate.

Example:
    >>> catalog = Catalog("catalog.duckdb")  # doctest: +SKIP
    >>> catalog.register("out/tokens", name="web").ref  # doctest: +SKIP
    'web@1'
    >>> selection = catalog.select("language = 'de' AND score > 0.2")  # doctest: +SKIP
    >>> selection["web"].documents, selection.tokens  # doctest: +SKIP
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from mixplane.catalog.columns import AddedColumn, with_column
from mixplane.catalog.dataset import scan_folder
from mixplane.catalog.gc.record import collected, refuse_collected
from mixplane.catalog.mirror import MetadataMirror
from mixplane.catalog.predicate import ValidPredicate, check_predicate
from mixplane.catalog.query import (
    added_urls,
    check_added_unchanged,
    check_unchanged,
    meta_urls,
    open_engine,
    select_version,
)
from mixplane.catalog.registry import DatasetVersion, Registry, is_null_type
from mixplane.catalog.remote_file import catalog_to_update
from mixplane.catalog.selection import Selection
from mixplane.errors import MixplaneError
from mixplane.io.atomic import is_local

DEFAULT_CATALOG = "catalog.duckdb"
# Versions queried side by side: on object storage each query waits on round trips.
PARALLEL_VERSIONS = 8


class Catalog:
    """A catalog file; every call opens it briefly, so several processes can share it.

    `storage_options` are passed to fsspec for datasets on object storage. With
    `metadata_cache` (a cache folder), remote shard metadata is copied there once per machine
    and queried locally (`mirror`): far fewer round trips when a job queries many files.
    """

    def __init__(
        self,
        path: str | os.PathLike = DEFAULT_CATALOG,
        storage_options: dict | None = None,
        metadata_cache: str | None = None,
    ):
        self.path = os.fspath(path)
        self.storage_options = storage_options or {}
        self.metadata_cache = metadata_cache

    def register(self, folder: str, name: str) -> DatasetVersion:
        """Record a tokenized folder as the next version of `name` (a no-op if unchanged)."""
        return self.register_verbose(folder, name)[0]

    def register_verbose(self, folder: str, name: str) -> tuple[DatasetVersion, bool]:
        """Like `register`, also saying whether a new version was created."""
        scan = scan_folder(folder, self.storage_options)
        if is_local(self.path):
            with Registry(self.path, writable=True) as registry:
                return registry.add(scan, name)
        # The registry is closed (its file complete) before the copy is uploaded.
        with (
            catalog_to_update(self.path, self.storage_options) as copy,
            Registry(copy.path, writable=True) as registry,
        ):
            version, copy.changed = registry.add(scan, name)
        return version, copy.changed

    def add_column(
        self, source: DatasetVersion, column: AddedColumn
    ) -> tuple[DatasetVersion, bool]:
        """Record `source` with `column` added as the next version of its dataset: the same
        shard files, one more property (see `catalog.columns`); `(version, created)`, a no-op
        when the latest version is already exactly that.

        Example:
            >>> catalog.add_column(catalog.get("web@1"), column)[0].ref  # doctest: +SKIP
            'web@2'
        """
        with Registry(self.path, writable=True) as registry:
            manifest = registry.manifest(source.name, source.version)
            return registry.add(with_column(source, manifest, column), source.name)

    def get(self, ref: str) -> DatasetVersion:
        """`NAME` (latest version) or `NAME@N`."""
        with Registry(self.path) as registry:
            return registry.resolve(ref)

    def latest(self) -> list[DatasetVersion]:
        """The latest version of every dataset."""
        with Registry(self.path) as registry:
            return registry.latest()

    def versions(self) -> list[DatasetVersion]:
        """Every version of every dataset, by name then version."""
        with Registry(self.path) as registry:
            return [registry.get(name, number) for name, number in registry.versions()]

    def collected(self) -> dict[str, str]:
        """The versions whose files `mixplane gc` removed, with the date.

        Example:
            >>> Catalog("catalog.duckdb").collected()  # doctest: +SKIP
            {'web@1': '2026-11-28'}
        """
        with Registry(self.path) as registry:
            return collected(registry.connection)

    def session(self) -> CatalogSession:
        """The catalog held open for several queries (use as a context manager)."""
        return CatalogSession(self)

    def resolve(self, datasets: Sequence[str] | None = None) -> list[DatasetVersion]:
        """The versions a query runs on: the given refs, or the latest of every dataset."""
        with self.session() as session:
            return session.resolve(datasets)

    def validate(self, where: str, datasets: Sequence[str] | None = None) -> ValidPredicate:
        """Check a predicate against the columns of the chosen datasets without running it."""
        return check_predicate(where, columns_of(self.resolve(datasets)))

    def select(self, where: str, datasets: Sequence[str] | None = None) -> Selection:
        """The documents matching `where` in `datasets` (default: latest of every dataset).

        A column that only some datasets have reads as NULL in the others.
        """
        with self.session() as session:
            return session.select(where, datasets)


class CatalogSession:
    """A catalog opened once for several queries (a mixture's components): the registry and
    the query engine are opened once instead of per query, and each version's files are
    checked unchanged once. Queries may run from several threads at once; the versions of one
    query run side by side (each on its own cursor of the engine).

    Example:
        >>> with Catalog("catalog.duckdb").session() as session:  # doctest: +SKIP
        ...     wiki, code = session.select("source = 'wiki'"), session.select("source = 'code'")
    """

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.registry = Registry(catalog.path)
        self._versions: dict[tuple[str, ...], list[DatasetVersion]] = {}
        self._engines: dict[tuple[str, ...], Any] = {}
        self._cursors: set[Any] = set()
        self._checked: set[str] = set()
        self._urls: dict[str, list[str]] = {}
        self._lock = threading.RLock()
        # Locks of their own: `engine` holds `_lock` while `meta_urls` copies files.
        self._checks_lock, self._urls_lock = threading.Lock(), threading.Lock()
        cache = catalog.metadata_cache
        self.mirror = MetadataMirror(cache, catalog.storage_options) if cache else None

    def __enter__(self) -> CatalogSession:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            for engine in self._engines.values():
                engine.close()
            self._engines.clear()
            self.registry.close()

    def interrupt(self) -> None:
        """Stop the queries running on this session (from another thread: a time limit)."""
        with self._lock:
            running = [*self._engines.values(), *self._cursors]
        for connection in running:
            connection.interrupt()

    def resolve(self, datasets: Sequence[str] | None = None) -> list[DatasetVersion]:
        """The given refs' versions, or the latest of every dataset."""
        key = tuple(datasets or ())
        with self._lock:
            if key not in self._versions:
                self._versions[key] = self._resolve(datasets)
            return self._versions[key]

    def _resolve(self, datasets: Sequence[str] | None) -> list[DatasetVersion]:
        if not datasets:
            versions = self.registry.latest()
            if not versions:
                raise MixplaneError(f"{self.catalog.path} has no datasets yet; register one first")
            return versions
        # Exact refs (NAME@N) already read in this session are not read again.
        known = {v.ref: v for versions in self._versions.values() for v in versions}
        found = [known.get(ref) or self.registry.resolve(ref) for ref in datasets]
        refuse_collected(self.registry.connection, [version.ref for version in found])
        unique = {version.ref: version for version in found}  # a version listed twice runs once
        return list(unique.values())

    def check_unchanged(self, version: DatasetVersion) -> None:
        """Refuse a version whose metadata changed since it was registered (listed once per
        session, however many queries read it)."""
        with self._checks_lock:
            if version.ref in self._checked:
                return
        check_unchanged(version, self.catalog.storage_options)
        with self._checks_lock:
            self._checked.add(version.ref)

    def select(self, where: str, datasets: Sequence[str] | None = None) -> Selection:
        """As `Catalog.select`."""
        versions = self.resolve(datasets)
        columns = columns_of(versions)
        engine = self.engine(versions)
        with self.cursor(engine) as connection:
            predicate = check_predicate(where, columns, connection)

        def one(version: DatasetVersion):
            self.check_unchanged(version)
            present = {name.lower() for name in version.schema}
            missing = {
                name: kind
                for name, kind in columns.items()
                if name.lower() not in present and name in predicate.columns
            }
            urls, storage = self.meta_urls([version])[0], self.catalog.storage_options
            with self.cursor(engine) as connection:
                return select_version(connection, version, urls, predicate, missing, storage)

        if len(versions) == 1:
            return Selection(where, (one(versions[0]),))
        with ThreadPoolExecutor(min(len(versions), PARALLEL_VERSIONS)) as pool:
            return Selection(where, tuple(pool.map(one, versions)))

    def engine(self, versions: list[DatasetVersion]):
        """The sandboxed query connection over `versions`' shard metadata (opened once)."""
        key = tuple(version.ref for version in versions)
        with self._lock:
            if key not in self._engines:
                urls = [url for urls in self.meta_urls(versions) for url in urls]
                urls += [url for version in versions for url in added_urls(version)]
                self._engines[key] = open_engine(urls, self.catalog.storage_options)
            return self._engines[key]

    def meta_urls(self, versions: list[DatasetVersion]) -> list[list[str]]:
        """Each version's metadata files: their local copies with a `metadata_cache` (made
        now where missing, versions side by side), else where they are."""
        with self._urls_lock:
            missing = [v for v in versions if v.ref not in self._urls]
            if missing and self.mirror is None:
                self._urls.update((v.ref, meta_urls(v)) for v in missing)
            elif missing:
                with ThreadPoolExecutor(min(len(missing), PARALLEL_VERSIONS)) as pool:
                    copies = list(pool.map(lambda v: self.mirror.paths(v, self.files(v)), missing))
                for version, (paths, fresh) in zip(missing, copies, strict=True):
                    self._urls[version.ref] = paths
                    if fresh:  # each copy was checked against the registration on arrival
                        check_added_unchanged(version, self.catalog.storage_options)
                        with self._checks_lock:
                            self._checked.add(version.ref)
            return [self._urls[version.ref] for version in versions]

    def files(self, version: DatasetVersion) -> dict[str, dict[str, Any]]:
        """The files `version`'s manifest listed at registration, by name (size, hash):
        what its files must still hold."""
        outputs = self.registry.manifest(version.name, version.version).get("outputs") or []
        return {e["path"]: e for e in outputs if isinstance(e, dict) and "path" in e}

    @contextmanager
    def cursor(self, engine: Any) -> Iterator[Any]:
        """A connection of its own to `engine` (DuckDB connections are not shared by
        threads), interrupted with the session's."""
        connection = engine.cursor()
        with self._lock:
            self._cursors.add(connection)
        try:
            yield connection
        finally:
            with self._lock:
                self._cursors.discard(connection)
            connection.close()


def columns_of(versions: Sequence[DatasetVersion]) -> dict[str, str]:
    """Every property column of `versions` with its type: the first version's on conflict,
    except that a declared type wins over the null type of a version without any value."""
    columns: dict[str, str] = {}
    for version in versions:
        for name, kind in version.schema.items():
            if name not in columns or is_null_type(columns[name]):
                columns[name] = kind
    return columns


def describe_versions(versions: Sequence[DatasetVersion]) -> list[dict[str, Any]]:
    return [version.summary() for version in versions]
