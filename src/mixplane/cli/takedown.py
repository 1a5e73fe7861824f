"""`mixplane takedown` and `mixplane catalog check`: remove documents from every dataset,
and find the pins that still read them."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from mixplane.cli.catalog import DEFAULT_CATALOG, catalog_app
from mixplane.cli.common import (
    JSON_OPTION,
    STORAGE_OPTION,
    console,
    print_json,
    progress,
    status,
    storage_options,
)
from mixplane.errors import InputError

CATALOG_OPTION = typer.Option(DEFAULT_CATALOG, "--catalog", "-c", help="Catalog file (DuckDB).")


def register(app: typer.Typer) -> None:
    app.command("takedown")(takedown)
    catalog_app.command("check")(check)


def takedown(
    domain: list[str] = typer.Option(
        [], "--domain", help="Remove documents whose url is on this domain or its subdomains."
    ),
    url: list[str] = typer.Option(
        [], "--url", help="Remove documents whose url starts with this (a prefix)."
    ),
    ids: list[str] = typer.Option([], "--id", help="Remove the document with this id."),
    file: Path | None = typer.Option(
        None,
        "--file",
        help="A file of criteria, one a line: `domain D`, `url U` or `id I` (# comments).",
        show_default=False,
    ),
    reference: str = typer.Option(
        ..., "--reference", help="The ticket or letter the takedown answers (TICKET-123)."
    ),
    catalog: str = CATALOG_OPTION,
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Root folder for the new versions (default: beside each dataset's folder, "
        "as FOLDER-takedown-N).",
        show_default=False,
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Say what would be removed; change nothing."
    ),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove documents from the latest version of every dataset in the catalog: each
    dataset holding some gets a new version without them (only the shards that held them
    are rewritten), so mixtures that do not pin versions move to it; the request is
    recorded in each new version's manifest and lineage and in the catalog.

    A domain matches its subdomains (example.com takes www.example.com, not
    notexample.com); a document without a url matches only by id. Running the same
    takedown again finds nothing and changes nothing.
    """
    from mixplane.catalog import Catalog
    from mixplane.catalog.takedown import (
        Progress,
        TakedownRequest,
        apply_takedown,
        parse_request_file,
    )

    domains, urls, found_ids = list(domain), list(url), list(ids)
    if file is not None:
        try:
            text = file.read_text()
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"{file}: cannot read the request file ({error})") from None
        listed = parse_request_file(text, str(file))
        domains += listed["domain"]
        urls += listed["url"]
        found_ids += listed["id"]
    request = TakedownRequest.build(domains, urls, found_ids, reference)
    options = storage_options(storage)
    with progress(quiet=as_json or dry_run) as bar:
        handle = bar.add_task("rewriting shards", total=None)
        shown = Progress(
            on_planned=lambda total: bar.update(handle, total=total),
            on_shard=lambda _: bar.advance(handle),
        )
        result = apply_takedown(Catalog(catalog, options), request, output, dry_run, shown)
    if result.without_url:
        status.print(
            f"note: {', '.join(result.without_url)} "
            f"{'has' if len(result.without_url) == 1 else 'have'} no url property: only --id "
            "criteria were looked for there",
            highlight=False,
        )
    if as_json:
        print_json(result.to_json())
        return
    verb = "would remove" if dry_run else "removed"
    console.print(
        f"takedown [bold]{request.request_id}[/] ({escape(request.reference)}): {verb} "
        f"{result.documents:,} documents, {result.tokens:,} tokens"
        + ("" if result.datasets else " (nothing matched; nothing changed)"),
        highlight=False,
    )
    for item in result.datasets:
        target = "(dry run)" if dry_run else f"-> {item['to']}"
        console.print(
            f"  {item['from']} {target}: {item['documents']:,} documents, "
            f"{item['tokens']:,} tokens, {item['shards_rewritten']} of {item['shards']} "
            f"shards rewritten, in {escape(item['folder'])}",
            highlight=False,
        )


def check(
    mixtures: list[Path] = typer.Argument(
        None, help="Mixture YAML files whose pinned versions to check too."
    ),
    catalog: str = CATALOG_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """List every version of the catalog a takedown replaced, and every pinned NAME@N of the
    MIXTUREs that is one of them, with the request, its reference and the version to move
    to (a mixture's own catalog is read when it names one). Every recorded takedown is also
    run again on the latest versions: data registered since may hold what it removed.

    Exit status 1 when a mixture pins a replaced version, or a latest version holds
    documents a takedown names; without MIXTUREs, also while a replaced version's files
    are still on disk (`mixplane gc` removes them; collected versions are listed as such).
    """
    from mixplane.catalog import Catalog
    from mixplane.catalog.gc.record import collected
    from mixplane.catalog.registry import Registry
    from mixplane.catalog.takedown import every_superseded, recheck, superseded
    from mixplane.load.resolve.query import catalog_path
    from mixplane.load.resolve.takedowns import pinned_refs
    from mixplane.mix.spec import MixtureSpec

    with Registry(catalog) as registry:
        replaced = every_superseded(registry)
        gone = collected(registry.connection)
    on_disk = [item for item in replaced if item.pin not in gone]
    back = recheck(Catalog(catalog)) if replaced else []
    pinned = []
    for path in mixtures or []:
        spec = MixtureSpec.from_yaml(path)
        own = catalog_path(spec) if spec.catalog else catalog
        with Registry(own) as registry:
            pinned += superseded(registry, pinned_refs(spec), str(path))
    if as_json:
        print_json(
            {
                "superseded": [
                    item.to_json() | {"collected": gone.get(item.pin)} for item in replaced
                ],
                "pinned": [item.to_json() for item in pinned],
                "reappeared": back,
            }
        )
    else:
        _print_check(catalog, replaced, pinned, bool(mixtures), gone)
        for found in back:
            console.print(
                f"[bold red]reappeared:[/] {found['dataset']} holds {found['documents']:,} "
                f"documents takedown {found['request']} (reference "
                f"{escape(found['reference'])}) names: take them down again",
                highlight=False,
            )
    if pinned or back or (on_disk and not mixtures):
        raise typer.Exit(1)


def _print_check(
    catalog: str, replaced: list, pinned: list, mixtures: bool, gone: dict[str, str]
) -> None:
    if not replaced:
        console.print(f"no takedowns in {escape(catalog)}", highlight=False)
    else:
        table = Table(title=f"versions replaced by takedowns in {catalog}", title_justify="left")
        for column in ("version", "request", "reference", "removed", "move to", "files"):
            table.add_column(column)
        for item in replaced:
            row = item.row
            files = f"removed by gc on {gone[item.pin]}" if item.pin in gone else "on disk"
            cells = (item.pin, row.request, row.reference, f"{row.documents:,}", item.move_to)
            table.add_row(*cells, files)
        console.print(table)
        if not mixtures and any(item.pin not in gone for item in replaced):
            console.print(
                "replaced versions still hold what their takedowns removed: `mixplane gc` "
                "removes their files once nothing keeps them",
                highlight=False,
            )
    for item in pinned:
        console.print(f"[bold red]pinned:[/] {escape(item.message())}", highlight=False)
    if mixtures and not pinned:
        console.print("no mixture given pins a replaced version", highlight=False)
