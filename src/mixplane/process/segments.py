"""Running a pipeline that has global stages: segment by segment, with a merge in between.

Every segment runs per task through the executor and writes a completion marker last;
every merge writes its marker last; so a rerun after a crash skips whatever was finished.
A rerun after a run with stage errors starts over, since documents a fixed stage now keeps
can change any global stage's decisions.
Intermediate files live under `OUTPUT/_work/<config hash>/` and are removed once the run is
complete. The final segment writes the usual parts, and one `_excluded/` and one
`_quarantine/` file per task holding the rows of all segments; its marker carries the
task's statistics over all segments, so they still balance.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from mixplane.document import Document
from mixplane.io.atomic import join_url, write_bytes
from mixplane.io.readers import Quarantined, ReadOptions, ReadStats, Shard, reader_for
from mixplane.io.urls import url_filesystem
from mixplane.io.writers import MEDIA_COLUMN
from mixplane.manifest import read_json
from mixplane.process.apply import apply_stage, sort_results
from mixplane.process.config import PipelineConfig
from mixplane.process.executors import ExecutorSettings, execute, ray_session
from mixplane.process.runner import (
    BATCH,
    BATCH_CHARS,
    load_stages,
    marker_url,
    read_batches,
    read_marker,
    read_task,
    stage_errors,
    write_marker,
)
from mixplane.process.segment_plan import ExecutorRun, Segment
from mixplane.process.sinks import Sinks, remove_outputs
from mixplane.process.stats import (
    COUNTED_BY,
    EXAMPLES,
    add_counts,
    check_balance,
    merge_examples,
    new_task_stats,
)
from mixplane.process.tasks import Task
from mixplane.stages.global_stage import GlobalStage, WorkArea

WORK = "_work"


def work_root(config: PipelineConfig) -> str:
    return join_url(config.output, WORK, config.outputs_hash()[:16])


def segment_folder(config: PipelineConfig, number: int) -> str:
    return join_url(work_root(config), f"segment-{number}")


def stage_work(config: PipelineConfig, index: int) -> WorkArea:
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in config.stages[index].name)
    url = join_url(work_root(config), f"stage-{index:02d}-{name}")
    return WorkArea(url, config.storage_options)


@dataclass(frozen=True)
class SegmentJob:
    """What a segment task needs besides its task: the config and the segment's plan."""

    config: PipelineConfig
    segment: Segment
    earlier: tuple[int, ...]


def run_segment_task(task: Task, job: SegmentJob) -> dict[str, Any]:
    """Run one segment of one task unless its marker says it is already complete."""
    config, segment = job.config, job.segment
    marker = _segment_marker(config, segment, task.index)
    # Stage errors were looked at before the run began (see `run_segments`): a marker
    # here, errors or not, is part of the run being resumed.
    done = read_marker(marker, config, task)
    if done is not None:
        return done | {"skipped": True}
    stages = load_stages(config)
    stats = new_task_stats()
    seconds = stats["seconds"]
    folder = config.output if segment.final else segment_folder(config, segment.index)
    sinks = Sinks(
        config,
        task.index,
        folder=folder,
        keep_documents=segment.final or segment.saves,
        name=None if segment.final else f"part-{task.index:05d}.parquet",
    )
    if segment.final:
        for number in job.earlier:
            sinks.carry(segment_folder(config, number))
    replays = [stages[g].decider(stage_work(config, g), task.index) for g in segment.replays]
    opener = None
    if segment.opens is not None:
        opener = stages[segment.opens].decider(stage_work(config, segment.opens), task.index)
    collector = None
    if segment.collects is not None:
        target = stages[segment.collects]
        collector = target.collector(stage_work(config, segment.collects), task.index)
    read_stats = ReadStats()
    for batch in _batches(task, job, stats, sinks, read_stats):
        for decider in replays:
            batch = [doc for doc in decider.decide(batch) if isinstance(doc, Document)]
        if segment.index > 0:
            stats["documents_in"] += len(batch)
        if opener is not None:
            name = stages[segment.opens].stage_name()
            started = time.perf_counter()
            batch = sort_results(name, batch, opener.decide(batch), stats, sinks)
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
        for index in segment.stages:
            batch = apply_stage(stages[index], batch, stats, sinks)
        if collector is not None:
            name = f"{stages[segment.collects].stage_name()}:collect"
            started = time.perf_counter()
            collector.add(batch)
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
        sinks.keep(batch, stats)
    stats["bytes_in"] = read_stats.bytes
    stats["skipped_blank"] = read_stats.blank
    collected = collector.close() if collector is not None else None
    check_balance(stats)
    outputs = sinks.close()
    if segment.final and job.earlier:
        parts = [_segment_stats(config, number, task.index) for number in job.earlier]
        stats = chain_stats([*parts, stats])
    extra = {} if collected is None else {"collected": collected}
    result = write_marker(marker, task, config, stats, outputs, **extra)
    return result | {"skipped": False}


def _batches(
    task: Task, job: SegmentJob, stats: dict[str, Any], sinks: Sinks, read_stats: ReadStats
) -> Iterator[list[Document]]:
    """The documents a segment starts from: the task's input (the first segment also counts
    and quarantines unreadable records), or an earlier segment's saved documents."""
    config, segment = job.config, job.segment
    if segment.source < 0:
        records = read_task(task, config, read_stats, stats["files"])
        if segment.index == 0:
            yield from read_batches(records, stats, sinks)
            return
    else:
        url = join_url(segment_folder(config, segment.source), f"part-{task.index:05d}.parquet")
        shard = Shard(url, os.path.basename(url), "parquet")
        # Documents an earlier segment kept were admitted already (a stage may have made one
        # longer): no size limit, since a record quarantined here would be lost.
        options = ReadOptions("text", "id", None, config.storage_options, 1 << 62)
        records = reader_for(shard.format)(shard, options, read_stats)
    batch: list[Document] = []
    chars = 0
    for record in records:
        if isinstance(record, Quarantined):
            continue  # recorded by the first segment
        _restore_media(record)
        batch.append(record)
        chars += len(record.text)
        if len(batch) >= BATCH or chars >= BATCH_CHARS:
            yield batch
            batch, chars = [], 0
    yield batch


def _restore_media(doc: Document) -> None:
    """Give a document read back from a work file the media its `media` column held (the
    Parquet reader sees the column as one more metadata field)."""
    media = doc.metadata.get(MEDIA_COLUMN)
    if media is None:
        doc.metadata.pop(MEDIA_COLUMN, None)  # a null: documents without media in the file
    elif isinstance(media, list) and all(isinstance(item, tuple) for item in media):
        del doc.metadata[MEDIA_COLUMN]
        doc.media = dict(media)


def chain_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One task's statistics over consecutive segments: documents in from the first, kept
    from the last, exclusions, quarantines and stage errors summed.

    Example:
        >>> a = new_task_stats() | {"documents_in": 5, "kept": 3, "excluded": 2}
        >>> b = new_task_stats() | {"documents_in": 3, "kept": 1, "excluded": 2}
        >>> chain_stats([a, b])["kept"], chain_stats([a, b])["excluded"]
        (1, 4)
    """
    merged = new_task_stats()
    for key in ("documents_in", "bytes_in", "skipped_blank", "files"):
        merged[key] = parts[0].get(key, merged[key])
    for key in ("kept", "text_bytes_out"):
        merged[key] = parts[-1][key]
    for part in parts:
        for key in ("excluded", "quarantined", "errored"):
            merged[key] += part.get(key, 0)
        for key in COUNTED_BY:
            add_counts(merged[key], part.get(key, {}))
        for key in EXAMPLES:
            merge_examples(merged[key], part, key)
        for name, value in part["seconds"].items():
            merged["seconds"][name] = merged["seconds"].get(name, 0.0) + value
    check_balance(merged)
    return merged


def _segment_marker(config: PipelineConfig, segment: Segment, index: int) -> str:
    if segment.final:
        return marker_url(config.output, index)
    return marker_url(segment_folder(config, segment.index), index)


def _segment_stats(config: PipelineConfig, number: int, index: int) -> dict[str, Any]:
    url = marker_url(segment_folder(config, number), index)
    return read_json(url, config.storage_options)["stats"]


def run_segments(
    config: PipelineConfig,
    segments: list[Segment],
    tasks: list[Task],
    settings: ExecutorSettings,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    on_phase: Callable[[str, int | None], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, int]]:
    """Run every segment and merge; return the final segment's task results, per global
    stage its merge summary, and per segment how many tasks were already complete.

    A task whose work was reused in any segment comes back with `skipped` set: a rerun
    after a crash in the first segment reuses the tasks that finished it.
    `on_phase(description, tasks)` announces each phase (tasks is None for a merge);
    `on_done` is called as each task of each segment completes.
    """
    final = segments[-1]
    finished = [read_marker(marker_url(config.output, t.index), config, t) for t in tasks]
    if any(done is not None and stage_errors(done) for done in finished):
        # A fixed stage may keep documents it errored on: every global stage must see them.
        _start_over(config, tasks)
        finished = [None] * len(tasks)
    if all(done is not None for done in finished):
        for done in finished:
            if on_done:
                on_done(done | {"skipped": True})
        return [done | {"skipped": True} for done in finished], {}, {}
    stages = load_stages(config)
    merges: dict[str, Any] = {}
    skipped: dict[str, int] = {}
    reused: set[int] = set()
    earlier = tuple(s.index for s in segments[:-1])
    announce = on_phase or (lambda description, count: None)
    with ray_session(settings):
        for number, segment in enumerate(segments, 1):
            job = SegmentJob(config, segment, earlier if segment is final else ())
            phase = f"segment {number}/{len(segments)}"
            announce(phase, len(tasks))
            results = execute(run_segment_task, tasks, job, settings, on_done)
            done = {result["task"] for result in results if result.get("skipped")}
            skipped[phase] = len(done)
            reused |= done
            if segment.collects is not None:
                stage = stages[segment.collects]
                announce(f"merging {stage.stage_name()}", None)
                merges[stage.stage_name()] = _merge(
                    config, segment.collects, stage, tasks, settings
                )
    return [result | {"skipped": result["task"] in reused} for result in results], merges, skipped


def _merge(
    config: PipelineConfig, index: int, stage: GlobalStage, tasks: list[Task], settings
) -> dict[str, Any]:
    work = stage_work(config, index)
    marker = work.url("_merged.json")
    done = read_marker(marker, config)
    if done is not None:
        return done["summary"]
    started = time.perf_counter()
    key = f"{config.output.rstrip('/')}\n{config.outputs_hash()}\n{index}"
    run = ExecutorRun(settings, hashlib.sha256(key.encode()).hexdigest()[:16])
    summary = stage.merge(work, [task.index for task in tasks], run)
    summary = summary | {"seconds": round(time.perf_counter() - started, 3)}
    content = {"config_hash": config.outputs_hash(), "summary": summary}
    write_bytes(marker, orjson.dumps(content, option=orjson.OPT_INDENT_2), config.storage_options)
    return summary


def _start_over(config: PipelineConfig, tasks: list[Task]) -> None:
    """Forget every completed segment, merge and task of this config: a rerun after stage
    errors redoes them all, since any global stage's decisions may change."""
    remove_work(config)
    for task in tasks:
        url = marker_url(config.output, task.index)
        earlier = read_marker(url, config, task)
        if earlier is not None:
            remove_outputs(config, earlier["outputs"])
            fs, path = url_filesystem(url, config.storage_options)
            fs.rm(path)


def remove_work(config: PipelineConfig) -> None:
    """Delete `_work/` once every task of the run is complete."""
    fs, path = url_filesystem(join_url(config.output, WORK), config.storage_options)
    if fs.exists(path):
        fs.rm(path, recursive=True)
