"""Annotating a registered version: score every document with a classifier, write the scores
as one new column beside the shards, and register a new version that has it.

The new version is the old one's shards (the same token and metadata files, referenced,
never copied) plus the column's folder: one small Parquet file per shard and a manifest that
records the classifier and its model hash, the version annotated, and where the text came
from. Everything is checked before any work: the version exists and holds text, the column's
name is free, the model folder is whole, and a text source is there.

Example:
    >>> result = annotate_dataset(
    ...     {"dataset": "web@1", "classifier": "models/quality", "as": "quality"}
    ... )  # doctest: +SKIP
    >>> result.version.ref, result.text["kind"]  # doctest: +SKIP
    ('web@2', 'parts')

`plan_annotation` makes every check and plans the tasks; `run_annotation` does the work.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mixplane.annotate.config import AnnotateConfig
from mixplane.annotate.task import (
    COLUMN_TYPE,
    AnnotateContext,
    AnnotateTask,
    run_annotate_task,
)
from mixplane.annotate.texts import PARTS, TextSource, choose_text_source
from mixplane.catalog import Catalog
from mixplane.catalog.columns import COLUMN_SUFFIX, AddedColumn, ColumnFile, check_new_column
from mixplane.catalog.dataset import TOKENS
from mixplane.catalog.query import check_unchanged
from mixplane.catalog.registry import DatasetVersion, Registry
from mixplane.errors import ConfigError
from mixplane.io.atomic import is_local, join_url, local_path, remove_stale_temporaries
from mixplane.io.urls import url_filesystem
from mixplane.manifest import MANIFEST, read_json, write_manifest
from mixplane.process.executors import ExecutorSettings, execute
from mixplane.stages.classify.model import DESCRIPTION_FILE
from mixplane.stages.classify.stage import Classify
from mixplane.store.format import parse_stem

COLUMNS_FOLDER = "_columns"  # inside a dataset's folder: where its columns go by default


@dataclass
class AnnotateResult:
    """What a run did: the version annotated and the one registered, the column, where the
    text came from, and what was written against what was shared."""

    source: DatasetVersion
    version: DatasetVersion
    created: bool  # False: the latest version was already exactly this one
    column: AddedColumn
    text: dict[str, Any]
    documents: int
    written_bytes: int  # the column's files and its manifest
    shared_bytes: int  # the shard files the new version references
    manifest: str
    seconds: float
    task_seconds: dict[str, float]

    def summary(self) -> dict[str, Any]:
        return {
            "source": self.source.ref,
            "dataset": self.version.ref,
            "created": self.created,
            "column": self.column.name,
            "type": self.column.kind,
            "folder": self.column.folder,
            "classifier": self.column.made_by.get("classifier"),
            "text": self.text,
            "documents": self.documents,
            "written_bytes": self.written_bytes,
            "shared_bytes": self.shared_bytes,
            "manifest": self.manifest,
            "seconds": round(self.seconds, 3),
            "task_seconds": self.task_seconds,
        }


@dataclass
class Annotation:
    """A checked, planned run (`plan_annotation`): what `run_annotation` does."""

    config: AnnotateConfig
    catalog: Catalog
    source: DatasetVersion
    stored: dict[str, Any]  # the source version's manifest, as registered
    text: TextSource
    classifier: dict[str, Any]
    config_hash: str
    folder: str
    tasks: list[AnnotateTask]
    context: AnnotateContext


def annotate_dataset(
    config: AnnotateConfig | dict[str, Any],
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> AnnotateResult:
    """Score every document of `config.dataset` and register it again with the new column."""
    return run_annotation(plan_annotation(config), on_done)


def plan_annotation(config: AnnotateConfig | dict[str, Any]) -> Annotation:
    """Check everything before any work (the version, the column's name, the model folder,
    a text source, the output folder) and plan the tasks."""
    if not isinstance(config, AnnotateConfig):
        config = AnnotateConfig.parse(config)
    options = config.storage_options
    catalog = Catalog(config.catalog, options)
    source = catalog.get(config.dataset)
    if source.kind != TOKENS:
        raise ConfigError(
            f"{source.ref} holds image-text samples; annotate scores the text of tokenized datasets"
        )
    check_new_column(config.column, source.schema, source.ref)
    check_unchanged(source, options)  # the documents scored are those registered
    classifier = _classifier(config)
    with Registry(config.catalog) as registry:
        stored = registry.manifest(source.name, source.version)
    text = choose_text_source(source, stored, config.text, options)
    config_hash = _config_hash(source, config.column, classifier, text.kind)
    default = join_url(source.uri, COLUMNS_FOLDER, f"{config.column}-{config_hash[:16]}")
    folder = _absolute(config.output or default)
    _check_folder(folder, config_hash, options)
    tokenizer = stored.get("tokenizer") or {}
    context = AnnotateContext(
        uri=source.uri,
        fingerprint=source.fingerprint,
        folder=folder,
        column=config.column,
        classifier=config.classifier,
        model_sha256=classifier["model_sha256"],
        label=config.label,
        batch_size=config.batch_size,
        text=text,
        bos=tokenizer.get("bos_id") is not None,
        eos=tokenizer.get("eos_id") is not None,
        storage_options=options,
        threads=1 if config.workers > 1 else None,
    )
    tasks = plan_tasks(source, text)
    return Annotation(
        config, catalog, source, stored, text, classifier, config_hash, folder, tasks, context
    )


def run_annotation(
    annotation: Annotation, on_done: Callable[[dict[str, Any]], None] | None = None
) -> AnnotateResult:
    """Score the planned tasks, write the column's manifest and register the new version."""
    started = time.perf_counter()
    config, source, options = (
        annotation.config,
        annotation.source,
        annotation.config.storage_options,
    )
    folder, text = annotation.folder, annotation.text
    remove_stale_temporaries(folder)  # what a killed run was writing
    settings = ExecutorSettings(config.workers)
    results = execute(run_annotate_task, annotation.tasks, annotation.context, settings, on_done)
    by_path = {entry["path"]: entry for result in results for entry in result["outputs"]}
    # In the version's shard order.
    files = tuple(ColumnFile(**by_path[stem + COLUMN_SUFFIX]) for stem in source.stems)
    documents = sum(entry.records or 0 for entry in files)
    made_by = {"kind": "annotate", "classifier": annotation.classifier, "text": text.describe()}
    manifest_url = write_manifest(
        folder,
        {
            "kind": "annotate",
            "config": config.model_dump(mode="json", exclude={"storage_options"}),
            "config_hash": annotation.config_hash,
            "source": {"dataset": source.ref, "uri": source.uri, "fingerprint": source.fingerprint},
            "column": {"name": config.column, "type": COLUMN_TYPE},
            "classifier": annotation.classifier,
            "text": text.describe(),
            "inputs": list(text.inputs),
            "parents": [join_url(source.lineage_root, MANIFEST)],
            "outputs": [entry.to_json() for entry in files],
            "stats": {"documents": documents, "files": len(files)},
        },
        options,
    )
    column = AddedColumn(config.column, COLUMN_TYPE, folder, files, source.ref, made_by)
    version, created = annotation.catalog.add_column(source, column)
    fs, path = url_filesystem(manifest_url, options)
    return AnnotateResult(
        source=source,
        version=version,
        created=created,
        column=column,
        text=text.describe(),
        documents=documents,
        written_bytes=sum(entry.size for entry in files) + int(fs.size(path)),
        shared_bytes=shared_bytes(annotation.stored, source),
        manifest=manifest_url,
        seconds=time.perf_counter() - started,
        task_seconds=_sum_seconds(results),
    )


def _classifier(config: AnnotateConfig) -> dict[str, Any]:
    """The model folder checked as the `classify` stage checks it (folder, description,
    label, the model file's hash), and what lineage records of it."""
    stage = Classify(
        model=config.classifier,
        property=config.column,
        label=config.label,
        batch_size=config.batch_size,
    )
    provenance = stage.provenance()
    description = orjson.loads((Path(config.classifier) / DESCRIPTION_FILE).read_bytes())
    return {
        "folder": _absolute(config.classifier),
        "kind": description.get("kind"),
        "model_sha256": provenance["model_sha256"],
        "label": config.label or description.get("positive_label"),
    }


def plan_tasks(version: DatasetVersion, text: TextSource) -> list[AnnotateTask]:
    """With the parts: one task per input file, holding the shards made from it (in order);
    with the tokens: one task per shard."""
    counts = {shard.stem: shard.documents for shard in version.shards}
    if text.kind != PARTS:
        return [AnnotateTask(i, (stem,), counts[stem]) for i, stem in enumerate(version.stems)]
    groups: dict[int, list[str]] = {}
    for stem in version.stems:
        parsed = parse_stem(stem)
        if parsed is None or parsed[0] >= len(text.files):
            raise ConfigError(
                f"{version.ref}: shard {stem} is not named after one of the files it was "
                "tokenized from; annotate with text: tokens"
            )
        groups.setdefault(parsed[0], []).append(stem)
    return [
        AnnotateTask(i, tuple(stems), sum(counts[s] for s in stems), text.files[task])
        for i, (task, stems) in enumerate(groups.items())
    ]


def shared_bytes(manifest: dict[str, Any], version: DatasetVersion) -> int:
    """Bytes of the version's shard files (tokens, index, metadata, checksums), which the new
    version references instead of copying."""
    stems = set(version.stems)
    return sum(
        int(entry.get("size") or 0)
        for shard in manifest.get("shards") or []
        if shard.get("name") in stems
        for entry in (shard.get("files") or {}).values()
    )


def _config_hash(source: DatasetVersion, column: str, classifier: dict[str, Any], text: str) -> str:
    """What decides the column's bytes: the data, the model and label, the name, the text."""
    decisive = {
        "source": source.fingerprint,
        "column": column,
        "model_sha256": classifier["model_sha256"],
        "label": classifier["label"],
        "text": text,
    }
    return hashlib.sha256(orjson.dumps(decisive, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _check_folder(folder: str, config_hash: str, storage_options: dict[str, Any]) -> None:
    """Refuse a folder holding another annotation's column (a rerun of the same one writes
    the same bytes again)."""
    url = join_url(folder, MANIFEST)
    fs, path = url_filesystem(url, storage_options)
    if not fs.exists(path):
        return
    found = read_json(url, storage_options)
    if not isinstance(found, dict) or found.get("config_hash") != config_hash:
        raise ConfigError(
            f"{folder}: already holds another step's output (see its {MANIFEST}); choose "
            "another output folder or remove it"
        )


def _absolute(location: str) -> str:
    return os.path.abspath(local_path(location)) if is_local(location) else location.rstrip("/")


def _sum_seconds(results: list[dict[str, Any]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for result in results:
        for key, value in result["seconds"].items():
            totals[key] = round(totals.get(key, 0.0) + value, 3)
    return totals
