"""The merge's verdicts, one Parquet file for all tasks with one row group per task.

A row names a clustered document by its task and row (its position among the documents the
task collected), whether it is a duplicate, whether its survivor came from the persistent
index, the survivor's id and the cluster's size. Documents in no cluster have no row.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.io.atomic import atomic_open
from mixplane.io.urls import url_filesystem
from mixplane.stages.dedup.candidates import MergePlan
from mixplane.stages.dedup.clusters import Clusters, Members

SCHEMA = pa.schema(
    [
        ("task", pa.int64()),
        ("row", pa.int64()),
        ("duplicate", pa.bool_()),
        ("in_index", pa.bool_()),
        ("survivor_id", pa.string()),
        ("cluster_size", pa.int64()),
    ]
)


def write_decisions(
    url: str,
    tasks: list[int],
    plan: MergePlan,
    members: Members,
    clusters: Clusters,
    storage_options: dict[str, Any],
) -> dict[int, np.ndarray]:
    """Write every task's decisions; return each task's duplicate rows."""
    offsets = plan.offsets
    fresh = np.flatnonzero(members.nodes < plan.new_documents)
    run_of = np.searchsorted(offsets, members.nodes[fresh], side="right") - 1
    dropped: dict[int, np.ndarray] = {}
    with (
        atomic_open(url, storage_options) as handle,
        pq.ParquetWriter(handle, SCHEMA, compression="zstd") as writer,
    ):
        writer.write_table(SCHEMA.empty_table())
        for number in np.unique(run_of).tolist():
            chosen = fresh[run_of == number]
            rows = members.nodes[chosen] - offsets[number]
            survivor = clusters.survivor[chosen]
            duplicate = survivor != chosen
            columns = [
                np.full(len(rows), tasks[number]),
                rows,
                duplicate,
                members.in_index[survivor],
                members.ids.take(pa.array(survivor)),
                clusters.size[chosen],
            ]
            writer.write_table(pa.Table.from_arrays(columns, schema=SCHEMA))
            dropped[tasks[number]] = rows[duplicate]
    return dropped


def read_decisions(
    url: str, task: int, storage_options: dict[str, Any], schema: pa.Schema = SCHEMA
) -> dict[int, tuple]:
    """One task's decisions by row: the columns after `task` and `row` of `schema` (here:
    duplicate, in_index, survivor id, cluster size). The file holds one row group per task,
    or several: any row group whose `task` range holds `task` is read."""
    fs, path = url_filesystem(url, storage_options)
    decisions: dict[int, tuple] = {}
    with fs.open(path, "rb") as handle:
        parquet = pq.ParquetFile(handle)
        for group in range(parquet.metadata.num_row_groups):
            statistics = parquet.metadata.row_group(group).column(0).statistics
            if statistics is None or not statistics.has_min_max:
                continue
            if not statistics.min <= task <= statistics.max:
                continue
            table = parquet.read_row_group(group)
            columns = [table[name].to_pylist() for name in schema.names]
            for owner, row, *decision in zip(*columns, strict=True):
                if owner == task:
                    decisions[row] = tuple(decision)
    return decisions
