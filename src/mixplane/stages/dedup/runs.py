"""Sorted key runs on disk: what one task (or one slice of a persistent index) collected.

A run is two files sharing a prefix:

- `PREFIX.run`: a 256-byte JSON header (shapes), then three arrays: keys, uint64
  `(bands, width, keyed)`, each band sorted by its key (words compared in order), so a merge
  can read any range of key values with a binary search; rows, uint32 `(bands, keyed)`, the
  document (row within the run) of each key; and for MinHash the signatures, uint32
  `(documents, hashes)`, for verifying candidate pairs;
- `PREFIX.ids.parquet`: the `id` and `source` of every document, in row order.

After the signatures, the file holds *fences*, uint64 `(bands, 2**FENCE_BITS + 1)`: where
in each band the keys whose first word starts with each `FENCE_BITS`-bit prefix begin (the
last column is `keyed`), so a reader finds any key slice's place without reading keys.

Local runs are memory-mapped (and the mappings reused within a process), so a merge
touches only the slices it needs. On object storage a merge whose runs fit in
`REMOTE_CACHE_BYTES` downloads each whole once per process (within one merge, its `scope`,
a process keeps what it downloaded, least recently used first out); a larger one reads
each unit's slice by ranges found from the fences (one request per key word and one for
the rows, per run) and the signatures it verifies by ranges of rows: the runs cross the
network about once instead of once per unit. Runs written before fences existed are read
whole.
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
FENCE_BITS = 8  # 256 fences a band (2 KB): slices of a merge with up to 256 a band are exact
_ARRAYS = (("keys", np.uint64), ("rows", np.uint32), ("sigs", np.uint32), ("fences", np.uint64))
# Rows of signatures this close together are fetched in one range: less than a request costs.
SIGNATURE_GAP = 64
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
    """Write a run's arrays and its fences into one file, atomically."""
    signatures = np.empty((0, 0), np.uint32) if signatures is None else signatures
    fences = fences_of(keys)
    arrays = {"keys": keys, "rows": rows, "sigs": signatures, "fences": fences}
    shapes = {name: arrays[name].shape for name, _ in _ARRAYS}
    header = orjson.dumps({"format": _MAGIC, "shapes": shapes})
    with atomic_open(url, options) as handle:
        handle.write(header.ljust(HEADER))
        for name, dtype in _ARRAYS:
            handle.write(np.ascontiguousarray(arrays[name], dtype=dtype).tobytes())


def fences_of(keys: np.ndarray) -> np.ndarray:
    """Where each `FENCE_BITS`-bit prefix of the first key word starts in each band of
    sorted `keys` `(bands, width, keyed)`; the last column is `keyed`.

    Example:
        >>> keys = np.array([[[1, 2, 1 << 63]]], dtype=np.uint64)
        >>> fences = fences_of(keys)
        >>> fences.shape, fences[0, :2].tolist(), fences[0, 127:130].tolist()
        ((1, 257), [0, 2], [2, 2, 3])
    """
    bands, _, keyed = keys.shape
    edges = np.arange(1 << FENCE_BITS, dtype=np.uint64) << np.uint64(64 - FENCE_BITS)
    fences = np.empty((bands, (1 << FENCE_BITS) + 1), dtype=np.uint64)
    for band in range(bands):
        fences[band, :-1] = np.searchsorted(keys[band, 0], edges, side="left")
    fences[:, -1] = keyed
    return fences


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
    layout = RunLayout.of(header)
    arrays = {}
    for name, dtype in _ARRAYS:
        if name in layout.shapes:
            start, stop = layout.span(name)
            arrays[name] = data[start:stop].view(dtype).reshape(layout.shapes[name])
    return arrays


@dataclass(frozen=True)
class RunLayout:
    """Where each array of a run file lies, from its header."""

    shapes: dict[str, tuple[int, ...]]

    @staticmethod
    def of(header: dict[str, Any]) -> RunLayout:
        if header.get("format") != _MAGIC:
            raise ValueError("not a dedup run file")
        return RunLayout({name: tuple(shape) for name, shape in header["shapes"].items()})

    def span(self, name: str) -> tuple[int, int]:
        """The byte range of array `name` in the file."""
        offset = HEADER
        for other, dtype in _ARRAYS:
            size = int(np.prod(self.shapes.get(other, (0,)))) * np.dtype(dtype).itemsize
            if other == name:
                return offset, offset + size
            offset += size
        raise KeyError(name)

    @property
    def size(self) -> int:
        return self.span(_ARRAYS[-1][0])[1] if "fences" in self.shapes else self.span("sigs")[1]


# (scope, url) -> a remote run's layout, and its fences once a ranged read needed them; read
# once per merge and process.
_layouts: dict[tuple[str, str], RunLayout] = {}
_fences: dict[tuple[str, str], np.ndarray | None] = {}


def run_layout(url: str, options: dict[str, Any], scope: str = "") -> RunLayout:
    """A run's layout, from its header (a 256-byte read for a remote run, kept per scope)."""
    if is_local(url):
        with open(local_path(url), "rb") as handle:
            return RunLayout.of(orjson.loads(handle.read(HEADER)))
    if (scope, url) not in _layouts:
        if len(_layouts) > 65536:
            _layouts.clear()
            _fences.clear()
        fs, path = url_filesystem(url, options)
        _layouts[(scope, url)] = RunLayout.of(orjson.loads(fs.cat_file(path, start=0, end=HEADER)))
    return _layouts[(scope, url)]


def _remote_fences(url: str, options, scope: str) -> np.ndarray | None:
    """A remote run's fences (None for a run written before they existed)."""
    if (scope, url) not in _fences:
        layout = run_layout(url, options, scope)
        fences = None
        if "fences" in layout.shapes:
            fs, path = url_filesystem(url, options)
            start, stop = layout.span("fences")
            data = fs.cat_file(path, start=start, end=stop)
            fences = np.frombuffer(data, np.uint64).reshape(layout.shapes["fences"])
        _fences[(scope, url)] = fences
    return _fences[(scope, url)]


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


def key_range(
    run: Run, band: int, low: int, high: int, storage_options, scope: str = "", ranged=False
) -> tuple:
    """Keys `(width, k)` and rows `(k,)` of `band` whose first word is in `[low, high)`;
    `ranged`: read a remote run's slice by ranges (see the module docstring)."""
    url = run.url("run")
    if ranged and not is_local(url):
        fences = _remote_fences(url, storage_options, scope)
        if fences is not None:
            layout = run_layout(url, storage_options, scope)
            return _ranged_key_range(url, layout, fences, band, low, high, storage_options)
    arrays = load_arrays(url, storage_options, scope)
    keys = arrays["keys"][band]
    start, stop = _bounds(keys[0], low, high)
    rows = arrays["rows"][band, start:stop]
    return np.array(keys[:, start:stop]), np.array(rows)


def _bounds(first: np.ndarray, low: int, high: int) -> tuple[int, int]:
    """Where first words in `[low, high)` start and stop in sorted `first`."""
    start = int(np.searchsorted(first, np.uint64(low), side="left")) if low > 0 else 0
    stop = (
        len(first)
        if high > np.iinfo(np.uint64).max
        else int(np.searchsorted(first, np.uint64(high), side="left"))
    )
    return start, stop


def _ranged_key_range(url, layout: RunLayout, fences: np.ndarray, band, low, high, options):
    """`key_range` of a remote run by ranges: the fences around `[low, high)`, then the
    keys and rows between them, cut to the slice exactly."""
    shift = 64 - FENCE_BITS
    start = int(fences[band, low >> shift])
    stop = int(fences[band, -(-high >> shift)])
    _, width, keyed = layout.shapes["keys"]
    keys_at, rows_at = layout.span("keys")[0], layout.span("rows")[0]
    starts = [keys_at + ((band * width + word) * keyed + start) * 8 for word in range(width)]
    starts.append(rows_at + (band * keyed + start) * 4)
    ends = [begin + (stop - start) * 8 for begin in starts[:-1]] + [starts[-1] + (stop - start) * 4]
    fs, path = url_filesystem(url, options)
    bodies = fs.cat_ranges([path] * len(starts), starts, ends) if stop > start else []
    if not bodies:
        return np.empty((width, 0), dtype=np.uint64), np.empty(0, dtype=np.uint32)
    keys = np.stack([np.frombuffer(body, np.uint64) for body in bodies[:-1]])
    rows = np.frombuffer(bodies[-1], np.uint32)
    first, last = _bounds(keys[0], low, high)
    return keys[:, first:last].copy(), rows[first:last].copy()


def signature_rows(
    run: Run, rows: np.ndarray, storage_options, scope: str = "", ranged: bool = False
) -> np.ndarray:
    """The stored signatures of the run's documents `rows` `(len(rows), hashes)`; `ranged`:
    a remote run's are fetched by ranges of rows, close ones together."""
    url = run.url("run")
    if not (ranged and not is_local(url)):
        return np.asarray(load_arrays(url, storage_options, scope)["sigs"][rows])
    layout = run_layout(url, storage_options, scope)
    hashes = layout.shapes["sigs"][1]
    wanted = np.unique(rows)
    if not len(wanted):
        return np.empty((0, hashes), dtype=np.uint32)
    breaks = np.flatnonzero(np.diff(wanted) > SIGNATURE_GAP) + 1
    firsts = wanted[np.concatenate(([0], breaks))]
    lasts = wanted[np.concatenate((breaks - 1, [len(wanted) - 1]))] + 1
    at, row_bytes = layout.span("sigs")[0], hashes * 4
    fs, path = url_filesystem(url, storage_options)
    bodies = fs.cat_ranges(
        [path] * len(firsts), (at + firsts * row_bytes).tolist(), (at + lasts * row_bytes).tolist()
    )
    fetched = np.concatenate([np.frombuffer(b, np.uint32) for b in bodies]).reshape(-1, hashes)
    # Row r of the run is at fetched position (r - first of its range) + rows fetched before.
    before = np.concatenate(([0], np.cumsum(lasts - firsts)[:-1]))
    which = np.searchsorted(firsts, rows, side="right") - 1
    return fetched[rows - firsts[which] + before[which]]
