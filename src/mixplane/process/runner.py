"""Running one task: read a shard, apply the stages, write kept, excluded, quarantined and
errored records, then the completion marker (last, so a crash never leaves a task
half-done). A task whose marker records stage errors is not complete: a rerun (after the
stage is fixed) does it again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson

from mixplane.document import Document
from mixplane.errors import InputError
from mixplane.io.atomic import join_url, write_bytes
from mixplane.io.readers import Quarantined, ReadOptions, ReadStats, reader_for
from mixplane.io.urls import url_filesystem
from mixplane.manifest import read_json
from mixplane.process.apply import apply_stage
from mixplane.process.config import PipelineConfig
from mixplane.process.sinks import Sinks, remove_outputs
from mixplane.process.stats import (
    check_balance,
    count_quarantined,
    new_file_stats,
    new_task_stats,
)
from mixplane.process.tasks import Task
from mixplane.stages.base import Stage
from mixplane.stages.governance import DECLARED_KEY

BATCH = 512
# A batch also ends at this many characters of text, so a run of large records (each under
# max_record_bytes) is not held 512 at a time.
BATCH_CHARS = 32 << 20
_stage_cache: dict[str, list[Stage]] = {}


def marker_url(output: str, index: int) -> str:
    return join_url(output, "_tasks", f"task-{index:05d}.json")


def load_stages(config: PipelineConfig) -> list[Stage]:
    """Build and set up the stages once per worker process."""
    key = config.outputs_hash()
    if key not in _stage_cache:
        stages = [spec.build() for spec in config.stages]
        for stage in stages:
            stage.setup()
        _stage_cache[key] = stages
    return _stage_cache[key]


def read_marker(
    url: str, config: PipelineConfig, task: Task | None = None
) -> dict[str, Any] | None:
    """The marker at `url` if it was written under the same config and, for a task's
    marker, for the same shards (the inputs may have changed since: a file added before
    others shifts the tasks after it). A task marker that records stage errors does not
    make its task complete: see `stage_errors`."""
    fs, path = url_filesystem(url, config.storage_options)
    if not fs.exists(path):
        return None
    done = read_json(url, config.storage_options)
    if done.get("config_hash") != config.outputs_hash():
        return None
    if task is not None and done.get("shards") != shard_entries(task):
        return None
    return done


def shard_entries(task: Task) -> list[dict[str, Any]]:
    """How a marker records the shards its task read (see `process.origin` for lineage)."""
    return [
        {"url": s.url, "name": s.name, "format": s.format, "start": s.start, "end": s.end}
        for s in task.shards
    ]


def stage_errors(marker: dict[str, Any]) -> int:
    """Records a task's stages raised on: a task that had some is done again by a rerun,
    since its stage may have been fixed."""
    return marker["stats"].get("errored", 0)


def write_marker(
    url: str,
    task: Task,
    config: PipelineConfig,
    stats: dict[str, Any],
    outputs: list[dict[str, Any]],
    **extra: Any,
) -> dict[str, Any]:
    """Write a task's completion marker (after all its files) and return what it holds."""
    result = {
        "task": task.index,
        "input": task.input_index,
        "shards": shard_entries(task),
        "config_hash": config.outputs_hash(),
        "stats": stats,
        "outputs": outputs,
        **extra,
    }
    write_bytes(url, orjson.dumps(result, option=orjson.OPT_INDENT_2), config.storage_options)
    return result


def run_task(task: Task, config: PipelineConfig) -> dict[str, Any]:
    """Run one task unless it is already complete; return its marker (stats and outputs)."""
    marker = marker_url(config.output, task.index)
    earlier = read_marker(marker, config, task)
    if earlier is not None and not stage_errors(earlier):
        return earlier | {"skipped": True}
    stages = load_stages(config)
    read_stats = ReadStats()
    stats = new_task_stats()
    sinks = Sinks(config, task.index)
    records = read_task(task, config, read_stats, stats["files"])
    for batch in read_batches(records, stats, sinks):
        for stage in stages:
            batch = apply_stage(stage, batch, stats, sinks)
        sinks.keep(batch, stats)
    stats["bytes_in"] = read_stats.bytes
    stats["skipped_blank"] = read_stats.blank
    check_balance(stats)
    outputs = sinks.close()
    if earlier is not None:  # redone after stage errors: what it wrote then and not now
        remove_outputs(config, earlier["outputs"], outputs)
    result = write_marker(marker, task, config, stats, outputs)
    return result | {"skipped": False}


def read_task(
    task: Task, config: PipelineConfig, read_stats: ReadStats, files: dict[str, Any]
) -> Iterator:
    """The records of the task's shards, one file after the other; `files` gets, per file,
    the records read and those quarantined because they could not be read."""
    options = input_read_options(config, task.input_index)
    declared = config.input[task.input_index].license
    for shard in task.shards:
        tally = files.setdefault(shard.url, new_file_stats())
        try:
            for record in reader_for(shard.format)(shard, options, read_stats):
                tally["documents_in"] += 1
                if isinstance(record, Quarantined):
                    count_quarantined(tally, "read", record.stat_reason(), record.error)
                elif declared is not None:
                    record.metadata[DECLARED_KEY] = declared
                yield record
        except FileNotFoundError:
            # Files from a `paths` list are not looked at before their task reads them.
            raise InputError(
                f"{shard.url}: no such file (named by a paths list, or removed since the run "
                "was planned); fix the list or restore the file, then run again to resume"
            ) from None


def input_read_options(config: PipelineConfig, index: int) -> ReadOptions:
    """How the records of input `index` become documents."""
    spec = config.input[index]
    return ReadOptions(
        spec.text_key,
        spec.id_key,
        spec.source,
        config.storage_options,
        config.max_record_bytes,
        spec.image_key,
        spec.url_key,
        spec.audio_key,
    )


def read_batches(
    records: Iterator, stats: dict[str, Any], sinks: Sinks
) -> Iterator[list[Document]]:
    """Group reader output into batches of documents; the records that could not be read
    are counted and quarantined (stage `read`) before the batch they came with."""
    docs: list[Document] = []
    unreadable: list[Quarantined] = []
    seconds = stats["seconds"]
    started = time.perf_counter()
    chars = 0
    for record in records:
        stats["documents_in"] += 1
        if isinstance(record, Quarantined):
            unreadable.append(record)
        else:
            docs.append(record)
            chars += len(record.text)
        if len(docs) >= BATCH or chars >= BATCH_CHARS:
            seconds["read"] = seconds.get("read", 0.0) + time.perf_counter() - started
            quarantine_unreadable(unreadable, stats, sinks)
            yield docs
            docs, unreadable, chars = [], [], 0
            started = time.perf_counter()
    seconds["read"] = seconds.get("read", 0.0) + time.perf_counter() - started
    quarantine_unreadable(unreadable, stats, sinks)
    yield docs


def quarantine_unreadable(unreadable: list[Quarantined], stats: dict[str, Any], sinks: Sinks):
    """Count and quarantine records a reader could not turn into documents."""
    for item in unreadable:
        count_quarantined(stats, "read", item.stat_reason(), item.error)
        sinks.quarantine("read", item.location, item.doc_id, item.error, item.raw)
