"""What exact and near-duplicate removal share: a global stage over per-document keys.

A subclass says how to turn documents into keys (`fingerprint`): one 128-bit hash for exact
dedup, one 64-bit key per LSH band for MinHash. Documents sharing a key in any band are
candidate duplicates; candidates may be verified on their signatures; clusters are the
connected components; each keeps one survivor. Decisions are written per task, and the
documents are then filtered in the same order they were collected.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field

from mixplane.document import Document, Drop
from mixplane.io.atomic import is_local
from mixplane.io.urls import url_filesystem
from mixplane.stages.base import Result
from mixplane.stages.dedup import runs as run_files
from mixplane.stages.dedup.candidates import (
    RECHECK_WINDOW,
    MergePlan,
    agreeing,
    find_candidates,
    find_rechecks,
    parts_for,
    signatures_of,
    subtract_pairs,
    unique_pairs,
)
from mixplane.stages.dedup.clusters import (
    Clusters,
    Members,
    choose_survivors,
    components,
    split_into_stars,
)
from mixplane.stages.dedup.decisions import read_decisions, write_decisions
from mixplane.stages.dedup.index import DedupIndex, write_index_run
from mixplane.stages.dedup.runs import Run, read_ids, run_layout, write_run
from mixplane.stages.global_stage import GlobalStage, MergeRun, WorkArea

KEYS_PER_UNIT = 1 << 22  # keys of one band sorted together in a merge unit (~100 MB)
VERIFY_CHUNK = 1 << 18  # candidate pairs verified per task
PARALLEL_KEYS = 1 << 20  # below this many keys, merging in-process beats starting workers


class DedupStage(GlobalStage):
    """Base of `dedup_exact` and `dedup_minhash`; see the module docstring."""

    prefer_sources: list[str] = Field(
        default_factory=list,
        description="sources whose documents survive first, best first; then the lowest id",
    )
    index: str | None = Field(
        None, description="folder of a persistent index: drop duplicates of earlier runs too"
    )

    #: Stored key width in 64-bit words.
    key_width: ClassVar[int] = 1
    #: Whether survivors get `dup_cluster_id` and `dup_cluster_size`.
    cluster_metadata: ClassVar[bool] = False
    #: Whether every duplicate must pass verification against its survivor itself, not
    #: only through a chain of pairs (see `clusters.split_into_stars`).
    direct_survivors: ClassVar[bool] = False

    def node_paths(self) -> list[tuple[str, str, bool]]:
        # The merge's tasks write the index's new generation, on any node.
        return [(self.index, "dedup index", True)] if self.index else []

    def band_count(self) -> int:
        return 1

    def verify_cutoff(self) -> float | None:
        """Share of equal signature values a candidate pair needs; None: no verification."""
        return None

    def recheck_window(self) -> int:
        """Neighbours on each side a document that failed verification against its group's
        smallest node is verified against (see `candidates`); larger costs more pairs."""
        return RECHECK_WINDOW

    def index_params(self) -> dict[str, Any]:
        """Everything the stored keys depend on."""
        raise TypeError(f"{type(self).__name__} must implement index_params()")

    def fingerprint(self, docs: list[Document]) -> tuple[np.ndarray, np.ndarray, Any]:
        """Keys `(n, bands, key_width)` uint64, which documents have keys, and signatures
        `(n, hashes)` uint32 or None."""
        raise TypeError(f"{type(self).__name__} must implement fingerprint()")

    def collector(self, work: WorkArea, task: int) -> _Collector:
        return _Collector(self, work, task)

    def decider(self, work: WorkArea, task: int) -> _Decider:
        return _Decider(self, work, task)

    def merge(self, work: WorkArea, tasks: list[int], run: MergeRun) -> dict[str, Any]:
        options = work.storage_options
        scope = uuid.uuid4().hex  # this merge, for the runs processes keep (`load_arrays`)
        task_runs = [_task_run(work, task, scope) for task in tasks]
        index = DedupIndex(self.index, self.index_params(), options) if self.index else None
        index_runs = index.runs(excluding=run.run_id) if index else []
        runs = task_runs + index_runs
        keys = sum(r.keyed for r in runs)
        documents = sum(r.documents for r in task_runs)
        plan = MergePlan(
            tuple(runs),
            documents,
            self.band_count(),
            parts_for(keys, KEYS_PER_UNIT),
            self.verify_cutoff(),
            options,
            window=self.recheck_window(),
            scope=scope,
            ranged=_read_by_ranges(runs, options, scope),
        )
        parallel = keys * self.band_count() >= PARALLEL_KEYS
        mapper = run.map if parallel else _in_process
        pairs = unique_pairs(mapper(find_candidates, plan.units(), plan))
        candidates = pairs.shape[1]
        rechecked = 0
        if plan.cutoff is not None and candidates:
            passed = _verify(pairs, plan, mapper)
            # Documents that failed against a group's smallest node get a second look at
            # their other neighbours in the group (see `candidates`).
            failed = np.unique(pairs[1, ~passed])
            if len(failed):
                second = replace(plan, rechecked=failed)
                extra = unique_pairs(mapper(find_rechecks, plan.units(), second))
                extra = subtract_pairs(extra, pairs)
                rechecked = extra.shape[1]
                pairs = np.concatenate(
                    (pairs[:, passed], extra[:, _verify(extra, plan, mapper)]), 1
                )
            else:
                pairs = pairs[:, passed]
        nodes, roots = components(pairs)
        members = self._members(nodes, roots, plan)
        clusters = choose_survivors(members)
        split = 0
        if self.direct_survivors and plan.cutoff is not None:
            clusters, split = _without_chains(members, clusters, plan, mapper)
        url = _decisions_url(work)
        dropped = write_decisions(url, tasks, plan, members, clusters, options)
        if index is not None:
            items = [
                (task_run, index.run_prefix(run.run_id, task), dropped.get(task, _NONE))
                for task, task_run in zip(tasks, task_runs, strict=True)
            ]
            index.commit(run.run_id, mapper(write_index_run, items, options))
        fresh = nodes < documents
        survivors = clusters.survivor[fresh]
        return {
            "documents": documents,
            "index_documents": sum(r.documents for r in index_runs),
            "candidate_pairs": int(candidates),
            "rechecked_pairs": int(rechecked),
            "verified_pairs": int(pairs.shape[1]),
            "clusters": int(len(np.unique(survivors))),
            "split_clusters": split,
            "duplicates": int((survivors != np.flatnonzero(fresh)).sum()),
            "duplicates_of_index": int(members.in_index[survivors].sum()),
            "units": len(plan.units()),
            "read_by_ranges": plan.ranged,
        }

    def _members(self, nodes: np.ndarray, roots: np.ndarray, plan: MergePlan) -> Members:
        offsets = plan.offsets
        run_of = np.searchsorted(offsets, nodes, side="right") - 1
        ids, sources = [], []
        for number in np.unique(run_of).tolist():
            rows = nodes[run_of == number] - offsets[number]
            table = read_ids(plan.runs[number], plan.storage_options).take(rows)
            ids.append(table["id"])
            sources.append(table["source"])
        id_array = pa.chunked_array([c for a in ids for c in a.chunks], type=pa.string())
        source_list = [s for a in sources for s in a.to_pylist()]
        preference = {source: rank for rank, source in enumerate(self.prefer_sources)}
        ranks = np.array([preference.get(s, len(preference)) for s in source_list], np.int64)
        return Members(nodes, roots, id_array, ranks, nodes >= plan.new_documents)


_NONE = np.empty(0, dtype=np.int64)


def _without_chains(
    members: Members, clusters: Clusters, plan: MergePlan, mapper
) -> tuple[Clusters, int]:
    """The clusters with every component where a duplicate fails verification against its
    survivor redrawn as stars; and how many components were redrawn."""
    positions = np.arange(len(members.nodes))
    duplicates = np.flatnonzero((clusters.survivor != positions) & ~members.in_index)
    pairs = np.stack((members.nodes[clusters.survivor[duplicates]], members.nodes[duplicates]))
    far = duplicates[~_verify(pairs, plan, mapper)]
    if not len(far):
        return clusters, 0
    roots = np.unique(members.roots[far])
    chosen = np.flatnonzero(np.isin(members.roots, roots))
    signatures = signatures_of(members.nodes[chosen], plan)
    stars = split_into_stars(members, clusters, chosen, signatures, plan.cutoff)
    return stars, len(roots)


def _verify(pairs: np.ndarray, plan: MergePlan, mapper) -> np.ndarray:
    """Whether each pair passes verification, checked in chunks."""
    chunks = [pairs[:, i : i + VERIFY_CHUNK] for i in range(0, pairs.shape[1], VERIFY_CHUNK)]
    return np.concatenate([np.empty(0, dtype=bool), *mapper(agreeing, chunks, plan)])


def _in_process(function, items: list, context) -> list:
    return [function(item, context) for item in items]


def _task_run(work: WorkArea, task: int, scope: str) -> Run:
    prefix = work.url("collect", f"task-{task:05d}")
    probe = Run(prefix, 0, 0)
    fs, path = url_filesystem(probe.url("ids"), work.storage_options)
    with fs.open(path, "rb") as handle:
        documents = pq.read_metadata(handle).num_rows
    keyed = run_layout(probe.url("run"), work.storage_options, scope).shapes["keys"][2]
    return Run(prefix, documents, keyed)


def _read_by_ranges(runs: list[Run], options: dict[str, Any], scope: str) -> bool:
    """Whether a merge reads its runs by ranges: when they are remote and more than a
    process keeps downloaded (whole downloads would then be repeated for every unit)."""
    remote = [run.url("run") for run in runs if not is_local(run.url("run"))]
    total = sum(run_layout(url, options, scope).size for url in remote)
    return total > run_files.REMOTE_CACHE_BYTES


def _decisions_url(work: WorkArea) -> str:
    return work.url("decisions.parquet")


class _Collector:
    """Fingerprints one task's documents and writes them as a sorted run."""

    def __init__(self, stage: DedupStage, work: WorkArea, task: int):
        self.stage, self.work, self.task = stage, work, task
        self.keys: list[np.ndarray] = []
        self.keyed: list[np.ndarray] = []
        self.signatures: list[np.ndarray] = []
        self.ids: list[str] = []
        self.sources: list[str] = []

    def add(self, docs: list[Document]) -> None:
        if not docs:
            return
        keys, keyed, signatures = self.stage.fingerprint(docs)
        self.keys.append(keys)
        self.keyed.append(keyed)
        if signatures is not None:
            self.signatures.append(signatures)
        self.ids.extend(doc.id for doc in docs)
        self.sources.extend(doc.source for doc in docs)

    def close(self) -> dict[str, Any]:
        stage = self.stage
        empty_keys = np.empty((0, stage.band_count(), stage.key_width), dtype=np.uint64)
        keys = np.concatenate([empty_keys, *self.keys])
        keyed = np.concatenate([np.empty(0, dtype=bool), *self.keyed])
        signatures = np.concatenate(self.signatures) if self.signatures else None
        prefix = self.work.url("collect", f"task-{self.task:05d}")
        options = self.work.storage_options
        run = write_run(prefix, keys, keyed, self.ids, self.sources, signatures, options)
        return {"documents": run.documents, "keyed": run.keyed}


class _Decider:
    """Applies the merge's decisions to one task's documents, counted in collection order."""

    def __init__(self, stage: DedupStage, work: WorkArea, task: int):
        self.name = stage.stage_name()
        self.metadata = stage.cluster_metadata
        self.row = 0
        self.decisions = read_decisions(_decisions_url(work), task, work.storage_options)

    def decide(self, docs: list[Document]) -> list[Result]:
        results: list[Result] = []
        for doc in docs:
            decision = self.decisions.get(self.row)
            self.row += 1
            if decision is None:
                if self.metadata:
                    doc.metadata["dup_cluster_id"] = doc.id
                    doc.metadata["dup_cluster_size"] = 1
                results.append(doc)
                continue
            duplicate, in_index, survivor, size = decision
            if duplicate:
                reason = "duplicate_in_index" if in_index else "duplicate"
                detail = {"duplicate_of": survivor}
                if not in_index:
                    detail["cluster_size"] = size
                results.append(Drop(reason, detail))
                continue
            if self.metadata:
                doc.metadata["dup_cluster_id"] = survivor
                doc.metadata["dup_cluster_size"] = size
            results.append(doc)
        return results
