"""`dedup_semantic`: SemDeDup on embeddings from a local encoder folder.

Example pipeline step:

    - dedup_semantic: {encoder: models/minilm, eps: 0.07, keep: longest, prefer_sources: [wiki]}
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field, PrivateAttr, field_validator, model_validator

from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.io.urls import url_filesystem
from mixplane.stages.base import Result
from mixplane.stages.dedup.decisions import read_decisions
from mixplane.stages.dedup.semantic.files import (
    collected_url,
    count_embedded,
    write_collected,
)
from mixplane.stages.dedup.semantic.keep import KeepRule
from mixplane.stages.dedup.semantic.kmeans import sample_rows, single_threaded, spherical_kmeans
from mixplane.stages.dedup.semantic.merge import (
    DECISIONS,
    MergeContext,
    assign_task,
    decisions_url,
    dedup_unit,
    in_process,
    plan_units,
    sample_task,
    save_centroids,
    summary_of,
    write_decisions,
)
from mixplane.stages.embed.encoder import Encoder, folder_sha256, load_encoder, read_settings
from mixplane.stages.global_stage import GlobalStage, MergeRun, WorkArea

DEFAULT_EPS = 0.1
EMBED_CHUNK = 1024  # documents embedded per call: fixed by position, so the bytes are too
PARALLEL_DOCS = 1 << 16  # below this many embeddings, the merge runs in this process


class SemanticDedup(GlobalStage):
    """Removes semantic duplicates as SemDeDup (Abbas et al. 2023) does.

    Every document with text is embedded by the encoder in `encoder` (a local
    sentence-transformers or Hugging Face folder; texts cut at its token limit). The
    embeddings are clustered by seeded spherical k-means into `clusters` clusters (default:
    the square root of the number of documents, rounded up). Within each cluster the
    documents are ordered by `prefer_sources`, then by the `keep` rule (default `farthest`
    from the centroid, the paper's), then by id; a document goes when its cosine similarity
    to one before it is above `threshold` (or `1 - eps`; default eps 0.1). It is excluded
    with reason `semantic_duplicate`, the id of its group's survivor in `duplicate_of`, the
    document it is most similar to in `similar_to` and that `similarity`; survivors of a
    group get `semdup_cluster_id` (their own id) and `semdup_cluster_size`. Documents with
    empty text are not compared and pass.

    Example:
        >>> SemanticDedup(encoder=MODEL, eps=0.05).cut()  # doctest: +SKIP
        0.95
    """

    name: ClassVar[str] = "dedup_semantic"
    adds: ClassVar[tuple[str, ...]] = ("semdup_cluster_id", "semdup_cluster_size")

    encoder: str = Field(description="folder of a sentence-transformers or Hugging Face encoder")
    clusters: int | None = Field(
        None, ge=1, description="k-means clusters (default: sqrt of the documents, rounded up)"
    )
    threshold: float | None = Field(
        None, gt=0, lt=1, description="cosine similarity above which a document is removed"
    )
    eps: float | None = Field(
        None, gt=0, lt=1, description=f"or threshold = 1 - eps (default eps {DEFAULT_EPS})"
    )
    keep: str = Field(
        "farthest",
        description="which of a group is kept: farthest or nearest (to the k-means centroid), "
        "longest, or highest:PROPERTY",
    )
    prefer_sources: list[str] = Field(
        default_factory=list, description="sources whose documents are kept first, best first"
    )
    batch_size: int = Field(64, ge=1, description="texts per encoder batch")
    max_length: int | None = Field(
        None, ge=1, description="tokens embedded per text (default: the encoder's limit)"
    )
    seed: int = Field(0, ge=0, description="seed of the k-means sample and start")
    max_iter: int = Field(25, ge=1, description="k-means iterations at most")

    _rule: KeepRule = PrivateAttr()

    @field_validator("keep")
    @classmethod
    def _valid_keep(cls, value: str) -> str:
        KeepRule.parse(value)
        return value

    @model_validator(mode="after")
    def _one_cut(self) -> SemanticDedup:
        if self.threshold is not None and self.eps is not None:
            raise ValueError("give threshold or eps, not both")
        return self

    def model_post_init(self, context: Any) -> None:
        self._rule = KeepRule.parse(self.keep)
        read_settings(self.encoder)  # a missing or broken folder fails before any work

    def cut(self) -> float:
        """The cosine similarity a document must exceed to be removed."""
        if self.threshold is not None:
            return self.threshold
        return 1.0 - (DEFAULT_EPS if self.eps is None else self.eps)

    def provenance(self) -> dict[str, Any]:
        return {"encoder": self.encoder, "encoder_sha256": folder_sha256(self.encoder)}

    def node_paths(self) -> list[tuple[str, str, bool]]:
        return [(self.encoder, "text encoder", False)]

    def load(self) -> Encoder:
        return load_encoder(self.encoder, max_length=self.max_length)

    def collector(self, work: WorkArea, task: int) -> _Collector:
        return _Collector(self, work, task)

    def decider(self, work: WorkArea, task: int) -> _Decider:
        return _Decider(self, work, task)

    def merge(self, work: WorkArea, tasks: list[int], run: MergeRun) -> dict[str, Any]:
        counts = {task: count_embedded(work, task) for task in tasks}
        documents = sum(_documents(work, task) for task in tasks)
        total = sum(counts.values())
        chosen = tuple(task for task in tasks if counts[task])
        context = MergeContext(work, chosen, self._rule, tuple(self.prefer_sources), self.cut())
        k = min(self.clusters or math.ceil(math.sqrt(total)), total)
        mapper = run.map if total >= PARALLEL_DOCS else in_process
        sizes_by_task = [counts[task] for task in chosen]
        points = _training_sample(sizes_by_task, k, self.seed, context)
        with single_threaded():
            kmeans = spherical_kmeans(points, k, self.seed, self.max_iter)
        context = replace(context, centroids=save_centroids(work, kmeans.centroids))
        sizes = np.zeros(k, dtype=np.int64)
        for task_sizes in mapper(assign_task, list(chosen), context):
            sizes += task_sizes
        results = mapper(dedup_unit, plan_units(sizes), context)
        members = pa.concat_tables([DECISIONS.empty_table(), *(r.members for r in results)])
        write_decisions(work, members)
        return {
            "documents": documents,
            "embedded": total,
            "threshold": self.cut(),
            "kmeans_clusters": k,
            "kmeans_sample": len(points),
            "kmeans_iterations": kmeans.iterations,
            "kmeans_empty_clusters": kmeans.empty,
            **summary_of(results),
        }


def _training_sample(
    sizes: list[int], clusters: int, seed: int, context: MergeContext
) -> np.ndarray:
    """The embeddings k-means trains on (`kmeans.sample_rows` over all tasks' embeddings,
    in task order), read task by task into one array (so the sample is held once)."""
    sample = sample_rows(sum(sizes), clusters, seed)
    offsets = np.cumsum([0, *sizes])
    points = np.empty((0, 0), dtype=np.float32)
    for number, task in enumerate(context.tasks):
        low, high = np.searchsorted(sample, offsets[number : number + 2])
        if high == low:
            continue
        part = sample_task((task, sample[low:high] - offsets[number]), context)
        if not len(points):
            points = np.empty((len(sample), part.shape[1]), dtype=np.float32)
        points[low:high] = part
    return points


def _documents(work: WorkArea, task: int) -> int:
    fs, path = url_filesystem(collected_url(work, task), work.storage_options)
    with fs.open(path, "rb") as handle:
        return pq.read_metadata(handle).num_rows


class _Collector:
    """Embeds one task's documents in chunks fixed by position and writes them."""

    def __init__(self, stage: SemanticDedup, work: WorkArea, task: int):
        self.stage, self.work, self.task = stage, work, task
        self.ids: list[str] = []
        self.sources: list[str] = []
        self.keys: list[float] = []
        self.embedded: list[bool] = []
        self.pending: list[str] = []
        self.vectors: list[np.ndarray] = []

    def add(self, docs: list[Document]) -> None:
        rule = self.stage._rule
        for doc in docs:
            has_text = bool(doc.text.strip())
            self.ids.append(doc.id)
            self.sources.append(doc.source)
            self.keys.append(rule.value(doc))
            self.embedded.append(has_text)
            if has_text:
                self.pending.append(doc.text)
                if len(self.pending) == EMBED_CHUNK:
                    self._embed()

    def _embed(self) -> None:
        if self.pending:
            encoder = self.stage.load()
            self.vectors.append(encoder.embed(self.pending, batch_size=self.stage.batch_size))
            self.pending = []

    def close(self) -> dict[str, Any]:
        self._embed()
        dim = self.vectors[0].shape[1] if self.vectors else 0
        vectors = np.concatenate([np.empty((0, dim), np.float32), *self.vectors])
        table = pa.table(
            {
                "id": pa.array(self.ids, pa.string()),
                "source": pa.array(self.sources, pa.string()),
                "key": pa.array(self.keys, pa.float64()),
                "embedded": pa.array(self.embedded, pa.bool_()),
            }
        )
        write_collected(self.work, self.task, table, vectors)
        return {"documents": len(self.ids), "embedded": len(vectors)}


class _Decider:
    """Applies the merge's decisions to one task's documents, counted in collection order."""

    def __init__(self, stage: SemanticDedup, work: WorkArea, task: int):
        self.where = decisions_url(work)
        self.row = 0
        self.decisions = read_decisions(self.where, task, work.storage_options, DECISIONS)

    def decide(self, docs: list[Document]) -> list[Result]:
        results: list[Result] = []
        for doc in docs:
            decision = self.decisions.get(self.row)
            self.row += 1
            if decision is None:
                doc.metadata["semdup_cluster_id"] = doc.id
                doc.metadata["semdup_cluster_size"] = 1
                results.append(doc)
                continue
            doc_id, duplicate, survivor, size, similar_to, similarity = decision
            if doc_id != doc.id:
                raise ConfigError(
                    f"{self.where}: row {self.row - 1} does not hold document {doc.id!r}; the "
                    "documents changed since they were collected: run again"
                )
            if duplicate:
                detail = {
                    "duplicate_of": survivor,
                    "cluster_size": size,
                    "similar_to": similar_to,
                    "similarity": round(similarity, 6),
                }
                results.append(Drop("semantic_duplicate", detail))
                continue
            doc.metadata["semdup_cluster_id"] = survivor
            doc.metadata["semdup_cluster_size"] = size
            results.append(doc)
        return results
