"""`mixplane tokenize`, `mixplane train-tokenizer` and `mixplane export`."""

from __future__ import annotations

import typer
from rich.table import Table

from mixplane.cli.common import (
    JSON_OPTION,
    RAY_ADDRESS_OPTION,
    STORAGE_OPTION,
    console,
    print_json,
    progress,
    status,
    storage_options,
)
from mixplane.errors import ConfigError


def register(app: typer.Typer) -> None:
    app.command("tokenize")(tokenize)
    app.command("train-tokenizer")(train_tokenizer_command)
    app.command("export")(export)


def tokenize(
    input: list[str] = typer.Argument(
        ..., help="Processed folder(s), files or globs to tokenize.", show_default=False
    ),
    output: str = typer.Argument(..., help="Output folder for the token shards."),
    tokenizer: str = typer.Option(
        ..., "--tokenizer", "-t", help="tokenizer.json, a .model file, tiktoken:NAME or hub name."
    ),
    bos: bool = typer.Option(False, "--bos", help="Add the BOS token before every document."),
    eos: bool = typer.Option(False, "--eos", help="Add the EOS token after every document."),
    bos_token: str | None = typer.Option(None, "--bos-token", help="BOS token text to use."),
    eos_token: str | None = typer.Option(None, "--eos-token", help="EOS token text to use."),
    batch_size: int = typer.Option(1000, "--batch-size", help="Documents per encode call."),
    workers: int = typer.Option(1, "--workers", "-w", help="Parallel tasks (one per file)."),
    executor: str = typer.Option("local", "--executor", help="'local' or 'ray'."),
    ray_address: str | None = RAY_ADDRESS_OPTION,
    shard_size_mb: float = typer.Option(
        256.0, "--shard-size-mb", help="Target size of each shard's token file."
    ),
    group_by: str | None = typer.Option(
        None,
        "--group-by",
        help="Property whose value each shard holds one of (e.g. language): a mixture that "
        "selects by it then reads whole shards.",
    ),
    text_key: str = typer.Option("text", "--text-key", help="Field holding the text."),
    chat: bool = typer.Option(
        False,
        "--chat",
        help="The records are conversations: render them with the chat template and store a "
        "loss mask (the options below imply it).",
    ),
    train_on: str | None = typer.Option(
        None, "--train-on", help="Roles trained on, comma-separated, or 'all' [assistant]."
    ),
    messages_key: str | None = typer.Option(
        None, "--messages-key", help="Field holding the messages [messages]."
    ),
    prompt_key: str | None = typer.Option(
        None, "--prompt-key", help="Instead of messages: field holding a prompt."
    ),
    response_key: str | None = typer.Option(
        None, "--response-key", help="With --prompt-key: field holding the response."
    ),
    chat_template: str | None = typer.Option(
        None, "--chat-template", help="A Jinja chat template file [the tokenizer's]."
    ),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Tokenize documents into memory-mappable token shards with per-document metadata.

    The last argument is the output folder. Reruns skip input files already tokenized with
    the same options, so an interrupted run can simply be repeated.
    """
    from mixplane.tokenize import TokenizeConfig, tokenize_dataset

    if not input:
        raise ConfigError("give at least one input and the output folder")
    chat_options = {
        "train_on": None if train_on is None else _roles(train_on),
        "messages_key": messages_key,
        "prompt_key": prompt_key,
        "response_key": response_key,
        "template": None if chat_template is None else _read_template(chat_template),
    }
    chat_options = {key: value for key, value in chat_options.items() if value is not None}
    config = TokenizeConfig.parse(
        {
            "input": [{"path": path, "text_key": text_key} for path in input],
            "output": output,
            "tokenizer": tokenizer,
            "bos": bos,
            "eos": eos,
            "bos_token": bos_token,
            "eos_token": eos_token,
            "batch_size": batch_size,
            "workers": workers,
            "executor": executor,
            "ray_address": ray_address,
            "shard_size_mb": shard_size_mb,
            "group_by": group_by,
            "chat": chat_options if chat or chat_options else None,
            "storage_options": storage_options(storage),
        }
    )
    with progress(as_json) as bar:
        handle = bar.add_task("tokenizing", total=None)
        result = tokenize_dataset(
            config,
            on_planned=lambda tasks: bar.update(handle, total=len(tasks)),
            on_done=lambda _: bar.advance(handle),
        )
    stats = result.stats
    if as_json:
        print_json({"stats": stats, "manifest": result.manifest})
        return
    table = Table(title=f"tokenized in {result.seconds:.1f}s", title_justify="left")
    for column in ("documents", "tokens", "shards", "quarantined", "tokens/s"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{stats['documents']:,}",
        f"{stats['tokens']:,}",
        f"{stats['shards']:,}",
        f"{stats['quarantined']:,}",
        f"{stats['tokens_per_second']:,}",
    )
    console.print(table)
    if stats["skipped_tasks"]:
        console.print(f"{stats['skipped_tasks']} of {stats['tasks']} files were already done")
    console.print(f"manifest: {result.manifest}")


def _roles(text: str) -> list[str] | str:
    return "all" if text.strip() == "all" else [r.strip() for r in text.split(",") if r.strip()]


def _read_template(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        raise ConfigError(f"--chat-template {path}: {error.strerror}") from None


def train_tokenizer_command(
    input: list[str] = typer.Argument(..., help="Corpus: folders, files or globs."),
    vocab_size: int = typer.Option(..., "--vocab-size", help="Vocabulary size to train."),
    out: str = typer.Option("tokenizer.json", "--out", "-o", help="Where to save the tokenizer."),
    min_frequency: int = typer.Option(2, "--min-frequency", help="Minimum pair count to merge."),
    max_documents: int | None = typer.Option(
        None, "--max-documents", help="Train on the first N documents only."
    ),
    text_key: str = typer.Option("text", "--text-key", help="Field holding the text."),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Train a byte-level BPE tokenizer and save it as a tokenizer.json."""
    from mixplane.process.config import InputConfig
    from mixplane.tokenize import train_tokenizer

    specs = [InputConfig(path=path, text_key=text_key) for path in input]
    summary = train_tokenizer(
        specs,
        vocab_size,
        out,
        min_frequency=min_frequency,
        max_documents=max_documents,
        storage_options=storage_options(storage),
    )
    if as_json:
        print_json(summary)
    else:
        console.print(
            f"trained a {summary['vocab_size']:,}-entry byte-level BPE on "
            f"{summary['documents']:,} documents: {summary['out']}"
        )


def export(
    source: str = typer.Argument(
        ...,
        help="What to export: a tokenized dataset folder, a mixture YAML (one pair per "
        "component and the blend), or a catalog (.duckdb) with --where.",
    ),
    out: str = typer.Argument(
        ..., help="Output prefix (OUT.bin and OUT.idx), or folder for a mixture."
    ),
    where: str | None = typer.Option(
        None, "--where", help="With a catalog: export the documents of this predicate."
    ),
    format: str = typer.Option("megatron", "--format", help="Export format: megatron."),
    storage: str | None = STORAGE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Export token data to Megatron's .bin/.idx: a dataset, a query's selection, or a
    mixture with the --data-path blend Megatron takes."""
    from mixplane.load.tools.export import export_mixture, export_selection
    from mixplane.store import export_megatron

    if format != "megatron":
        raise ConfigError(f"unknown export format {format!r}; valid formats: megatron")
    if source.endswith((".yaml", ".yml")):
        summary = export_mixture(source, out)
        parts = summary["components"]
    elif source.endswith(".duckdb"):
        if where is None:
            raise ConfigError("exporting from a catalog needs --where PREDICATE")
        summary = export_selection(where, source, out)
        parts = [summary]
    else:
        summary = export_megatron(source, out, storage_options(storage))
        parts = [summary]
    if as_json:
        print_json(summary)
        return
    for part in parts:
        console.print(
            f"exported {part['documents']:,} documents, {part['tokens']:,} tokens "
            f"({part['dtype']}): {part['bin']}, {part['idx']}"
        )
    if "data_path" in summary:
        console.print(f"Megatron blend: --data-path {summary['data_path']}", soft_wrap=True)
        if summary["scheduled"]:
            status.print(
                "[yellow]note:[/] the mixture's schedule is not part of the blend (step 0 weights)"
            )
