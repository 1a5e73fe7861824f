"""Writing the folder of a dataset version made by a takedown.

The new folder holds every shard of the old version: the shards with removed documents
rewritten, the others carried over unchanged (see `rewrite.carry_file`), the saved
tokenizer, and added columns (`mixplane annotate`) filtered the same way into
`_columns/`. Its `_manifest.json` is a tokenize manifest whose parents are the old
folder's (and each added column's), with the request under `takedown` and the history of
requests under `takedowns`; `_takedown/removed.parquet` lists the removed documents.

Example:
    >>> scan = write_version(plan, request, at, storage_options={})  # doctest: +SKIP
    >>> scan.uri  # doctest: +SKIP
    '/data/web-takedown-3'
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from mixplane.catalog.dataset import FolderScan, scan_folder
from mixplane.catalog.takedown.added import NOT_CARRIED, with_columns
from mixplane.catalog.takedown.plan import VersionPlan
from mixplane.catalog.takedown.request import TakedownRequest
from mixplane.catalog.takedown.rewrite import carry_file, filter_shard
from mixplane.errors import MixplaneError
from mixplane.io.atomic import join_url, write_bytes
from mixplane.io.urls import url_filesystem
from mixplane.manifest import MANIFEST, read_json, write_manifest
from mixplane.store.dataset import TokenizedDataset
from mixplane.store.format import FILE_SUFFIXES, META

REMOVED = "_takedown/removed.parquet"


def check_folder(plan: VersionPlan, request: TakedownRequest, storage_options) -> bool:
    """Whether `plan.folder` already holds this very takedown of this version (a run that
    stopped before registering it); a folder without a manifest is a run's leftovers and is
    removed; anything else is refused."""
    fs, path = url_filesystem(plan.folder, storage_options)
    fs.invalidate_cache(path)
    if not fs.exists(path):
        return False
    manifest_url = join_url(plan.folder, MANIFEST)
    if not fs.exists(url_filesystem(manifest_url, storage_options)[1]):
        fs.rm(path, recursive=True)
        return False
    done = read_json(manifest_url, storage_options).get("takedown") or {}
    if done.get("request") == request.request_id and done.get("dataset") == plan.version.ref:
        return True
    raise MixplaneError(
        f"{plan.folder} already exists and is not this takedown of {plan.version.ref}; "
        "move it away or give another --output"
    )


def write_version(
    plan: VersionPlan,
    request: TakedownRequest,
    at: str,
    storage_options=None,
    on_shard: Callable[[str], None] | None = None,
) -> FolderScan:
    """Write (or find, already written) the new version's folder; what registering it
    records. `on_shard` is called with each rewritten shard's name."""
    if not check_folder(plan, request, storage_options):
        _write(plan, request, at, storage_options, on_shard or (lambda _: None))
    scan = scan_folder(plan.folder, storage_options)
    return with_columns(scan, plan, request, at, storage_options)


def _write(plan: VersionPlan, request: TakedownRequest, at: str, options, on_shard) -> None:
    version, old = plan.version, plan.manifest
    recorded = {entry["name"]: entry for entry in old.get("shards") or []}
    affected = plan.affected
    dataset = TokenizedDataset(version.uri, options) if affected else None
    shards, outputs, inputs = [], [], []
    for index, shard in enumerate(version.shards):
        rows = affected.get(index)
        if rows is None:
            entry = recorded[shard.stem]
            for key, suffix in FILE_SUFFIXES.items():
                if key in entry["files"]:
                    name = shard.stem + suffix
                    carry_file(join_url(version.uri, name), join_url(plan.folder, name), options)
        elif len(rows) == shard.documents:
            continue  # every document removed: the shard is dropped
        else:
            meta_url = join_url(version.uri, shard.stem + META)
            fs, path = url_filesystem(meta_url, options)
            with fs.open(path, "rb") as handle:
                meta = pq.read_table(handle)
            reader = dataset.shard(shard.stem)
            entry = filter_shard(reader, meta, rows, plan.folder, options).to_json()
            inputs += _inputs(version.uri, recorded[shard.stem])
            on_shard(shard.stem)
        shards.append(entry)
        for key, suffix in FILE_SUFFIXES.items():
            if key in entry["files"]:
                file = {"path": entry["name"] + suffix, **entry["files"][key]}
                outputs.append(file | {"records": entry["documents"]})
    saved = (old.get("tokenizer") or {}).get("file")
    if saved:
        carry_file(join_url(version.uri, saved), join_url(plan.folder, saved), options)
        outputs += [o for o in old.get("outputs") or [] if o.get("path") == saved]
    outputs.append(_write_removed(plan, request, options))
    documents = sum(entry["documents"] for entry in shards)
    tokens = sum(entry["tokens"] for entry in shards)
    entry = plan.entry(request, at)
    carried = {k: v for k, v in old.items() if k not in NOT_CARRIED}
    write_manifest(
        plan.folder,
        carried
        | {
            "inputs": inputs,
            "parents": [join_url(version.uri, MANIFEST)],
            "totals": {"documents": documents, "tokens": tokens, "shards": len(shards)},
            "shards": shards,
            "outputs": outputs,
            "stats": {"documents": documents, "tokens": tokens},
            "takedown": entry | {"dataset": version.ref, "removed_list": REMOVED},
            "takedowns": [*(old.get("takedowns") or []), entry],
        },
        options,
    )


def _inputs(uri: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The old shard files a rewritten shard was read from, as manifest inputs."""
    return [
        {"url": join_url(uri, entry["name"] + FILE_SUFFIXES[key]), **file_entry}
        | {"fingerprint": file_entry["hash"]}
        for key, file_entry in entry["files"].items()
        if key in ("bin", "meta", "mask")
    ]


def _write_removed(plan: VersionPlan, request: TakedownRequest, options) -> dict[str, Any]:
    """`_takedown/removed.parquet`: every removed document (id, url, shard, row, tokens,
    the criterion that matched) and the request; its manifest output entry."""
    table = plan.matches.table
    stems = [plan.version.shards[i].stem for i in table.column("shard").to_pylist()]
    count = table.num_rows
    removed = pa.table(
        {
            "id": table.column("id"),
            "url": table.column("url"),
            "shard": pa.array(stems, pa.string()),
            "row": table.column("row").cast(pa.int64()),
            "n_tokens": table.column("n_tokens").cast(pa.int64()),
            "criterion": table.column("criterion"),
            "reason": pa.array([f"takedown {request.request_id}"] * count, pa.string()),
            "reference": pa.array([request.reference] * count, pa.string()),
        }
    )
    sink = io.BytesIO()
    pq.write_table(removed, sink, compression="zstd")
    data = sink.getvalue()
    write_bytes(join_url(plan.folder, REMOVED), data, options)
    digest = f"xxh3_128:{xxhash.xxh3_128_hexdigest(data)}"
    return {"path": REMOVED, "size": len(data), "hash": digest, "records": count}
