"""`classify`: score documents with a trained classifier; annotate, filter, or keep the top.

Example pipeline steps:

    - classify: {model: models/quality, as: quality_score}                  # annotate
    - classify: {model: models/quality, mode: filter, threshold: 0.5}
    - classify: {model: models/quality, mode: filter, keep_top: 0.1}        # DCLM: top 10%

The score is the probability of `label` (by default the model's positive label) or, for an
embedding model with a regression head, its predicted value; it is stored as the property
`as` on every document kept. `threshold` drops documents scoring below it
(reason `below_threshold`). `keep_top` keeps exactly the top fraction of the whole run
(reason `below_top_fraction` for the others): it needs every score before deciding any, so
it runs as a global stage, with the rule in `top.py`. The model file's hash (and an
embedding model's encoder folder's) is recorded in the run's manifest (see
`Stage.provenance`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import AliasChoices, Field, PrivateAttr

from mixplane.document import RESERVED_COLUMNS, Document, Drop
from mixplane.errors import ConfigError
from mixplane.io.atomic import atomic_open, write_bytes
from mixplane.io.urls import url_filesystem
from mixplane.manifest import read_json
from mixplane.stages.base import Result, Stage
from mixplane.stages.classify.embedding import KIND as EMBEDDING
from mixplane.stages.classify.embedding import EmbeddingClassifier, verified_encoder
from mixplane.stages.classify.model import (
    Classifier,
    check_label,
    load_classifier,
    read_description,
    verified_hash,
)
from mixplane.stages.classify.top import keep_count, tie_winners, top_cut
from mixplane.stages.global_stage import GlobalStage, MergeRun, WorkArea


class _ClassifyOptions(Stage):
    """The options and scoring shared by the local and the run-wide form."""

    name: ClassVar[str] = "classify"

    model: str = Field(description="the model folder (from `mixplane classifier train`)")
    property: str = Field(
        "quality_score",
        validation_alias=AliasChoices("as", "property"),
        description="the property the score is stored as (option `as` or `property`)",
    )
    label: str | None = Field(
        None, description="the label whose probability is the score; default: the positive one"
    )
    mode: Literal["annotate", "filter"] = Field(
        "annotate", description="annotate: keep all, add the score; filter: drop low scores"
    )
    threshold: float | None = Field(None, description="filter: drop scores below this")
    keep_top: float | None = Field(
        None, gt=0.0, le=1.0, description="filter: keep exactly this top fraction of the run"
    )
    batch_size: int | None = Field(
        None,
        ge=1,
        description="documents per fastText call (1024), or texts per encoder batch (32)",
    )

    _classifier: Classifier | EmbeddingClassifier | None = PrivateAttr(None)
    _label: str | None = PrivateAttr(None)

    def model_post_init(self, context: Any) -> None:
        where = f"stage 'classify' (model {self.model!r})"
        if self.mode == "annotate" and (self.threshold is not None or self.keep_top is not None):
            raise ConfigError(f"{where}: threshold and keep_top need mode: filter")
        if self.mode == "filter" and (self.threshold is None) == (self.keep_top is None):
            raise ConfigError(f"{where}: mode filter needs one of threshold or keep_top")
        if self.property in RESERVED_COLUMNS:
            raise ConfigError(f"{where}: 'as' cannot be {self.property!r}, a document column")
        # A missing model or label fails when the pipeline is built, before any work.
        self._label = check_label(self.model, read_description(self.model), self.label)

    def provenance(self) -> dict[str, Any]:
        description = read_description(self.model)
        record = {"model": self.model, "model_sha256": verified_hash(self.model, description)}
        if description["kind"] == EMBEDDING:
            record["encoder"] = description["encoder"]["path"]
            record["encoder_sha256"] = verified_encoder(self.model, description)
        return record

    def node_paths(self) -> list[tuple[str, str, bool]]:
        paths = [(self.model, "classifier model", False)]
        description = read_description(self.model)
        if description["kind"] == EMBEDDING:
            paths.append((description["encoder"]["path"], "text encoder", False))
        return paths

    def setup(self) -> None:
        self._load()

    def _load(self) -> None:
        if self._classifier is None:
            self._classifier = load_classifier(self.model)

    def score_batch(self, docs: list[Document]) -> np.ndarray:
        """The scores of `docs`, in one call to the model: an encoder forms its batches from
        all of them, so the same documents give the same bytes on any number of workers."""
        self._load()
        assert self._classifier is not None
        texts = [doc.text for doc in docs]
        return self._classifier.scores(texts, self._label, batch_size=self.batch_size)


class Classify(_ClassifyOptions):
    """Scores documents one batch at a time: annotate, or filter by `threshold`.

    Example:
        >>> stage = Classify(model="models/quality", mode="filter", threshold=0.5)  # doctest: +SKIP
    """

    def runnable(self) -> Stage:
        if self.keep_top is None:
            return self
        return ClassifyTop(**self.model_dump())

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        results: list[Result] = []
        for doc, score in zip(docs, self.score_batch(docs).tolist(), strict=True):
            if self.threshold is not None and score < self.threshold:
                detail = {self.property: score, "threshold": self.threshold}
                results.append(Drop("below_threshold", detail))
            else:
                doc.metadata[self.property] = score
                results.append(doc)
        return results


SCORES = pa.schema([("id", pa.string()), ("score", pa.float32())])


class ClassifyTop(_ClassifyOptions, GlobalStage):
    """`classify` with `keep_top`: collect every score, cut the run's top fraction, decide.

    Collector: per task, the documents' ids and scores in arrival order. Merge: the cut
    over all scores, and the tied documents it keeps. Decider: the same documents again, in
    the same order, each kept (with its score) or dropped by the cut.
    """

    def setup(self) -> None:
        """Nothing ahead: only the collect phase scores, and it loads the model at its first
        batch; the decide phase, which reads the scores back, never loads it (an encoder
        costs seconds to import and load in every worker)."""

    def collector(self, work: WorkArea, task: int) -> _Collector:
        return _Collector(self, work, task)

    def merge(self, work: WorkArea, tasks: list[int], run: MergeRun) -> dict[str, Any]:
        options = work.storage_options
        tables = [_read_scores(_scores_url(work, task), options) for task in tasks]
        scores = np.concatenate([np.empty(0, np.float32), *(t["score"].to_numpy() for t in tables)])
        assert self.keep_top is not None
        kept = keep_count(self.keep_top, len(scores))
        cut = top_cut(scores, kept)
        winners: dict[int, list[int]] = {}
        if cut.score is not None:
            at_cut = []
            for task, table in zip(tasks, tables, strict=True):
                rows = np.flatnonzero(table["score"].to_numpy() == np.float32(cut.score))
                ids = table["id"].take(pa.array(rows)).to_pylist()
                at_cut.extend(zip(ids, [task] * len(rows), rows.tolist(), strict=True))
            for _, task, row in tie_winners(at_cut, cut.tied):
                winners.setdefault(task, []).append(row)
        decision = {
            "cutoff": cut.score,
            "tied_kept": {str(task): sorted(rows) for task, rows in winners.items()},
        }
        write_bytes(work.url("cut.json"), orjson.dumps(decision), options)
        return {
            "documents": int(len(scores)),
            "kept": kept,
            "cutoff": cut.score,
            "tied_at_cutoff": int(np.count_nonzero(scores == cut.score)) if kept else 0,
        }

    def decider(self, work: WorkArea, task: int) -> _Decider:
        return _Decider(self, work, task)


class _Collector:
    def __init__(self, stage: ClassifyTop, work: WorkArea, task: int):
        self.stage, self.work, self.task = stage, work, task
        self.ids: list[str] = []
        self.scores: list[np.ndarray] = []

    def add(self, docs: list[Document]) -> None:
        self.ids.extend(doc.id for doc in docs)
        self.scores.append(self.stage.score_batch(docs))

    def close(self) -> dict[str, Any]:
        scores = np.concatenate([np.empty(0, np.float32), *self.scores])
        table = pa.Table.from_arrays([pa.array(self.ids, pa.string()), scores], schema=SCORES)
        options = self.work.storage_options
        with atomic_open(_scores_url(self.work, self.task), options) as handle:
            pq.write_table(table, handle, compression="zstd")
        return {"documents": len(self.ids)}


class _Decider:
    """Keeps or drops one task's documents by the cut, counted in collection order."""

    def __init__(self, stage: ClassifyTop, work: WorkArea, task: int):
        options = work.storage_options
        table = _read_scores(_scores_url(work, task), options)
        self.where = _scores_url(work, task)
        self.ids = table["id"].to_pylist()
        self.scores = table["score"].to_numpy().tolist()
        cut = read_json(work.url("cut.json"), options)
        self.cutoff = cut["cutoff"]
        self.tied = set(cut["tied_kept"].get(str(task), []))
        self.property = stage.property
        self.row = 0

    def decide(self, docs: list[Document]) -> list[Result]:
        results: list[Result] = []
        for doc in docs:
            row = self.row
            self.row += 1
            if row >= len(self.ids) or self.ids[row] != doc.id:
                raise ConfigError(
                    f"{self.where}: row {row} does not hold document {doc.id!r}; the "
                    "documents changed since their scores were collected: run again"
                )
            score = self.scores[row]
            cutoff = self.cutoff
            if cutoff is not None and (score > cutoff or (score == cutoff and row in self.tied)):
                doc.metadata[self.property] = score
                results.append(doc)
            else:
                results.append(Drop("below_top_fraction", {self.property: score, "cutoff": cutoff}))
        return results


def _scores_url(work: WorkArea, task: int) -> str:
    return work.url("collect", f"task-{task:05d}.parquet")


def _read_scores(url: str, storage_options: dict[str, Any]) -> pa.Table:
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        return pq.read_table(handle)
