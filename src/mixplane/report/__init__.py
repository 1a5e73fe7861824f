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

from collections.abc import Mapping, Sequence
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
    from mixplane.report.assemble import assemble
    from mixplane.report.sources import lineage_files, open_relation, pii_columns, read_lineage

    catalog = catalog if isinstance(catalog, Catalog) else Catalog(catalog)
    version = catalog.get(ref)
    options = catalog.storage_options
    lineages = lineage_files([version], options)
    connection = open_relation([version], lineages, options)
    try:
        connection.execute(
            "CREATE VIEW documents AS SELECT *, n_tokens AS tokens FROM all_documents"
        )
        lineage = read_lineage(connection, lineages)
        kinds = pii_columns([version])
        report = assemble(connection, version.ref, "dataset", [version.ref], lineage, kinds, top)
        if attribution:
            from mixplane.report.attribution import write_attribution

            # Without added columns (joined beside the shards) the scan is in shard order.
            write_attribution(connection, attribution, options, ordered=bool(version.added))
        return report
    finally:
        connection.close()


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
    from mixplane.mix.spec import load_mixture
    from mixplane.report.assemble import assemble
    from mixplane.report.reads import mixture_reads
    from mixplane.report.sources import lineage_files, open_relation, pii_columns, read_lineage

    if steps < 1:
        raise ConfigError(f"steps must be at least 1, got {steps}")
    spec = load_mixture(mixture)
    if catalog is None:
        if not spec.catalog:
            raise ConfigError("the mixture names no catalog: pass catalog= (--catalog)")
        catalog = Catalog(spec.catalog, spec.storage_options)
    elif not isinstance(catalog, Catalog):
        catalog = Catalog(catalog, spec.storage_options)
    dataset = MixtureDataset(spec, catalog=catalog, prefetch=0)
    try:
        if weight_log:
            dataset.apply_weight_changes(weight_log)
        sequences = first_steps(dataset, steps, world_size, batch_size)
        if spec.policy is not None and not weight_log and sequences:
            check_before_adapting(spec.policy, sequences - 1, spec.sequences_per_step())
        refs = [info["dataset"] for info in dataset.resolved.datasets]
        versions = [catalog.get(ref) for ref in refs]
        options = catalog.storage_options
        lineages = lineage_files(versions, options)
        connection = open_relation(versions, lineages, options)
        try:
            reads = mixture_reads(connection, dataset, versions, sequences)
            reads |= {"steps": steps, "world_size": world_size, "batch_size": batch_size}
            lineage = read_lineage(connection, lineages)
            kinds = pii_columns(versions)
            subject = Path(mixture).name if isinstance(mixture, (str, Path)) else "mixture"
            report = assemble(connection, subject, "mixture", refs, lineage, kinds, top, reads)
            if attribution:
                from mixplane.report.attribution import write_attribution

                write_attribution(connection, attribution, options)
            return report
        finally:
            connection.close()
    finally:
        dataset.close()


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
