"""The work files of `dedup_semantic`, all under the stage's work folder.

- `collect/task-NNNNN.npy`: the task's embeddings, float32 `(embedded, dim)`, in the order
  the documents arrived (documents without text have none);
- `collect/task-NNNNN.parquet`: one row per document in arrival order: `id`, `source`,
  `key` (the `keep` rule's number, see `keep.py`) and `embedded`; written last, as the
  task's completion mark;
- `clusters/task-NNNNN.run`: the same embedded documents sorted by k-means cluster (then
  row), so one range of clusters is one contiguous slice of every array: a 256-byte JSON
  header, then `starts` int64 `(clusters + 1)`, `rows` int64, `keys` float64 (the final
  order key), `id_offsets` int64 `(n + 1)`, `vectors` float32 `(n, dim)`, `ranks` int32
  (source preference), and the ids' UTF-8 bytes. A merge unit reads only its slices
  (ranged reads, also on object storage).

Example:
    >>> layout = RunLayout(count=3, clusters=2, dim=4, id_bytes=5)
    >>> layout.offsets()["vectors"], layout.size()
    (360, 425)
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.io.atomic import atomic_open, is_local, local_path, write_bytes
from mixplane.io.urls import url_filesystem
from mixplane.stages.global_stage import WorkArea

HEADER = 256
_MAGIC = "mixplane-semantic-run"
COLLECTED = pa.schema(
    [
        ("id", pa.string()),
        ("source", pa.string()),
        ("key", pa.float64()),
        ("embedded", pa.bool_()),
    ]
)


def vectors_url(work: WorkArea, task: int) -> str:
    return work.url("collect", f"task-{task:05d}.npy")


def collected_url(work: WorkArea, task: int) -> str:
    return work.url("collect", f"task-{task:05d}.parquet")


def run_url(work: WorkArea, task: int) -> str:
    return work.url("clusters", f"task-{task:05d}.run")


def write_collected(work: WorkArea, task: int, table: pa.Table, vectors: np.ndarray) -> None:
    """Write one task's embeddings, then its document table (the completion mark)."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    write_bytes(vectors_url(work, task), buffer.getvalue(), work.storage_options)
    with atomic_open(collected_url(work, task), work.storage_options) as handle:
        pq.write_table(table.cast(COLLECTED), handle, compression="zstd")


def read_collected(work: WorkArea, task: int) -> pa.Table:
    fs, path = url_filesystem(collected_url(work, task), work.storage_options)
    with fs.open(path, "rb") as handle:
        return pq.read_table(handle)


def count_embedded(work: WorkArea, task: int) -> int:
    """How many embeddings the task wrote, from the file's header alone."""
    fs, path = url_filesystem(vectors_url(work, task), work.storage_options)
    with fs.open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, _, _ = np.lib.format.read_array_header_1_0(handle)
        else:
            shape, _, _ = np.lib.format.read_array_header_2_0(handle)
    return int(shape[0])


def load_vectors(work: WorkArea, task: int) -> np.ndarray:
    """The task's embeddings: memory-mapped when local, else read whole."""
    url = vectors_url(work, task)
    if is_local(url):
        return np.load(local_path(url), mmap_mode="r", allow_pickle=False)
    fs, path = url_filesystem(url, work.storage_options)
    with fs.open(path, "rb") as handle:
        return np.load(io.BytesIO(handle.read()), allow_pickle=False)


@dataclass(frozen=True)
class RunLayout:
    """Where each array of a cluster run starts (see the module docstring)."""

    count: int
    clusters: int
    dim: int
    id_bytes: int

    _ARRAYS = (
        ("starts", np.int64),
        ("rows", np.int64),
        ("keys", np.float64),
        ("id_offsets", np.int64),
        ("vectors", np.float32),
        ("ranks", np.int32),
        ("ids", np.uint8),
    )

    def lengths(self) -> dict[str, int]:
        n = self.count
        return {
            "starts": self.clusters + 1,
            "rows": n,
            "keys": n,
            "id_offsets": n + 1,
            "vectors": n * self.dim,
            "ranks": n,
            "ids": self.id_bytes,
        }

    def offsets(self) -> dict[str, int]:
        offsets, at = {}, HEADER
        lengths = self.lengths()
        for name, dtype in self._ARRAYS:
            offsets[name] = at
            at += lengths[name] * np.dtype(dtype).itemsize
        return offsets

    def size(self) -> int:
        lengths = self.lengths()
        return HEADER + sum(lengths[n] * np.dtype(t).itemsize for n, t in self._ARRAYS)

    @classmethod
    def dtype(cls, name: str) -> type:
        return dict(cls._ARRAYS)[name]


def write_run(
    url: str,
    labels: np.ndarray,
    clusters: int,
    rows: np.ndarray,
    keys: np.ndarray,
    ranks: np.ndarray,
    vectors: np.ndarray,
    ids: list[str],
    storage_options: dict[str, Any],
) -> np.ndarray:
    """Sort one task's embedded documents by cluster (then row) and write them as a run;
    return the number of documents in each cluster."""
    order = np.argsort(labels, kind="stable")
    counts = np.bincount(labels, minlength=clusters).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)))
    encoded = [ids[i].encode("utf-8", "surrogatepass") for i in order.tolist()]
    id_offsets = np.concatenate(([0], np.cumsum([len(e) for e in encoded], dtype=np.int64)))
    layout = RunLayout(len(order), clusters, vectors.shape[1], int(id_offsets[-1]))
    arrays = {
        "starts": starts,
        "rows": rows[order],
        "keys": keys[order],
        "id_offsets": id_offsets,
        "vectors": vectors[order],
        "ranks": ranks[order],
    }
    header = orjson.dumps({"format": _MAGIC, **layout.__dict__})
    with atomic_open(url, storage_options) as handle:
        handle.write(header.ljust(HEADER))
        for name, dtype in RunLayout._ARRAYS[:-1]:
            handle.write(np.ascontiguousarray(arrays[name], dtype=dtype).tobytes())
        handle.write(b"".join(encoded))
    return counts


@dataclass(frozen=True)
class RunSlice:
    """The documents of clusters `[low, high)` in one task's run, in cluster order."""

    counts: np.ndarray  # per cluster of the range
    rows: np.ndarray
    keys: np.ndarray
    ranks: np.ndarray
    vectors: np.ndarray
    ids: list[str]


def read_run_slice(url: str, low: int, high: int, storage_options: dict[str, Any]) -> RunSlice:
    """Read clusters `[low, high)` of a run: a few ranged reads, whatever the run's size."""
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        header = orjson.loads(handle.read(HEADER))
        if header.get("format") != _MAGIC:
            raise ValueError(f"{url}: not a semantic dedup run file")
        layout = RunLayout(header["count"], header["clusters"], header["dim"], header["id_bytes"])
        offsets = layout.offsets()

        def read(name: str, start: int, stop: int, width: int = 1) -> np.ndarray:
            dtype = np.dtype(RunLayout.dtype(name))
            handle.seek(offsets[name] + start * width * dtype.itemsize)
            data = handle.read((stop - start) * width * dtype.itemsize)
            return np.frombuffer(data, dtype=dtype)

        starts = read("starts", low, high + 1)
        first, last = int(starts[0]), int(starts[-1])
        id_offsets = read("id_offsets", first, last + 1)
        blob = read("ids", int(id_offsets[0]), int(id_offsets[-1])).tobytes()
        cuts = (id_offsets - id_offsets[0]).tolist()
        ids = [blob[a:b].decode("utf-8", "surrogatepass") for a, b in itertools.pairwise(cuts)]
        return RunSlice(
            counts=np.diff(starts),
            rows=read("rows", first, last),
            keys=read("keys", first, last),
            ranks=read("ranks", first, last),
            vectors=read("vectors", first, last, layout.dim).reshape(-1, layout.dim),
            ids=ids,
        )
