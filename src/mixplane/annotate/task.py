"""Scoring one task's shards and writing their column files: the unit of work executors run.

A task is the shards one tokenize task made (one input file): with the parts as the text
source, that file is read once, in order, and its documents handed to its shards; with the
tokens, each shard is decoded a batch at a time. Each shard's scores become one Parquet file,
`STEM.parquet`, holding only the new column, one row per document in the shard's order.
Scores depend only on the texts and the model, so the files' bytes do not depend on the
number of workers or on the batch size.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from mixplane.annotate.texts import PARTS, PartDocuments, TextSource, shard_group, shard_ids
from mixplane.catalog.columns import COLUMN_SUFFIX
from mixplane.document import Document
from mixplane.errors import MixplaneError
from mixplane.io.atomic import join_url, write_bytes
from mixplane.process.tasks import InputFile
from mixplane.stages.classify.stage import Classify
from mixplane.store.format import META
from mixplane.store.writer import META_ROW_GROUP

COLUMN_TYPE = "DOUBLE"  # as the classify stage stores a score (a float32 widened exactly)


@dataclass(frozen=True)
class AnnotateTask:
    """The shards (stems, in the version's order) one input file became; `part` is that
    file when the text comes from the parts."""

    index: int
    stems: tuple[str, ...]
    documents: int
    part: InputFile | None = None


@dataclass(frozen=True)
class AnnotateContext:
    """What every task needs; picklable, sent once to each worker."""

    uri: str
    fingerprint: str  # of the version scored
    folder: str
    column: str
    classifier: str
    model_sha256: str
    label: str | None
    batch_size: int
    text: TextSource
    bos: bool  # whether every document's tokens start with a BOS (dropped when decoding)
    eos: bool
    storage_options: dict[str, Any]
    threads: int | None  # tokenizer threads: 1 when workers run side by side


_SCORERS: dict[tuple, Classify] = {}


def scorer(
    classifier: str, column: str, label: str | None, batch_size: int, model_sha256: str = ""
) -> Classify:
    """The classify stage that scores for annotate, once per process: the same path (model
    folder checks, loading, batching, `scores(texts)`) as a pipeline's `classify` stage.
    `model_sha256` tells a model replaced in the same folder from the one loaded before.

    Example:
        >>> scorer("models/quality", "quality", None, 1024).score_batch(docs)  # doctest: +SKIP
        array([0.91, 0.08], dtype=float32)
    """
    key = (classifier, column, label, batch_size, model_sha256)
    if key not in _SCORERS:
        _SCORERS.clear()  # one model held per process
        _SCORERS[key] = Classify(
            model=classifier, property=column, label=label, batch_size=batch_size
        )
    return _SCORERS[key]


def run_annotate_task(task: AnnotateTask, context: AnnotateContext) -> dict[str, Any]:
    """Score every document of the task's shards and write one column file per shard."""
    stage = scorer(
        context.classifier,
        context.column,
        context.label,
        context.batch_size,
        context.model_sha256,
    )
    seconds = {"text": 0.0, "score": 0.0, "write": 0.0}
    outputs = []
    for stem, chunks in _shard_texts(task, context):
        scores = []
        started = time.perf_counter()
        for ids, texts in chunks:
            read = time.perf_counter()
            seconds["text"] += read - started
            docs = [Document(i, t, "") for i, t in zip(ids, texts, strict=True)]
            scores.append(stage.score_batch(docs))
            started = time.perf_counter()
            seconds["score"] += started - read
        values = np.concatenate([np.empty(0, np.float32), *scores]).astype(np.float64)
        data = column_file(context.column, values)
        path = stem + COLUMN_SUFFIX
        write_bytes(join_url(context.folder, path), data, context.storage_options)
        digest = f"xxh3_128:{xxhash.xxh3_128_hexdigest(data)}"
        outputs.append({"path": path, "size": len(data), "hash": digest, "records": len(values)})
        seconds["write"] += time.perf_counter() - started
    return {
        "task": task.index,
        "documents": sum(entry["records"] for entry in outputs),
        "outputs": outputs,
        "seconds": {key: round(value, 3) for key, value in seconds.items()},
    }


def column_file(column: str, values: np.ndarray) -> bytes:
    """One shard's column file: `values` as the column `column`, in Parquet (zstd, row
    groups of 65,536 rows as in shard metadata)."""
    table = pa.table({column: pa.array(values, type=pa.float64())})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", row_group_size=META_ROW_GROUP)
    return sink.getvalue()


Chunks = Iterator[tuple[list[str], list[str]]]


def _shard_texts(task: AnnotateTask, context: AnnotateContext) -> Iterator[tuple[str, Chunks]]:
    """Each shard's stem and its documents' `(ids, texts)`, a batch at a time."""
    if context.text.kind == PARTS:
        yield from _from_parts(task, context)
    else:
        for stem in task.stems:
            yield stem, _decoded(stem, context)


def _from_parts(task: AnnotateTask, context: AnnotateContext) -> Iterator[tuple[str, Chunks]]:
    assert task.part is not None
    text, options = context.text, context.storage_options
    spec = text.specs[task.part.input_index]
    documents = PartDocuments(task.part, spec, text.group_by, context.batch_size, options)
    for stem in task.stems:
        meta = join_url(context.uri, stem + META)
        yield (
            stem,
            _checked(documents, stem, meta, shard_group(meta, text.group_by, options), context),
        )
    documents.finish()


def _checked(
    documents: PartDocuments, stem: str, meta: str, value: Any, context: AnnotateContext
) -> Chunks:
    """The shard's documents from the part, each checked to be the one the shard holds."""
    expected = shard_ids(meta, context.storage_options)
    for start in range(0, len(expected), context.batch_size):
        wanted = expected[start : start + context.batch_size]
        ids, texts = documents.take(value, len(wanted))
        if ids != wanted:
            row = start + next(
                i for i, pair in enumerate(zip(ids, wanted, strict=True)) if pair[0] != pair[1]
            )
            raise MixplaneError(
                f"{documents.url}: the document at row {row} of shard {stem} is "
                f"{wanted[row - start]!r}, but the file gives {ids[row - start]!r}; the file "
                "changed since it was tokenized: annotate with text: tokens"
            )
        yield ids, texts


_DATASETS: dict[tuple[str, str], Any] = {}


def _dataset(context: AnnotateContext):
    """The version's tokenized folder, opened once per process (its manifest read once) for
    the data the version registered (`fingerprint`: a folder written again is opened anew)."""
    from mixplane.store.dataset import TokenizedDataset

    key = (context.uri, context.fingerprint)
    if key not in _DATASETS:
        _DATASETS.clear()
        _DATASETS[key] = TokenizedDataset(context.uri, context.storage_options)
    return _DATASETS[key]


def _decoded(stem: str, context: AnnotateContext) -> Chunks:
    """The shard's documents decoded from their tokens, without the BOS/EOS tokenize added."""
    from mixplane.tokenize.load import cached_tokenizer

    dataset = _dataset(context)
    tokenizer = cached_tokenizer(
        dataset.tokenizer_spec, threads=context.threads, storage_options=context.storage_options
    )
    shard = dataset.shard(stem)
    offsets = np.asarray(shard.offsets, dtype=np.int64)
    head, tail = int(context.bos), int(context.eos)
    for start in range(0, len(shard), context.batch_size):
        end = min(start + context.batch_size, len(shard))
        base = int(offsets[start])
        # One conversion per batch; each document is a slice of it.
        tokens = shard.tokens[base : int(offsets[end])].tolist()
        bounds = (offsets[start : end + 1] - base).tolist()
        ids = [
            tokens[bounds[i] + head : max(bounds[i] + head, bounds[i + 1] - tail)]
            for i in range(end - start)
        ]
        yield [f"{stem}#{start + i}" for i in range(end - start)], tokenizer.decode_batch(ids)
