"""Governance reports: what a dataset version holds (documents and tokens by licence,
source, domain and language; personal data found and redacted), what its whole lineage
removed (exclusions by stage and reason, dedup, opt-outs, takedowns), and for a mixture the
same over what its first steps read. `mixplane report` is the command.

Example:
    >>> report = report_dataset("catalog.duckdb", "web@2")  # doctest: +SKIP
    >>> {row.key: row.tokens for row in report.by_license.rows}  # doctest: +SKIP
    {'unknown': 180211, 'CC-BY-SA-4.0': 76502, ...}
    >>> report = report_mixture("mixture.yaml", steps=100, attribution="read.csv")
    ... # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mixplane.report.model import Breakdown, Lineage, PiiKind, Report, Row

DEFAULT_TOP = 20  # domains shown before the rest is folded into `other`


def report_dataset(
    catalog: Any,
    ref: str,
    *,
    top: int | None = DEFAULT_TOP,
    attribution: str | None = None,
) -> Report:
    """The report of dataset version `ref` (`NAME@N`, or `NAME` for the latest) of
    `catalog` (a `Catalog` or its path); with `attribution`, the attribution list of its
    documents is written there as CSV."""
    from mixplane.catalog import Catalog

    catalog = catalog if isinstance(catalog, Catalog) else Catalog(catalog)
    version = catalog.get(ref)

    def documents(connection) -> None:
        connection.execute(
            "CREATE VIEW documents AS SELECT *, n_tokens AS tokens FROM all_documents"
        )

    # Without added columns (joined beside the shards) the scan is in shard order already.
    return _report(
        catalog, [version], version.ref, "dataset", documents, top, attribution, bool(version.added)
    )


def report_mixture(
    mixture: Any,
    steps: int,
    *,
    world_size: int = 1,
    batch_size: int | None = None,
    catalog: Any = None,
    weight_log: Sequence[Mapping[str, Any]] | None = None,
    top: int | None = DEFAULT_TOP,
    attribution: str | None = None,
) -> Report:
    """The report of what the first `steps` training steps of `mixture` (a YAML path, dict
    or `MixtureSpec`) read on all ranks, from the pure order: each document counted once,
    with the tokens taken from it, not its whole length. Steps are laid out as `mixplane
    trace` lays them (`global_batch_size`, or `world_size` x `batch_size`); an adaptive
    mixture needs its run's `weight_log` past the policy's first change. The lineage
    sections cover every dataset version the mixture reads."""
    from mixplane.catalog import Catalog
    from mixplane.errors import ConfigError
    from mixplane.load.dataset import MixtureDataset
    from mixplane.load.tools.taken import first_steps
    from mixplane.load.tools.trace import check_before_adapting
    from mixplane.load.unpacked.dataset import UnpackedDataset
    from mixplane.mix.spec import load_mixture
    from mixplane.report.reads import mixture_reads, unpacked_reads

    if steps < 1:
        raise ConfigError(f"steps must be at least 1, got {steps}")
    spec = load_mixture(mixture)
    if catalog is None:
        if not spec.catalog:
            raise ConfigError("the mixture names no catalog: pass catalog= (--catalog)")
        catalog = Catalog(spec.catalog, spec.storage_options)
    elif not isinstance(catalog, Catalog):
        catalog = Catalog(catalog, spec.storage_options)
    subject = Path(mixture).name if isinstance(mixture, (str, Path)) else "mixture"
    asked = {"steps": steps, "world_size": world_size, "batch_size": batch_size}
    if spec.packing == "none":  # whole documents in padded batches, as the loader makes them
        dataset = UnpackedDataset(
            spec,
            world_size=world_size,
            batch_size=batch_size,
            catalog=catalog,
            prefetch=0,
            audit=False,
        )
    else:
        dataset = MixtureDataset(spec, catalog=catalog, prefetch=0, audit=False)
    try:
        if isinstance(dataset, UnpackedDataset):
            reads, count = unpacked_reads, steps
        else:
            if weight_log:
                dataset.apply_weight_changes(weight_log)
            reads, count = mixture_reads, first_steps(dataset, steps, world_size, batch_size)
            if spec.policy is not None and not weight_log and count:
                check_before_adapting(spec.policy, count - 1, spec.sequences_per_step())
        versions = [catalog.get(info["dataset"]) for info in dataset.resolved.datasets]

        def documents(connection) -> dict[str, Any]:
            return reads(connection, dataset, versions, count) | asked

        return _report(catalog, versions, subject, "mixture", documents, top, attribution)
    finally:
        dataset.close()


def _report(
    catalog: Any,
    versions: list[Any],
    subject: str,
    kind: str,
    documents: Callable[[Any], dict[str, Any] | None],
    top: int | None,
    attribution: str | None,
    ordered: bool = True,
) -> Report:
    """Open the versions' documents and lineage, let `documents` make the view of what to
    count (returning what was read, for a mixture), count, and write the attribution list."""
    from mixplane.errors import ConfigError
    from mixplane.report.assemble import assemble
    from mixplane.report.attribution import write_attribution
    from mixplane.report.sources import lineage_files, open_relation, pii_columns, read_lineage

    if top is not None and top < 1:
        raise ConfigError(f"top must be at least 1 (domains listed before 'other'), got {top}")
    options = catalog.storage_options
    lineages = lineage_files(versions, options)
    connection = open_relation(versions, lineages, options)
    try:
        reads = documents(connection)
        lineage = read_lineage(connection, lineages)
        refs = [version.ref for version in versions]
        kinds = pii_columns(versions)
        report = assemble(connection, subject, kind, refs, lineage, kinds, top, reads)
        if attribution:
            write_attribution(connection, attribution, options, ordered=ordered)
        return report
    finally:
        connection.close()


__all__ = [
    "DEFAULT_TOP",
    "Breakdown",
    "Lineage",
    "PiiKind",
    "Report",
    "Row",
    "report_dataset",
    "report_mixture",
]
