"""`mixplane process`: run a processing pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from mixplane.cli.common import (
    JSON_OPTION,
    RAY_ADDRESS_OPTION,
    STORAGE_OPTION,
    console,
    print_json,
    progress,
    storage_options,
)
from mixplane.errors import ConfigError

if TYPE_CHECKING:  # the processing engine loads when a command needs it (mixplane[process])
    from mixplane.process.exporter import ProcessExporter
    from mixplane.process.pipeline import Pipeline, PipelineResult


def register(app: typer.Typer) -> None:
    app.command("process")(process)


def process(
    config: Path | None = typer.Argument(
        None, help="Pipeline YAML (input, output, stages, workers, executor).", show_default=False
    ),
    input: list[str] | None = typer.Option(
        None, "--input", "-i", help="Input URL or glob (repeatable); overrides the YAML's input."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Output folder URL; overrides the YAML's output."
    ),
    workers: int | None = typer.Option(None, "--workers", "-w", help="Parallel tasks."),
    executor: str | None = typer.Option(None, "--executor", help="'local' or 'ray'."),
    ray_address: str | None = RAY_ADDRESS_OPTION,
    allow_mostly_quarantined: bool = typer.Option(
        False,
        "--allow-mostly-quarantined",
        help="Exit 0 even when nearly every record of an input is quarantined for one reason.",
    ),
    max_stage_errors: int | None = typer.Option(
        None,
        "--max-stage-errors",
        min=0,
        help="Records a stage's code may raise on (each kept in _errors/ with its traceback) "
        "before the command fails with exit code 1; default 0 (the YAML's max_stage_errors).",
        show_default=False,
    ),
    metrics_port: int | None = typer.Option(
        None,
        "--metrics-port",
        min=1,
        max=65535,
        help="Expose Prometheus metrics (documents by outcome, stage and reason; bytes read; "
        "tasks) on http://127.0.0.1:PORT/metrics while the run lasts.",
        show_default=False,
    ),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Read inputs, apply the pipeline's stages, and write Parquet parts with statistics.

    Reruns skip tasks that already completed, so an interrupted run can simply be repeated.
    When nearly every record of an input is quarantined for one reason (say, the text is under
    another key than text_key), the outputs are written and the command fails with exit code 2.
    When a stage's code raises on a record (a bug in the stage), the record goes to _errors/
    with the traceback and the command fails with exit code 1, unless --max-stage-errors
    allows it; a rerun redoes the tasks that had errors.
    """
    from mixplane.errors import MostlyQuarantinedError, StageErrorsError
    from mixplane.process.config import PipelineConfig
    from mixplane.process.pipeline import Pipeline

    overrides = {"output": output, "workers": workers, "executor": executor}
    overrides["ray_address"] = ray_address
    overrides["allow_mostly_quarantined"] = allow_mostly_quarantined or None
    overrides["max_stage_errors"] = max_stage_errors
    overrides["storage_options"] = storage_options(storage) or None
    if input:
        overrides["input"] = list(input)
    if config is not None:
        settings = PipelineConfig.from_yaml(config, **overrides)
    elif input and output:
        settings = PipelineConfig.parse({k: v for k, v in overrides.items() if v is not None})
    else:
        raise ConfigError("give a pipeline YAML, or both --input and --output")
    pipeline = Pipeline(settings)
    exporter = None
    if metrics_port is not None:
        from mixplane.process.exporter import ProcessExporter

        exporter = ProcessExporter(metrics_port)
    try:
        result = run_with_progress(pipeline, quiet=as_json, exporter=exporter)
    except (MostlyQuarantinedError, StageErrorsError) as error:
        # The run finished and wrote everything: show what it did, then the one-line error.
        report(error.result, as_json)
        raise
    finally:
        if exporter is not None:
            exporter.close()
    report(result, as_json)


def report(result: PipelineResult, as_json: bool) -> None:
    if as_json:
        print_json({"stats": result.stats, "manifest": result.manifest})
    else:
        print_summary(result)


def run_with_progress(
    pipeline: Pipeline, quiet: bool = False, exporter: ProcessExporter | None = None
) -> PipelineResult:
    with progress(quiet) as bar:
        handle = bar.add_task("processing", total=None)

        def done(result: dict) -> None:
            bar.advance(handle)
            if exporter is not None:
                exporter.task_done(result)

        def phase(name: str, tasks: int | None) -> None:
            bar.reset(handle, total=tasks, description=name)
            if exporter is not None:
                exporter.phase(name, tasks)

        result = pipeline.run(
            on_planned=lambda tasks: bar.update(handle, total=len(tasks)),
            on_done=done,
            on_phase=phase,
        )
    return result


def print_summary(result: PipelineResult) -> None:
    """Documents in, kept, excluded per stage and reason, quarantined, errored."""
    stats = result.stats
    table = Table(title=f"processed in {result.seconds:.1f}s", title_justify="left")
    table.add_column("outcome")
    table.add_column("stage")
    table.add_column("reason")
    table.add_column("documents", justify="right")
    table.add_row("in", "", "", f"{stats['documents_in']:,}")
    table.add_row("kept", "", "", f"{stats['kept']:,}", style="green")
    for kind in ("excluded", "quarantined", "errored"):
        style = "red" if kind == "errored" else "yellow"
        for stage, reasons in stats.get(f"{kind}_by", {}).items():
            for reason, n in reasons.items():
                table.add_row(kind, stage, reason, f"{n:,}", style=style)
    console.print(table)
    if stats.get("skipped_tasks"):
        reused = f"{stats['skipped_tasks']} of {stats['tasks']} tasks reused completed work"
        segments = stats.get("skipped_by_segment") or {}
        detail = ", ".join(f"{phase}: {n}" for phase, n in segments.items())
        console.print(f"{reused} ({detail})" if detail else reused)
    console.print(f"manifest: {result.manifest}")
