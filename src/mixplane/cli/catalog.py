"""`mixplane catalog register|list|show`, `mixplane query` and `mixplane lineage`.

The catalog modules (and DuckDB) are imported inside the commands, so other commands start
without loading them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from mixplane.cli.common import (
    JSON_OPTION,
    STORAGE_OPTION,
    console,
    print_json,
    progress,
    storage_options,
)
from mixplane.errors import MixplaneError

if TYPE_CHECKING:
    from mixplane.catalog import Selection
    from mixplane.lineage import Step

DEFAULT_CATALOG = "catalog.duckdb"  # the same default as mixplane.catalog.Catalog

catalog_app = typer.Typer(
    help="Register tokenized or image-text datasets and list their versions.", no_args_is_help=True
)
CATALOG_OPTION = typer.Option(
    DEFAULT_CATALOG, "--catalog", "-c", help="Catalog file (DuckDB); created on first register."
)
TEXT_PREVIEW = 300


def register(app: typer.Typer) -> None:
    app.add_typer(catalog_app, name="catalog")
    app.command("query")(query)
    app.command("lineage")(lineage)


@catalog_app.command("register")
def register_dataset(
    folder: str = typer.Argument(
        ...,
        help="A folder written by `mixplane tokenize`, or by `mixplane process` with "
        "output_format webdataset.",
    ),
    name: str = typer.Option(..., "--name", "-n", help="Dataset name; versions are NAME@N."),
    catalog: str = CATALOG_OPTION,
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Record a tokenized folder as the next version of NAME (no-op when nothing changed)."""
    from mixplane.catalog import Catalog

    version, created = Catalog(catalog, storage_options(storage)).register_verbose(folder, name)
    if as_json:
        print_json(version.summary() | {"created": created})
        return
    verb = "registered" if created else "unchanged, already registered as"
    console.print(
        f"{verb} [bold]{version.ref}[/]: {version.documents:,} documents, "
        f"{_contents(version)} in {len(version.shards)} shards, "
        f"{len(version.schema)} columns"
    )


def _contents(version) -> str:
    """What a version's documents hold: its token count, or that they are image-text or
    audio-text samples."""
    if version.kind != "tokens":
        return f"{version.kind.replace('_', '-')} samples (no tokens)"
    if version.masks:
        return f"{version.tokens:,} tokens with loss masks"
    return f"{version.tokens:,} tokens"


@catalog_app.command("list")
def list_datasets(catalog: str = CATALOG_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Every version of every dataset."""
    from mixplane.catalog import Catalog

    opened = Catalog(catalog)
    versions, gone = opened.versions(), opened.collected()
    if as_json:
        print_json(
            [version.summary() | {"collected": gone.get(version.ref)} for version in versions]
        )
        return
    table = Table(title=f"datasets in {catalog}", title_justify="left")
    columns = ("dataset", "documents", "tokens", "shards", "tokenizer", "registered", "uri")
    for column in columns:
        table.add_column(column, justify="right" if column in ("documents", "tokens") else "left")
    for version in versions:
        table.add_row(
            version.ref,
            f"{version.documents:,}",
            f"{version.tokens:,}",
            str(len(version.shards)),
            version.kind.replace("_", "-")
            if version.kind != "tokens"
            else str(version.tokenizer.get("spec", "")),
            version.registered_at,
            f"files removed by gc on {gone[version.ref]}" if version.ref in gone else version.uri,
        )
    console.print(table)


@catalog_app.command("show")
def show_dataset(
    dataset: str = typer.Argument(..., help="NAME (latest version) or NAME@N."),
    catalog: str = CATALOG_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """A version's counts, tokenizer and the property columns queries can use."""
    from mixplane.catalog import Catalog

    opened = Catalog(catalog)
    version = opened.get(dataset)
    removed = opened.collected().get(version.ref)
    if as_json:
        print_json(version.summary() | {"collected": removed})
        return
    if version.kind == "image_text":
        holds = f"{len(version.shards)} shards of image-text samples (captions, no tokens)"
    elif version.kind == "audio_text":
        holds = f"{len(version.shards)} shards of audio clips (transcripts, no tokens)"
    else:
        holds = (
            f"{version.tokens:,} tokens, {len(version.shards)} shards, "
            f"tokenizer {version.tokenizer.get('spec', '?')}"
        )
    console.print(f"[bold]{version.ref}[/] {version.uri}\n{version.documents:,} documents, {holds}")
    if removed:
        console.print(f"its files were removed by gc on {removed}: what it was, not data to read")
    table = Table("column", "type")
    for name, kind in version.summary()["columns"].items():
        table.add_row(name, kind)
    console.print(table)


def query(
    where: str = typer.Argument(..., help="A boolean SQL predicate over document properties."),
    catalog: str = CATALOG_OPTION,
    datasets: list[str] | None = typer.Option(
        None, "--datasets", "-d", help="NAME or NAME@N (repeatable, or comma-separated)."
    ),
    count: bool = typer.Option(False, "--count", help="Print only the counts."),
    sample: int = typer.Option(
        0, "--sample", "-s", min=0, help="Show K matching documents with their text."
    ),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Count (and show) the documents matching WHERE, per dataset.

    WHERE may use property columns (see `catalog show`), literals, comparisons, AND/OR/NOT,
    IN, LIKE/ILIKE, BETWEEN, IS [NOT] NULL, arithmetic, CAST and pure functions such as
    lower, length, coalesce, list_contains, starts_with and regexp_matches.

    Example: mixplane query "language = 'de' AND quality > 0.5" --catalog catalog.duckdb
    """
    from mixplane.catalog import Catalog
    from mixplane.catalog.sample import sample_documents
    from mixplane.refs import split_refs

    refs = split_refs(datasets)
    selection = Catalog(catalog, storage_options(storage)).select(where, refs or None)
    examples = [row for part in selection for row in sample_documents(part, sample)]
    if as_json:
        print_json(selection.summary() | ({"samples": examples} if sample else {}))
    elif count:
        for part in selection:
            console.print(f"{part.dataset}: {part.documents:,} documents, {part.tokens:,} tokens")
    else:
        print_selection(selection)
        for example in examples:
            print_example(example)


def print_selection(selection: Selection) -> None:
    table = Table(title=f"where {selection.where}", title_justify="left")
    for column in ("dataset", "documents", "of documents", "tokens", "of tokens", "ranges"):
        table.add_column(column, justify="left" if column == "dataset" else "right")
    for part in selection:
        table.add_row(
            part.dataset,
            f"{part.documents:,}",
            _share(part.documents, part.total_documents),
            f"{part.tokens:,}",
            _share(part.tokens, part.total_tokens),
            f"{part.ranges:,}",
        )
    if len(selection) > 1:
        table.add_row("total", f"{selection.documents:,}", "", f"{selection.tokens:,}", "", "")
    console.print(table)


def print_example(example: dict) -> None:
    hidden = {"dataset", "shard", "index", "text"}
    if example.get("caption") is not None and example.get("caption") == example.get("text"):
        hidden.add("caption")  # an image-text sample: its caption is shown as its text
    properties = ", ".join(f"{k}={v!r}" for k, v in example.items() if k not in hidden)
    console.print(
        f"[bold]{example['dataset']}[/] {example['shard']}#{example['index']} "
        + escape(properties),
        highlight=False,
    )
    text = example.get("text")
    if text is None:
        console.print("  [dim](no token files to decode)[/]")
    else:
        shown = text if len(text) <= TEXT_PREVIEW else text[:TEXT_PREVIEW] + "…"
        console.print("  " + shown.replace("\n", "\n  "), highlight=False, markup=False)


def _share(part: int, total: int) -> str:
    return f"{100 * part / total:.2f}%" if total else "-"


def lineage(
    folder: str = typer.Argument(
        ..., help="An output folder (or its _manifest.json), or a registered NAME@N."
    ),
    catalog: str = typer.Option(
        DEFAULT_CATALOG, "--catalog", "-c", help="Catalog file, for a dataset NAME@N."
    ),
    verify_files: bool = typer.Option(
        False, "--verify", help="Recompute the hash of every file on the way."
    ),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Walk the manifests from FOLDER back to the raw inputs and configs that produced it.

    FOLDER may be a registered dataset version (NAME@N, or NAME for the latest) when no
    such folder exists: its lineage starts from its newest added column (`mixplane
    annotate`), if any, else from its shards' folder.

    With --verify, every recorded file is hashed again; a missing or changed file is named
    and the command fails (exit status 2).
    """
    from mixplane.lineage import recorded_files, trace, verify

    options = storage_options(storage)
    start, dataset = _lineage_start(folder, catalog, options)
    steps = trace(start, options)
    checks = []
    if verify_files:
        total = len(recorded_files(steps))
        with progress(quiet=as_json) as bar:
            handle = bar.add_task("verifying", total=total)
            checks = verify(steps, options, on_checked=lambda _: bar.advance(handle))
    failures = [check for check in checks if not check.ok]
    if as_json:
        payload = {"steps": [step.summary() for step in steps], "raw_inputs": _raw(steps)}
        if dataset:
            payload["dataset"] = dataset
        if verify_files:
            payload["verified"] = len(checks)
            payload["failures"] = [check.to_json() for check in failures]
        print_json(payload)
    else:
        console.print(_tree(steps, dataset))
        if verify_files:
            for check in failures:
                console.print(f"[bold red]✗[/] {check.url}: {check.problem}", highlight=False)
            if not failures:
                console.print(f"[green]✓[/] {len(checks)} files match their manifests")
    if failures:
        first = failures[0]
        raise MixplaneError(
            f"verification failed for {len(failures)} of {len(checks)} files; "
            f"first: {first.url}: {first.problem}"
        )


def _lineage_start(location: str, catalog: str, options: dict) -> tuple[str, str | None]:
    """The folder `location` names, or that of the registered version it names (and then
    the version's reference)."""
    import os

    from mixplane.refs import NAME

    if "://" in location or os.path.exists(location) or not os.path.exists(catalog):
        return location, None
    if not NAME.match(location.partition("@")[0]):
        return location, None
    from mixplane.catalog import Catalog

    version = Catalog(catalog, options).get(location)
    return version.lineage_root, version.ref


def _raw(steps: list[Step]) -> list[dict]:
    folders = {step.folder for step in steps}
    return [item for step in steps for item in step.raw_inputs(folders)]


def _tree(steps: list[Step], dataset: str | None = None) -> Tree:
    by_url = {step.manifest_url: step for step in steps}
    folders = {step.folder for step in steps}
    placed: set[str] = set()

    def add(node: Tree, step: Step) -> None:
        placed.add(step.manifest_url)
        branch = node.add(_describe(step))
        raw = step.raw_inputs(folders)
        if raw:
            inputs = branch.add(f"raw inputs: {len(raw)} files")
            for item in raw:
                size = item.get("size")
                size_text = f"{size:,} bytes" if isinstance(size, int) else "size unknown"
                inputs.add(f"{item['url']}  ({size_text}, {item.get('fingerprint')})")
        for parent in step.parents:
            if parent in step.missing_parents:
                branch.add(f"[red]missing parent manifest {parent}[/]")
            elif parent in by_url and parent not in placed:
                add(branch, by_url[parent])

    root = Tree(f"lineage of {dataset + ' in ' if dataset else ''}{steps[0].folder}")
    add(root, steps[0])
    return root


def _annotation(manifest: dict) -> str:
    """What an annotate step added and from what: the column, the version scored, the
    classifier and its model hash, and where the text came from."""
    column = (manifest.get("column") or {}).get("name")
    source = (manifest.get("source") or {}).get("dataset")
    model = manifest.get("classifier") or {}
    text = (manifest.get("text") or {}).get("reason")
    sha = str(model.get("model_sha256") or "")[:16]
    return (
        f"column {column} of {source} · classifier {model.get('folder')} (sha256 {sha}, "
        f"label {model.get('label')}) · text {text}"
    )


def _takedown(done: dict) -> str:
    """What a takedown removed, and the request and reference it answered."""
    removed = done.get("removed") or {}
    return (
        f"takedown {done.get('request')} (reference {done.get('reference')}) removed "
        f"{removed.get('documents', 0):,} documents of {done.get('dataset')}"
    )


def _describe(step: Step) -> str:
    manifest = step.manifest
    parts = [f"[bold]{step.kind}[/] {step.folder}"]
    if manifest.get("created_at"):
        parts.append(f"at {manifest['created_at']}")
    if manifest.get("version"):
        parts.append(f"mixplane {manifest['version']}")
    config = manifest.get("config") or {}
    stages = [stage.get("name") for stage in config.get("stages", []) if isinstance(stage, dict)]
    if stages:
        parts.append("stages " + ", ".join(map(str, stages)))
    if step.kind == "annotate":
        parts.append(_annotation(manifest))
    if manifest.get("takedown"):
        parts.append(_takedown(manifest["takedown"]))
    tokenizer = manifest.get("tokenizer") or {}
    if tokenizer.get("spec"):
        parts.append(f"tokenizer {tokenizer['spec']}")
    if manifest.get("config_hash"):
        parts.append(f"config {str(manifest['config_hash'])[:12]}")
    stats = manifest.get("stats") or {}
    if stats:
        parts.append(", ".join(f"{k} {v:,}" for k, v in stats.items() if isinstance(v, int)))
    return " · ".join(parts)
