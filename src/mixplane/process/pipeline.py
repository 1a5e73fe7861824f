"""Running a whole pipeline: plan tasks, execute them, merge statistics, write the manifest."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mixplane.errors import MostlyQuarantinedError, StageErrorsError
from mixplane.io.atomic import join_url, remove_stale_temporaries, write_bytes
from mixplane.manifest import file_fingerprint, find_parent_manifests, write_manifest
from mixplane.process.config import PipelineConfig
from mixplane.process.executors import ExecutorSettings, execute, ray_session
from mixplane.process.harmonize import harmonize
from mixplane.process.outcome import mostly_quarantined, stage_errors_message
from mixplane.process.runner import load_stages, run_task
from mixplane.process.segment_plan import plan_segments
from mixplane.process.segments import remove_work, run_segments
from mixplane.process.shared_paths import NodePath, check_nodes_see, stage_modules
from mixplane.process.sources import check_declared_sources, check_stage_sources
from mixplane.process.stats import merge_stats
from mixplane.process.tasks import Task, plan_tasks, scan_inputs
from mixplane.stages.global_stage import GlobalStage

# Where every input record ended up, as the manifest records it.
COUNTS = ("documents_in", "kept", "excluded", "quarantined", "errored")


@dataclass
class PipelineResult:
    """What a run produced: merged statistics, per-task results and the manifest's URL."""

    stats: dict[str, Any]
    tasks: list[dict[str, Any]]
    manifest: str
    seconds: float

    @property
    def skipped_tasks(self) -> int:
        """Tasks that reused work a former run completed, in any segment."""
        return sum(1 for task in self.tasks if task.get("skipped"))


class Pipeline:
    """A configured pipeline.

    Example:
        >>> result = Pipeline.from_yaml("pipeline.yaml", workers=2).run()  # doctest: +SKIP
        >>> result.stats["kept"]  # doctest: +SKIP
    """

    def __init__(self, config: PipelineConfig):
        self.config = config
        # Build every stage now so a bad name or option fails before any work starts.
        self.stages = [spec.build() for spec in config.stages]
        self.is_global = [isinstance(stage, GlobalStage) for stage in self.stages]
        config.stage_records()  # a model that fails its hash check fails now, too
        check_declared_sources(config)

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> Pipeline:
        return cls(PipelineConfig.from_yaml(path, **overrides))

    def plan(self) -> list[Task]:
        files = scan_inputs(self.config.input, self.config.storage_options)
        check_stage_sources(self.config, files)
        return plan_tasks(files, int(self.config.task_size_mb * (1 << 20)))

    def node_paths(self, tasks: list[Task]) -> list[NodePath]:
        """The paths every host running tasks must see: the output, each input's first
        file, and the files the stages open."""
        paths = [NodePath(self.config.output, "output", writes=True)]
        firsts = {}
        for task in tasks:
            firsts.setdefault(task.input_index, task.shards[0].url)
        paths += [NodePath(url, "input file") for url in firsts.values()]
        for stage in self.stages:
            paths += [NodePath(*item) for item in stage.node_paths()]
        return paths

    def stage_modules(self) -> list[str]:
        return stage_modules([spec.name for spec in self.config.stages])

    def run(
        self,
        on_planned: Callable[[list[Task]], None] | None = None,
        on_done: Callable[[dict[str, Any]], None] | None = None,
        on_phase: Callable[[str, int | None], None] | None = None,
    ) -> PipelineResult:
        """Run every task not yet complete, then merge statistics and write the manifest.

        Raises `StageErrorsError` (after writing every output) when stages raised on more
        records than `max_stage_errors`, and `MostlyQuarantinedError` when nearly all records
        of an input were quarantined for one reason, unless `allow_mostly_quarantined` is set.

        Progress hooks: `on_planned(tasks)` once, `on_phase(description, tasks)` at the start
        of each phase of a pipeline with global stages (tasks is None for a merge), and
        `on_done(result)` as each task of each phase completes.
        """
        started = time.perf_counter()
        config = self.config
        remove_stale_temporaries(config.output)  # what a killed run was writing
        tasks = self.plan()
        if on_planned:
            on_planned(tasks)
        if config.workers == 1 and config.executor == "local":
            load_stages(config)
        settings = ExecutorSettings(config.workers, config.executor, config.ray_address)
        merges, skipped_by_segment = None, None
        with ray_session(settings):
            check_nodes_see(self.node_paths(tasks), self.stage_modules(), settings)
            if any(self.is_global):
                segments = plan_segments(self.is_global)
                results, merges, skipped_by_segment = run_segments(
                    config, segments, tasks, settings, on_done, on_phase
                )
            else:
                results = execute(run_task, tasks, config, settings, on_done)
        results = harmonize(config, results)
        stats = merge_stats([result["stats"] for result in results])
        # Tasks that reused work a former run completed (in any segment).
        stats["skipped_tasks"] = sum(1 for result in results if result.get("skipped"))
        if skipped_by_segment:
            stats["skipped_by_segment"] = skipped_by_segment
        if merges:
            stats["merges"] = merges
        options = config.storage_options
        write_bytes(
            join_url(config.output, "_stats.json"),
            orjson.dumps(stats, option=orjson.OPT_INDENT_2),
            options,
        )
        urls = sorted({shard.url for task in tasks for shard in task.shards})
        # Side by side: on object storage each fingerprint is a round trip.
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(urls)))) as pool:
            fingerprints = list(pool.map(lambda url: file_fingerprint(url, options), urls))
        inputs = [
            {"url": url, "size": size, "fingerprint": digest}
            for url, (size, digest) in zip(urls, fingerprints, strict=True)
        ]
        outputs = [output for result in results for output in result["outputs"]]
        manifest = write_manifest(
            config.output,
            {
                "kind": "process",
                "config": config.model_dump(mode="json", exclude={"storage_options"}),
                "config_hash": config.outputs_hash(),
                "stages": config.stage_records(),
                "inputs": inputs,
                "outputs": outputs,
                "parents": find_parent_manifests([i["url"] for i in inputs], options),
                "stats": {k: stats[k] for k in COUNTS},
            },
            options,
        )
        remove_work(config)
        result = PipelineResult(stats, results, manifest, time.perf_counter() - started)
        problem = stage_errors_message(config, stats)
        if problem:
            raise StageErrorsError(problem, result)
        if not config.allow_mostly_quarantined:
            problem = mostly_quarantined(config, tasks, results)
            if problem:
                raise MostlyQuarantinedError(problem, result)
        return result


def run_pipeline(
    config: PipelineConfig | dict[str, Any] | str | Path, **overrides
) -> PipelineResult:
    """Run a pipeline from a config object, a dict or a YAML path.

    Example:
        >>> run_pipeline({"input": "raw/*.jsonl", "output": "clean"})  # doctest: +SKIP
    """
    if isinstance(config, str | Path):
        return Pipeline.from_yaml(config, **overrides).run()
    if isinstance(config, dict):
        config = PipelineConfig.parse(config | overrides)
    elif overrides:
        config = config.model_copy(update=overrides)
    return Pipeline(config).run()
