"""Sorted key runs on disk: what one task (or one slice of a persistent index) collected.

A run is two files sharing a prefix:

- `PREFIX.run`: a 256-byte JSON header (shapes), then three arrays: keys, uint64
  `(bands, width, keyed)`, each band sorted by its key (words compared in order), so a merge
  can read any range of key values with a binary search; rows, uint32 `(bands, keyed)`, the
  document (row within the run) of each key; and for MinHash the signatures, uint32
  `(documents, hashes)`, for verifying candidate pairs;
- `PREFIX.ids.parquet`: the `id` and `source` of every document, in row order.

Local runs are memory-mapped (and the mappings reused within a process), so a merge
touches only the slices it needs. A run on object storage is downloaded whole; within one
merge (its `scope`) a process keeps the runs it downloaded, up to `REMOTE_CACHE_BYTES`,
least recently used first out: a merge reads every run once per unit (band and key slice),
which on object storage was a download of every run per unit.
"""

from __future__ import annotations

import io
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.io.atomic import atomic_open, is_local, local_path, write_bytes
from mixplane.io.urls import url_filesystem

HEADER = 256
_MAGIC = "mixplane-dedup-run"
_mapped: dict[tuple[str, int, int], dict[str, np.ndarray]] = {}
REMOTE_CACHE_BYTES = 512 << 20
# (scope, url) -> arrays, least recently used first; a scope is one merge, so a run file
# rewritten by a later run (same URL, other inputs) is never served from an older merge.
_downloaded: OrderedDict[tuple[str, str], tuple[dict[str, np.ndarray], int]] = OrderedDict()


@dataclass(frozen=True)
class Run:
    """The files of one run and how many documents it holds (`keyed` of them have keys)."""

    prefix: str
    documents: int
    keyed: int

    def url(self, kind: str) -> str:
        return f"{self.prefix}.ids.parquet" if kind == "ids" else f"{self.prefix}.run"


def save_arrays(url: str, keys: np.ndarray, rows: np.ndarray, signatures, options) -> None:
    """Write a run's arrays into one file, atomically."""
    signatures = np.empty((0, 0), np.uint32) if signatures is None else signatures
    shapes = {"keys": keys.shape, "rows": rows.shape, "sigs": signatures.shape}
    header = orjson.dumps({"format": _MAGIC, "shapes": shapes})
    with atomic_open(url, options) as handle:
        handle.write(header.ljust(HEADER))
        for array, dtype in ((keys, np.uint64), (rows, np.uint32), (signatures, np.uint32)):
            handle.write(np.ascontiguousarray(array, dtype=dtype).tobytes())


def load_arrays(url: str, options: dict[str, Any], scope: str = "") -> dict[str, np.ndarray]:
    """A run's arrays: `keys`, `rows` and `sigs` (memory-mapped when local; downloaded
    once per process within a merge's `scope` when remote, or on every call without one)."""
    if is_local(url):
        path = local_path(url)
        status = os.stat(path)
        cache_key = (path, status.st_mtime_ns, status.st_size)
        if cache_key not in _mapped:
            if len(_mapped) > 4096:
                _mapped.clear()
            with open(path, "rb") as handle:
                header = orjson.loads(handle.read(HEADER))
            data = np.memmap(path, dtype=np.uint8, mode="r")
            _mapped[cache_key] = _split(data, header)
        return _mapped[cache_key]
    if (scope, url) in _downloaded:
        _downloaded.move_to_end((scope, url))
        return _downloaded[(scope, url)][0]
    fs, path = url_filesystem(url, options)
    with fs.open(path, "rb") as handle:
        data = np.frombuffer(handle.read(), dtype=np.uint8)
    arrays = _split(data, orjson.loads(bytes(data[:HEADER])))
    if scope and data.nbytes <= REMOTE_CACHE_BYTES:
        _downloaded[(scope, url)] = (arrays, data.nbytes)
        held = sum(size for _, size in _downloaded.values())
        while held > REMOTE_CACHE_BYTES:
            held -= _downloaded.popitem(last=False)[1][1]
    return arrays


def _split(data: np.ndarray, header: dict[str, Any]) -> dict[str, np.ndarray]:
    if header.get("format") != _MAGIC:
        raise ValueError("not a dedup run file")
    arrays, offset = {}, HEADER
    for name, dtype in (("keys", np.uint64), ("rows", np.uint32), ("sigs", np.uint32)):
        shape = tuple(header["shapes"][name])
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        arrays[name] = data[offset : offset + size].view(dtype).reshape(shape)
        offset += size
    return arrays


def sort_keys(keys: np.ndarray, keyed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each band's keys of the documents that have keys.

    `keys` is `(documents, bands, width)`; returns keys `(bands, width, keyed)` and rows
    `(bands, keyed)`, ties broken by row so the result is deterministic.

    Example:
        >>> keys = np.array([[[5]], [[3]], [[5]]], dtype=np.uint64)
        >>> sorted_keys, rows = sort_keys(keys, np.array([True, True, True]))
        >>> sorted_keys[0, 0].tolist(), rows[0].tolist()
        ([3, 5, 5], [1, 0, 2])
    """
    rows = np.flatnonzero(keyed).astype(np.uint32)
    present = keys[keyed]
    documents, bands, width = present.shape
    sorted_keys = np.empty((bands, width, documents), dtype=np.uint64)
    sorted_rows = np.empty((bands, documents), dtype=np.uint32)
    for band in range(bands):
        words = present[:, band, :]
        order = np.lexsort((rows, *(words[:, w] for w in reversed(range(width)))))
        sorted_keys[band] = words[order].T
        sorted_rows[band] = rows[order]
    return sorted_keys, sorted_rows


def write_run(
    prefix: str,
    keys: np.ndarray,
    keyed: np.ndarray,
    ids: list[str],
    sources: list[str],
    signatures: np.ndarray | None,
    storage_options: dict[str, Any],
) -> Run:
    """Sort and write one run; the ids file goes last, as the run's completion mark."""
    sorted_keys, rows = sort_keys(keys, keyed)
    return write_sorted_run(prefix, sorted_keys, rows, ids, sources, signatures, storage_options)


def write_sorted_run(
    prefix: str,
    sorted_keys: np.ndarray,
    rows: np.ndarray,
    ids: list[str] | pa.Array,
    sources: list[str] | pa.Array,
    signatures: np.ndarray | None,
    storage_options: dict[str, Any],
) -> Run:
    run = Run(prefix, len(ids), sorted_keys.shape[2])
    save_arrays(run.url("run"), sorted_keys, rows, signatures, storage_options)
    table = pa.table({"id": _strings(ids), "source": _strings(sources)})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    write_bytes(run.url("ids"), buffer.getvalue(), storage_options)
    return run


def _strings(values) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, pa.Array | pa.ChunkedArray):
        return values.cast(pa.string())
    return pa.array(values, pa.string())


def read_ids(run: Run, storage_options: dict[str, Any]) -> pa.Table:
    """The run's `id` and `source` columns."""
    fs, path = url_filesystem(run.url("ids"), storage_options)
    with fs.open(path, "rb") as handle:
        return pq.read_table(handle)


def key_range(run: Run, band: int, low: int, high: int, storage_options, scope: str = "") -> tuple:
    """Keys `(width, k)` and rows `(k,)` of `band` whose first word is in `[low, high)`."""
    arrays = load_arrays(run.url("run"), storage_options, scope)
    keys = arrays["keys"][band]
    first = keys[0]
    start = int(np.searchsorted(first, np.uint64(low), side="left")) if low > 0 else 0
    stop = (
        len(first)
        if high > np.iinfo(np.uint64).max
        else int(np.searchsorted(first, np.uint64(high), side="left"))
    )
    rows = arrays["rows"][band, start:stop]
    return np.array(keys[:, start:stop]), np.array(rows)
