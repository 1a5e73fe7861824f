"""The merge of `dedup_semantic`, in four steps over the tasks' work files (`files.py`):

1. `sample_task`: read the k-means training sample (`kmeans.sample_rows`), task by task;
2. `kmeans.spherical_kmeans` on it, once;
3. `assign_task`: every task's embeddings to their nearest centroid, written sorted by
   cluster as the task's run, per task;
4. `dedup_unit`: per range of clusters holding at most `UNIT_DOCS` documents (one cluster,
   if larger), each cluster's members from every run, ordered by the keep rule, through the
   paper's rule (`rule.py`); the members of every group of two or more come back.

Steps 3 and 4 run through the run's executor when the corpus is large (`PARALLEL_DOCS`),
else in this process; every product runs single-threaded, in blocks fixed by the data.

Example:
    >>> plan_units(np.array([3, 4, 0, 9, 2]), limit=8)
    [(0, 3), (3, 4), (4, 5)]
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mixplane.io.atomic import atomic_open, write_bytes
from mixplane.io.urls import url_filesystem
from mixplane.stages.dedup.semantic.files import (
    load_vectors,
    read_collected,
    read_run_slice,
    run_url,
    write_run,
)
from mixplane.stages.dedup.semantic.keep import KeepRule
from mixplane.stages.dedup.semantic.kmeans import nearest_centroids, single_threaded
from mixplane.stages.dedup.semantic.rule import earlier_neighbours
from mixplane.stages.global_stage import WorkArea

UNIT_DOCS = 1 << 16  # documents a merge unit compares, cluster by cluster (~100 MB at 384 dims)

DECISIONS = pa.schema(
    [
        ("task", pa.int64()),
        ("row", pa.int64()),
        ("id", pa.string()),
        ("duplicate", pa.bool_()),
        ("survivor_id", pa.string()),
        ("cluster_size", pa.int64()),
        ("similar_to", pa.string()),
        ("similarity", pa.float32()),
    ]
)


@dataclass(frozen=True)
class MergeContext:
    """What every mapped step needs: the work folder, the tasks with embeddings, and the
    options; once trained, the digest of the centroids (`save_centroids`): every worker
    reads them from the work folder once, rather than with every task it is sent."""

    work: WorkArea
    tasks: tuple[int, ...]
    keep: KeepRule
    prefer_sources: tuple[str, ...]
    threshold: float
    centroids: str = ""


_CENTROIDS: dict[tuple[str, str], np.ndarray] = {}


def save_centroids(work: WorkArea, centroids: np.ndarray) -> str:
    """Write the trained centroids; return their digest, which names them in `MergeContext`."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(centroids, dtype=np.float32), allow_pickle=False)
    write_bytes(work.url("centroids.npy"), buffer.getvalue(), work.storage_options)
    return hashlib.sha256(buffer.getvalue()).hexdigest()


def load_centroids(context: MergeContext) -> np.ndarray:
    url = context.work.url("centroids.npy")
    key = (url, context.centroids)
    if key not in _CENTROIDS:
        if len(_CENTROIDS) > 8:
            _CENTROIDS.clear()
        fs, path = url_filesystem(url, context.work.storage_options)
        with fs.open(path, "rb") as handle:
            data = handle.read()
        if hashlib.sha256(data).hexdigest() != context.centroids:
            raise RuntimeError(f"{url}: not the centroids this merge trained")
        _CENTROIDS[key] = np.load(io.BytesIO(data), allow_pickle=False)
    return _CENTROIDS[key]


def sample_task(item: tuple[int, np.ndarray], context: MergeContext) -> np.ndarray:
    """The rows `item[1]` (positions among the task's embeddings) of task `item[0]`."""
    task, rows = item
    return np.array(load_vectors(context.work, task)[rows], dtype=np.float32)


def assign_task(task: int, context: MergeContext) -> np.ndarray:
    """Write the task's run (documents sorted by nearest centroid); return the number of its
    documents in each cluster."""
    table = read_collected(context.work, task)
    rows = np.flatnonzero(table["embedded"].to_numpy(zero_copy_only=False))
    vectors = load_vectors(context.work, task)
    centroids = load_centroids(context)
    with single_threaded():
        labels, similarity = nearest_centroids(vectors, centroids)
    keep = context.keep
    if keep.uses_centroid:
        keys = keep.centroid_key(similarity)
    else:
        keys = table["key"].to_numpy(zero_copy_only=False)[rows]
    preference = {source: rank for rank, source in enumerate(context.prefer_sources)}
    sources = table["source"].take(pa.array(rows)).to_pylist()
    ranks = np.array([preference.get(s, len(preference)) for s in sources], dtype=np.int32)
    ids = table["id"].take(pa.array(rows)).to_pylist()
    return write_run(
        run_url(context.work, task),
        labels,
        len(centroids),
        rows,
        keys,
        ranks,
        vectors,
        ids,
        context.work.storage_options,
    )


def plan_units(sizes: np.ndarray, limit: int = UNIT_DOCS) -> list[tuple[int, int]]:
    """Consecutive ranges of clusters `[low, high)` holding at most `limit` documents each
    (a larger cluster alone); empty clusters join their neighbours."""
    units: list[tuple[int, int]] = []
    low, held = 0, 0
    for cluster, size in enumerate(sizes.tolist()):
        if held and held + size > limit:
            units.append((low, cluster))
            low, held = cluster, 0
        held += size
    if len(sizes):
        units.append((low, len(sizes)))
    return units


@dataclass(frozen=True)
class UnitResult:
    """The members of every group of two or more, and counts."""

    members: pa.Table
    compared_pairs: int
    similar_pairs: int
    largest: int


def dedup_unit(unit: tuple[int, int], context: MergeContext) -> UnitResult:
    """Apply the rule to every cluster of the range `unit`, members from every task."""
    low, high = unit
    options = context.work.storage_options
    slices = [read_run_slice(run_url(context.work, t), low, high, options) for t in context.tasks]
    starts = [np.concatenate(([0], np.cumsum(s.counts))) for s in slices]
    tables: list[pa.Table] = [DECISIONS.empty_table()]
    compared = similar = largest = 0
    with single_threaded():
        for cluster in range(high - low):
            parts = [
                (task, part, int(first[cluster]), int(first[cluster + 1]))
                for task, part, first in zip(context.tasks, slices, starts, strict=True)
                if first[cluster + 1] > first[cluster]
            ]
            size = sum(stop - start for _, _, start, stop in parts)
            largest = max(largest, size)
            if size < 2:
                continue
            compared += size * (size - 1) // 2
            members = pa.table(
                {
                    "rank": np.concatenate([p.ranks[a:b] for _, p, a, b in parts]),
                    "key": np.concatenate([p.keys[a:b] for _, p, a, b in parts]),
                    "id": pa.array([i for _, p, a, b in parts for i in p.ids[a:b]], pa.string()),
                    "task": np.concatenate([np.full(b - a, t) for t, _, a, b in parts]),
                    "row": np.concatenate([p.rows[a:b] for _, p, a, b in parts]),
                }
            )
            order = pc.sort_indices(
                members,
                sort_keys=[(n, "ascending") for n in ("rank", "key", "id", "task", "row")],
            ).to_numpy()
            vectors = np.concatenate([p.vectors[a:b] for _, p, a, b in parts])[order]
            verdict = earlier_neighbours(vectors, context.threshold)
            similar += verdict.similar_pairs
            grouped = np.flatnonzero(verdict.size >= 2)
            if not len(grouped):
                continue
            ordered = members.take(pa.array(order))
            ids = ordered["id"]
            removed = verdict.removed[grouped]
            parent = np.where(removed, verdict.parent[grouped], 0)
            tables.append(
                pa.Table.from_arrays(
                    [
                        ordered["task"].take(pa.array(grouped)).cast(pa.int64()),
                        ordered["row"].take(pa.array(grouped)).cast(pa.int64()),
                        ids.take(pa.array(grouped)),
                        pa.array(removed),
                        ids.take(pa.array(verdict.root[grouped])),
                        pa.array(verdict.size[grouped].astype(np.int64)),
                        pc.if_else(pa.array(removed), ids.take(pa.array(parent)), _NO_ID),
                        pa.array(verdict.similarity[grouped], pa.float32(), mask=~removed),
                    ],
                    schema=DECISIONS,
                )
            )
    return UnitResult(pa.concat_tables(tables), compared, similar, largest)


_NO_ID = pa.scalar(None, pa.string())


def in_process(function, items: list, context) -> list:
    return [function(item, context) for item in items]


def decisions_url(work: WorkArea) -> str:
    return work.url("decisions.parquet")


def write_decisions(work: WorkArea, members: pa.Table) -> None:
    """All group members' decisions, sorted by task and row, one row group per task."""
    members = members.sort_by([("task", "ascending"), ("row", "ascending")])
    tasks = members["task"].to_numpy()
    cuts = np.flatnonzero(np.r_[True, tasks[1:] != tasks[:-1], True]) if len(tasks) else []
    with (
        atomic_open(decisions_url(work), work.storage_options) as handle,
        pq.ParquetWriter(handle, DECISIONS, compression="zstd") as writer,
    ):
        writer.write_table(DECISIONS.empty_table())
        for start, stop in zip(cuts[:-1], cuts[1:], strict=True):
            writer.write_table(members.slice(start, stop - start))


def summary_of(results: list[UnitResult]) -> dict[str, Any]:
    """Counts over all units for the run's statistics."""
    members = pa.concat_tables([r.members for r in results]) if results else None
    duplicates = int(pc.sum(members["duplicate"]).as_py() or 0) if members is not None else 0
    groups = len(members) - duplicates if members is not None else 0
    return {
        "compared_pairs": sum(r.compared_pairs for r in results),
        "similar_pairs": sum(r.similar_pairs for r in results),
        "largest_kmeans_cluster": max((r.largest for r in results), default=0),
        "clusters": groups,
        "duplicates": duplicates,
    }
