"""Which recorded runs read a document, and where: from the audit trail and the pure order.

A run's start events keep its mixture and the exact versions it read, and its checkpoints
and stop how far it read (`consumed`, a global sequence position). The stream is a function
of those, so whether a document was read needs no log of tokens: the run's stream is rebuilt
(pinned to those versions, checked against the run's fingerprint) and
`document_order.sequence_reads` finds the sequences before `consumed` holding the document.

An adaptive run's order depends on its weight changes: the trail keeps them with each
checkpoint and stop; a run whose furthest event lacks them needs its weight log.

An image-text run counts samples, not sequences: its epoch plan is rebuilt the same way and
inverted (`sample_order`), and each read is the sample's position, step and rank.

Example:
    >>> found = document_reads("catalog.duckdb", "web-1-77")  # doctest: +SKIP
    >>> [(r["run"], r["status"], [(x["step"], x["rank"], x["tokens"]) for x in r["reads"]])
    ...  for r in found["runs"]]  # doctest: +SKIP
    [('slurm-4242', 'read', [(12, 1, [0, 57])])]
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from mixplane.catalog.audit import Run
from mixplane.errors import ConfigError
from mixplane.load.dataset import MixtureDataset
from mixplane.load.resolve.query import mixture_fingerprint
from mixplane.load.tools.document_order import sequence_reads
from mixplane.load.tools.sample_order import SampleRun, rebuild_samples
from mixplane.mix.spec import MixtureSpec


def document_reads(
    catalog: str | os.PathLike,
    document_id: str,
    dataset: str | None = None,
    *,
    weight_log: Sequence[Mapping[str, Any]] | None = None,
    storage_options: dict[str, Any] | None = None,
    run: str | None = None,
) -> dict[str, Any]:
    """Where the document `document_id` is in the catalog's versions (only `dataset`,
    NAME@N, when given; else every version some recorded run read), and for each recorded
    run (only `run`, when given) that read one of those versions: `status` (read, not read,
    unknown), and each sequence that held its tokens (`position`, `step`, `rank`,
    `component`, `tokens`: the [begin, end) range of the document's tokens it took, `eos`:
    up to the appended EOS).

    `weight_log` stands in for an adaptive run's weight changes where the trail has none.
    For many documents, `DocumentAudit` reads the trail and rebuilds each run once.
    """
    with DocumentAudit(catalog, dataset, weight_log, storage_options, run) as audit:
        return audit.reads(document_id)


class DocumentAudit:
    """The trail of `catalog` read once, each run's order rebuilt once, asked about any
    number of documents (see `document_reads`).

    Example:
        >>> with DocumentAudit("catalog.duckdb") as audit:  # doctest: +SKIP
        ...     reports = [audit.reads(name) for name in ("web-1-3", "web-1-4")]
    """

    def __init__(
        self,
        catalog: str | os.PathLike,
        dataset: str | None = None,
        weight_log: Sequence[Mapping[str, Any]] | None = None,
        storage_options: dict[str, Any] | None = None,
        run: str | None = None,
    ):
        from mixplane.catalog import Catalog
        from mixplane.catalog.audit import runs

        self.catalog = os.fspath(catalog)
        self.weight_log = weight_log
        self.runs = [
            found
            for found in runs(self.catalog, storage_options)
            if run is None or found.run == run
        ]
        if run is not None and not self.runs:
            raise ConfigError(f"no run {run!r} in the audit trail of {self.catalog}")
        every = {ref for run in self.runs for ref in run.datasets}
        self.versions = [dataset] if dataset else sorted(every)
        self.session = Catalog(self.catalog, storage_options).session()
        self._rebuilt: dict[tuple[str, str], tuple[dict[str, Any], Any]] = {}

    def __enter__(self) -> DocumentAudit:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.session.close()
        for _, dataset in self._rebuilt.values():
            if isinstance(dataset, MixtureDataset):
                dataset.close()
        self._rebuilt.clear()

    def reads(self, document_id: str) -> dict[str, Any]:
        """As `document_reads`."""
        places = locate_document(self.session, document_id, self.versions)
        found_in = {place["dataset"] for place in places}
        reports = []
        for run in self.runs:
            for fingerprint in sorted({event.mixture for event in run.events}):
                events = [event for event in run.events if event.mixture == fingerprint]
                if found_in & {ref for event in events for ref in event.datasets}:
                    reports.append(self._run_reads(run.run, fingerprint, events, places))
        return {
            "document": document_id,
            "versions": self.versions,
            "places": places,
            "runs": reports,
        }

    def _run_reads(
        self, run: str, fingerprint: str, events: list[Any], places: list[dict[str, Any]]
    ) -> dict[str, Any]:
        key = (run, fingerprint)
        if key not in self._rebuilt:
            self._rebuilt[key] = _rebuild_run(self.catalog, run, events, self.weight_log)
        report, dataset = self._rebuilt[key]
        report = dict(report)
        if isinstance(dataset, SampleRun):
            reads = [
                read
                for place in places
                if place["dataset"] in report["datasets"]
                for read in dataset.reads(place, report["consumed"], report["intervals"])
            ]
            reads.sort(key=lambda read: read["position"])
            report["reads"] = reads
            report["status"] = "read" if reads else "not read"
        elif isinstance(dataset, MixtureDataset):
            reads = []
            for place in places:
                if place["dataset"] in report["datasets"]:
                    found = sequence_reads(dataset, place, report["consumed"])
                    reads += _by_whom(found, report["intervals"])
            reads.sort(key=lambda read: (read["position"], read["tokens"][0]))
            report["reads"] = reads
            report["status"] = "read" if reads else "not read"
        return {k: v for k, v in report.items() if k != "intervals"}


def locate_document(
    session: Any, document_id: str, versions: Sequence[str]
) -> list[dict[str, Any]]:
    """Each `{dataset, folder, shard, document}` (shard stem, index in it) of `versions`
    whose `id` is `document_id`, found by the catalog's query engine (`session`: a
    `Catalog` or one of its sessions)."""
    if not versions:
        return []
    quoted = "'" + document_id.replace("'", "''") + "'"
    selection = session.select(f"id = {quoted}", list(versions))
    places = []
    for part in selection:
        shards, indices = part.document_indices()
        for shard, index in zip(shards.tolist(), indices.tolist(), strict=True):
            places.append(
                {
                    "dataset": part.dataset,
                    "folder": part.uri,
                    "shard": part.shards[shard],
                    "document": index,
                }
            )
    return places


def _rebuild_run(
    catalog: str,
    run: str,
    events: list[Any],
    weight_log: Sequence[Mapping[str, Any]] | None,
) -> tuple[dict[str, Any], MixtureDataset | SampleRun | None]:
    """What the trail says of a run (with one mixture), and its stream rebuilt with the
    weight changes it made; None and a `note` saying why when it cannot be."""
    furthest = max(
        (event for event in events if event.consumed is not None),
        key=lambda event: event.consumed,
        default=None,
    )
    starts = [event for event in events if event.event == "start"]
    report: dict[str, Any] = {
        "run": run,
        "mixture": events[0].mixture,
        "datasets": sorted({ref for event in events for ref in event.datasets}),
        "hosts": sorted({event.host for event in events}),
        "world_size": events[-1].world_size,
        "first": events[0].at,
        "last": events[-1].at,
        "consumed": furthest.consumed if furthest is not None else None,
        "status": "unknown",
        "reads": [],
        "note": None,
        "stopped": Run(run, tuple(events)).stopped,
        "intervals": read_intervals(events),
    }
    recorded = next((e.details.get("mixture") for e in starts if e.details), None)
    spec = orjson.loads(recorded) if isinstance(recorded, str) else None
    kind = next((e.details.get("kind") for e in starts if e.details), None)
    if furthest is None:
        report["note"] = "no checkpoint or stop recorded: how far the run read is unknown"
        return report, None
    if spec is not None and kind == "image_text":
        batching = next((e.details.get("batching") for e in starts if e.details), None)
        try:
            samples = rebuild_samples(catalog, pin_versions(spec, report["datasets"]), spec)
        except ConfigError as error:
            report["note"] = str(error)
            return report, None
        if samples.fingerprint != events[0].mixture:
            report["note"] = (
                f"the run's mixture ({events[0].mixture}) no longer resolves to the data it "
                f"read ({', '.join(report['datasets'])}): its order cannot be rebuilt"
            )
            return report, None
        samples.batch_size = (batching or {}).get("batch_size")
        if samples.batch_size is None:
            report["note"] = "the trail keeps no batch size for this run: steps are not known"
        return report, samples
    if spec is None or kind != "packed":
        report["note"] = (
            "the trail keeps no packed text or image-text mixture for this run (only those "
            "are rebuilt): whether it read the document is unknown"
        )
        return report, None
    changes = furthest.details.get("weight_changes") if furthest.details else None
    if changes is None and weight_log is not None:
        changes = list(weight_log)
    try:
        dataset = _rebuild(catalog, spec, report["datasets"], events[0].mixture)
    except ConfigError as error:
        report["note"] = str(error)
        return report, None
    if dataset.spec.policy is not None and changes is None:
        dataset.close()
        report["note"] = (
            "an adaptive mixture whose weight changes the trail does not hold (the run "
            "ended without a checkpoint or stop that saved them): give its weight log "
            "(--weight-log weights.jsonl)"
        )
        return report, None
    if changes:
        dataset.apply_weight_changes(changes)
    if not report["stopped"]:
        report["note"] = (
            "a rank of this run has not stopped (it is running, or died without saying so): "
            "what it read after its last checkpoint is not known"
        )
    return report, dataset


def read_intervals(events: Sequence[Any]) -> list[tuple[int, int, int]]:
    """`(first, end, world size)`: the global positions a run's loaders reported reading,
    each from where its process started or last resumed (`read_from`, 0 for events that do
    not say) to the position of a checkpoint or stop; a position's rank is its offset from
    `first` modulo the world size."""
    found = {
        (int((event.details or {}).get("read_from", 0)), event.consumed, event.world_size)
        for event in events
        if event.consumed is not None
    }
    return sorted(found)


def _by_whom(reads: list[dict[str, Any]], intervals: list[tuple[int, int, int]]):
    """The reads some loader process of the run made, each with its rank."""
    kept = []
    for read in reads:
        position = read["position"]
        for first, end, world_size in intervals:
            if first <= position < end:
                kept.append(read | {"rank": (position - first) % world_size})
                break
    return kept


def _rebuild(
    catalog: str, spec: dict[str, Any], refs: Sequence[str], fingerprint: str
) -> MixtureDataset:
    """The run's mixture as it read it: its recorded spec on this catalog, its dataset
    names pinned to the versions it read; refused unless the stream is the same."""
    pinned = pin_versions(spec, refs) | {"catalog": catalog}
    dataset = MixtureDataset(pinned, prefetch=0, audit=False)
    # The recorded mixture reading the versions found now: the run's stream exactly when
    # this is the run's fingerprint (same spec, same data).
    found = mixture_fingerprint(MixtureSpec.parse(spec), dataset.resolved.datasets)
    if found != fingerprint:
        dataset.close()
        used = sorted(info["dataset"] for info in dataset.resolved.datasets)
        raise ConfigError(
            f"the run's mixture ({fingerprint}) no longer resolves to the data it read "
            f"({', '.join(refs)}; now {', '.join(used)}, {found}): its order cannot be "
            "rebuilt"
        )
    return dataset


def pin_versions(spec: dict[str, Any], refs: Sequence[str]) -> dict[str, Any]:
    """`spec` (a mixture as JSON) with every dataset named without a version pinned to the
    version in `refs`, and the mixture restricted to `refs` when it names none.

    Example:
        >>> pin_versions({"datasets": ["web"], "components": {}}, ["web@3"])["datasets"]
        ['web@3']
    """
    exact = {ref.split("@", 1)[0]: ref for ref in refs}

    def pinned(names: list[str] | None) -> list[str] | None:
        return None if names is None else [exact.get(name, name) for name in names]

    def components(items: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for name, component in items.items():
            component = dict(component)
            if component.get("datasets") is not None:
                component["datasets"] = pinned(component["datasets"])
            if component.get("components"):
                component["components"] = components(component["components"])
            out[name] = component
        return out

    result = dict(spec)
    result["datasets"] = pinned(spec.get("datasets")) or sorted(refs)
    result["components"] = components(spec.get("components") or {})
    return result
