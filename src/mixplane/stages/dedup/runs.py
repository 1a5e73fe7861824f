"""Sorted key runs on disk: what one task (or one slice of a persistent index) collected.

A run is a set of files sharing a prefix:

- `PREFIX.keys.npy`: uint64 `(bands, width, keyed)`, each band sorted by its key (words
  compared in order), so a merge can read any range of key values with a binary search;
- `PREFIX.rows.npy`: uint32 `(bands, keyed)`, the document (row within the run) of each key;
- `PREFIX.sigs.npy` (MinHash only): uint32 `(documents, hashes)` signatures, for verifying
  candidate pairs;
- `PREFIX.ids.parquet`: the `id` and `source` of every document, in row order.

Local files are memory-mapped, so a merge touches only the slices it needs.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.io.atomic import is_local, local_path, write_bytes
from mixplane.io.urls import url_filesystem


@dataclass(frozen=True)
class Run:
    """The files of one run and how many documents it holds (`keyed` of them have keys)."""

    prefix: str
    documents: int
    keyed: int

    def url(self, kind: str) -> str:
        suffix = "ids.parquet" if kind == "ids" else f"{kind}.npy"
        return f"{self.prefix}.{suffix}"


def save_array(url: str, array: np.ndarray, storage_options: dict[str, Any]) -> None:
    """Write one array as `.npy`, atomically."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    write_bytes(url, buffer.getvalue(), storage_options)


def load_array(url: str, storage_options: dict[str, Any]) -> np.ndarray:
    """Memory-map a local `.npy` file; read a remote one whole."""
    if is_local(url):
        return np.load(local_path(url), mmap_mode="r", allow_pickle=False)
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        return np.load(io.BytesIO(handle.read()), allow_pickle=False)


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
    save_array(run.url("keys"), sorted_keys, storage_options)
    save_array(run.url("rows"), rows, storage_options)
    if signatures is not None:
        save_array(run.url("sigs"), signatures, storage_options)
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


def key_range(run: Run, band: int, low: int, high: int, storage_options) -> tuple:
    """Keys `(width, k)` and rows `(k,)` of `band` whose first word is in `[low, high)`."""
    keys = load_array(run.url("keys"), storage_options)[band]
    first = keys[0]
    start = int(np.searchsorted(first, np.uint64(low), side="left")) if low > 0 else 0
    stop = (
        len(first)
        if high > np.iinfo(np.uint64).max
        else int(np.searchsorted(first, np.uint64(high), side="left"))
    )
    rows = load_array(run.url("rows"), storage_options)[band, start:stop]
    return np.array(keys[:, start:stop]), np.array(rows)
