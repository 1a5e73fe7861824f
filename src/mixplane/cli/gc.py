"""`mixplane gc`: remove the files of dataset versions nothing keeps (a dry run unless
`--delete`)."""

from __future__ import annotations

import typer

from mixplane.cli.common import (
    JSON_OPTION,
    STORAGE_OPTION,
    console,
    print_json,
    status,
    storage_options,
)


def register(app: typer.Typer) -> None:
    app.command("gc")(gc)


def gc(
    catalog: str = typer.Option("catalog.duckdb", "--catalog", "-c", help="Catalog file."),
    # The defaults are `catalog.gc.plan`'s (not imported here: it loads DuckDB).
    keep_latest: int = typer.Option(
        2, "--keep-latest", help="Keep the latest K versions of each dataset (at least 1)."
    ),
    keep_used_days: float = typer.Option(
        30.0,
        "--keep-used-days",
        help="Keep versions a run of the audit trail read in the last N days.",
    ),
    running_days: float = typer.Option(
        7.0,
        "--running-days",
        help="A run that has not stopped keeps what it reads while its last event is within "
        "N days (a crashed run never records a stop).",
    ),
    keep: list[str] = typer.Option(
        [], "--keep", help="Keep this version, NAME@N (repeat for more).", show_default=False
    ),
    mixtures: list[str] = typer.Option(
        [],
        "--mixtures",
        "-m",
        help="Keep the versions this mixture file pins as NAME@N (repeat for more).",
        show_default=False,
    ),
    delete: bool = typer.Option(
        False, "--delete", help="Remove the files (without it: a dry run, nothing changes)."
    ),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove the files of dataset versions that are not kept: kept are the latest K of each
    dataset, versions pinned (by --keep or a mixture given), versions a run read in the last
    N days or that a run still running reads (the audit trail), and versions a
    process of this host has open. Files a kept version shares stay.

    A dry run unless --delete: it prints what would go, per version, and why each kept
    version is kept. Loading a collected version afterwards fails with a message naming the
    date and the version to use.

    Example: mixplane gc --keep-latest 2 --mixtures mixture.yaml --delete
    """
    from mixplane.catalog.gc import Retention, apply_plan, survey

    for ref in keep:
        _check_pin(ref)
    pins = _mixture_pins(mixtures) | {ref: "--keep" for ref in keep}
    retention = Retention(keep_latest, keep_used_days, pins, running_days)
    options = storage_options(storage)
    plan = survey(catalog, retention, options)
    result = apply_plan(plan, catalog, options) if delete else None
    if result is not None:
        _drop_plan_cache({removal.ref: removal.uri for removal in result.removed})
    if as_json:
        print_json(
            {
                "dry_run": not delete,
                **plan.summary(),
                "result": result.summary() if result else None,
            }
        )
        return
    _print(plan, result)


def _mixture_pins(paths: list[str]) -> dict[str, str]:
    """`NAME@N` -> the mixture file that names it (in its datasets or a component's)."""
    from mixplane.mix.spec import MixtureSpec
    from mixplane.mix.tree import MixtureTree

    pins: dict[str, str] = {}
    for path in paths:
        spec = MixtureSpec.from_yaml(path)
        named = list(spec.datasets or [])
        for leaf in MixtureTree(spec).leaves:
            named += list(leaf.datasets or [])
        pins |= {ref: path for ref in named if "@" in ref and ref not in pins}
    return pins


def _check_pin(ref: str) -> None:
    from mixplane.errors import ConfigError
    from mixplane.refs import parse_ref

    name, version = parse_ref(ref)
    if version is None:
        raise ConfigError(
            f"--keep {ref}: name a version, {name}@N (the latest version is always kept)"
        )


def _drop_plan_cache(versions: dict[str, str]) -> None:
    from mixplane.load.resolve.plan_cache import drop_entries_reading

    drop_entries_reading(versions, None)


def _print(plan, result) -> None:
    done = {removal.ref for removal in result.removed} if result else set()
    for removal in plan.removals:
        verb = "remove" if result is None else "removed" if removal.ref in done else "skipped"
        shared = len(removal.shared)
        console.print(
            f"{verb} [bold]{removal.ref}[/]: {len(removal.files)} files, {removal.bytes:,} bytes"
            + (f" ({shared} files it shares with kept versions stay)" if shared else "")
            + (
                f" (left by the gc of {removal.collected_on}, which stopped halfway)"
                if removal.collected_on
                else ""
            ),
            highlight=False,
        )
        for file in removal.files:
            console.print(f"  {file.url}", highlight=False, soft_wrap=True)
    for kept in plan.kept:
        console.print(
            f"keep [bold]{kept.ref}[/] ({kept.files} files, {kept.bytes:,} bytes): "
            + "; ".join(kept.reasons),
            highlight=False,
        )
    for ref, on in plan.collected:
        console.print(f"collected earlier: {ref} (on {on})", highlight=False)
        if ref in plan.retention.pins:
            status.print(
                f"[yellow]warning:[/] {ref} is pinned by {plan.retention.pins[ref]}, but gc "
                f"removed its files on {on}: a mixture that pins it cannot load it",
                highlight=False,
            )
    if plan.hidden_processes:
        status.print(
            f"note: {plan.hidden_processes} of this host's processes could not be inspected "
            "for open files (permission denied: another user's without root, or protected)",
            highlight=False,
        )
    if result is None:
        console.print(
            f"dry run: would remove {sum(len(r.files) for r in plan.removals)} files, "
            f"{plan.bytes:,} bytes; run with --delete to remove them",
            highlight=False,
        )
        return
    for ref, why in result.skipped:
        console.print(f"skipped {ref}: in use ({why})", highlight=False)
    console.print(f"removed {result.files} files, {result.bytes:,} bytes", highlight=False)
