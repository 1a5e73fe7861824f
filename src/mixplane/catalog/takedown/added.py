"""Columns added by `mixplane annotate`, carried into a takedown's new version: the rows
of removed documents taken out of the affected shards' files, the other files carried over
unchanged, into `_columns/` of the new folder.

Example:
    >>> scan = with_columns(scan, plan, request, at, {})  # doctest: +SKIP
    >>> scan.manifest["added_columns"][0]["folder"]  # doctest: +SKIP
    '/data/web-takedown-4/_columns/quality-9c4e0f2a1b3d5e67'
"""

from __future__ import annotations

import os
from dataclasses import replace

from mixplane.catalog.columns import ADDED_KEY, AddedColumn, ColumnFile, annotated_fingerprint
from mixplane.catalog.dataset import FolderScan
from mixplane.catalog.takedown.plan import VersionPlan
from mixplane.catalog.takedown.request import TakedownRequest
from mixplane.catalog.takedown.rewrite import carry_file, filter_column
from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.io.urls import url_filesystem
from mixplane.manifest import MANIFEST, read_json, write_manifest

# Keys of an old manifest that describe the old run, not the new folder.
NOT_CARRIED = ("tool", "version", "created_at", ADDED_KEY, "takedown")


def with_columns(
    scan: FolderScan, plan: VersionPlan, request: TakedownRequest, at: str, options
) -> FolderScan:
    """`scan` with the old version's added columns, filtered like the shards, into
    `_columns/` of the new folder (each with a manifest whose parents are the new folder's
    and the old column's, so lineage from the column reaches the takedown)."""
    columns: list[AddedColumn] = []
    parent = join_url(plan.folder, MANIFEST)
    fingerprint = scan.fingerprint
    for column in plan.version.added:
        folder = join_url(plan.folder, "_columns", column.folder.rstrip("/").rsplit("/", 1)[-1])
        files = _column_files(plan, column, folder, options)
        old_manifest = join_url(column.folder, MANIFEST)
        if not _exists(join_url(folder, MANIFEST), options):
            manifest = read_json(old_manifest, options)
            carried = {k: v for k, v in manifest.items() if k not in NOT_CARRIED}
            write_manifest(
                folder,
                carried
                | {
                    "parents": [parent, old_manifest],
                    "outputs": [entry.to_json() for entry in files],
                    "takedown": plan.entry(request, at) | {"dataset": plan.version.ref},
                },
                options,
            )
        parent = join_url(folder, MANIFEST)
        made = replace(column, folder=folder, files=tuple(files))
        columns.append(made)
        fingerprint = annotated_fingerprint(fingerprint, made)
    if not columns:
        return scan
    return replace(
        scan,
        manifest={**scan.manifest, ADDED_KEY: [column.to_json() for column in columns]},
        schema={**scan.schema, **{column.name: column.kind for column in columns}},
        fingerprint=fingerprint,
    )


def _column_files(plan: VersionPlan, column: AddedColumn, folder: str, options) -> list[ColumnFile]:
    affected = plan.affected
    files = []
    for index, (shard, entry) in enumerate(zip(plan.version.shards, column.files, strict=True)):
        rows = affected.get(index)
        source, target = join_url(column.folder, entry.path), join_url(folder, entry.path)
        if rows is None:
            if not _exists(target, options):
                carry_file(source, target, options)
            files.append(entry)
        elif len(rows) < shard.documents:
            files.append(filter_column(source, rows, shard.documents, target, options))
    return files


def _exists(url: str, options) -> bool:
    if is_local(url):
        return os.path.exists(local_path(url))
    fs, path = url_filesystem(url, options)
    return fs.exists(path)
