"""Opt-in Prometheus endpoints of long runs: a `process` run's counters and a training job's
loader figures, scraped over HTTP as Prometheus would."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
from conftest import free_port
from prometheus_client.parser import text_string_to_metric_families
from test_pipeline import stages_config

from mixplane import Pipeline, PipelineConfig
from mixplane.load import MixtureDataset
from mixplane.load.tools import telemetry
from mixplane.load.tools.telemetry import JobReporter
from mixplane.process.exporter import ProcessExporter


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_process_run_counts_documents_by_outcome_and_reason(small_corpus: Path, tmp_path):
    port = free_port()
    exporter = ProcessExporter(port)
    try:
        config = PipelineConfig.parse(stages_config(small_corpus, tmp_path / "out"))
        result = Pipeline(config).run(on_done=exporter.task_done, on_phase=exporter.phase)
        figures = scrape(port)
    finally:
        exporter.close()
    stats = result.stats

    def documents(outcome: str) -> float:
        return figures[
            ("mixplane_process_documents_total", (("outcome", outcome), ("phase", "tasks")))
        ]

    assert documents("in") == stats["documents_in"] == 290
    assert stats["errored"] > 0  # the test stages raise on some documents
    for outcome in ("kept", "excluded", "quarantined", "errored"):
        assert documents(outcome) == stats[outcome], outcome
    for stage, reasons in stats["excluded_by"].items():
        for reason, n in reasons.items():
            key = (
                ("outcome", "excluded"),
                ("phase", "tasks"),
                ("reason", reason),
                ("stage", stage),
            )
            assert figures[("mixplane_process_removed_total", key)] == n
    assert (
        figures[("mixplane_process_input_bytes_total", (("phase", "tasks"),))] == stats["bytes_in"]
    )
    tasks = figures[("mixplane_process_tasks_total", (("phase", "tasks"),))]
    assert tasks == len(result.tasks)


def test_a_training_job_exposes_its_loader_figures(demo_work, tmp_path):
    mixture = {
        "catalog": str(demo_work / "catalog.duckdb"),
        "cache_dir": str(tmp_path),
        "seq_len": 64,
        "components": {
            "a": {"where": "source = 'wiki'", "weight": 0.75},
            "b": {"weight": 0.25, "where": "source = 'code'"},
        },
    }
    dataset = MixtureDataset(mixture)
    port = free_port()
    reporter = JobReporter("exported", dataset, prometheus_port=port, every=0.0)
    for step, _ in enumerate(reporter.watch(dataset.batches(2))):
        if step == 19:
            break
    figures = scrape(port)
    assert figures[("mixplane_loader_step", (("job", "exported"),))] == 20
    assert figures[("mixplane_loader_weight", (("component", "a"), ("job", "exported")))] == 0.75
    assert figures[("mixplane_loader_tokens_per_second", (("job", "exported"),))] > 0
    reporter.close()


def test_a_service_that_is_down_costs_the_loop_nothing(monkeypatch):
    """Every push is made by the reporter's own thread, never by the loop's: the loop does
    not wait on the network, and the failures are counted, not raised."""
    pushers: list[str] = []
    post = telemetry._post

    def watched(*args):
        pushers.append(threading.current_thread().name)
        return post(*args)

    monkeypatch.setattr(telemetry, "_post", watched)
    reporter = JobReporter("nowhere", url=f"http://127.0.0.1:{free_port()}", every=0.0)
    for _ in reporter.watch({"input_ids": _Ids()} for _ in range(200)):
        pass
    assert reporter.step == 200
    reporter.close()
    assert pushers and set(pushers) == {"mixplane-report"}
    assert reporter.failures >= len(pushers)  # each push failed; samples queued too long dropped
    assert "Connection" in (reporter.last_error or "")


class _Ids:
    shape = (4, 16)
