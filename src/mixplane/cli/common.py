"""What every command shares: the app, error handling, JSON output and progress bars.

Results (tables, counts, summaries, JSON) go to stdout through `console`, so `> file` and
pipes take them; progress bars, notes, warnings and errors go to stderr through `status`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import orjson
import typer
from rich.console import Console
from rich.markup import escape

from mixplane.errors import ConfigError, MixplaneError

if TYPE_CHECKING:
    from rich.progress import Progress

app = typer.Typer(
    name="mixplane",
    help="Clean, deduplicate, tokenize, catalog and stream training data mixtures.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Width of results written to a file or a pipe: lines as long as the results need.
UNWRAPPED_WIDTH = 1000


def _results_console() -> Console:
    """The stdout console. A file or a pipe has no width: rather than Rich's 80 columns,
    which would cut paths and dates in tables short, lines are not wrapped (unless COLUMNS
    says otherwise)."""
    results = Console()
    if not results.is_terminal and "COLUMNS" not in os.environ:
        results.width = UNWRAPPED_WIDTH
    return results


def _status_console() -> Console:
    """The stderr console. In a terminal long messages wrap at words; into a file or a pipe
    a message stays on its line (Rich would cut it at 80 columns), so a one-line error is
    one line for `grep` and logs."""
    messages = Console(stderr=True)
    if not messages.is_terminal:
        messages.soft_wrap = True
    return messages


console = _results_console()
status = _status_console()


@app.callback()
def _root() -> None:
    """Clean, deduplicate, tokenize, catalog and stream training data mixtures."""


JSON_OPTION = typer.Option(False, "--json", help="Print the result as JSON on stdout.")
RAY_ADDRESS_OPTION = typer.Option(
    None,
    "--ray-address",
    help="With --executor ray: the Ray cluster to run on (HEAD:6379, as `ray start --head` "
    "printed); default: a Ray of this machine's own.",
    show_default=False,
)
STORAGE_OPTION = typer.Option(
    None,
    "--storage-options",
    help="fsspec options for remote URLs, as a JSON object, e.g. "
    '\'{"client_kwargs": {"endpoint_url": "http://localhost:9000"}}\'.',
    show_default=False,
)


def storage_options(value: str | None) -> dict[str, Any]:
    """The `--storage-options` JSON as a dict (empty when not given)."""
    if not value:
        return {}
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError as error:
        raise ConfigError(f"--storage-options is not valid JSON: {error}") from None
    if not isinstance(parsed, dict):
        raise ConfigError("--storage-options must be a JSON object")
    return parsed


# Optional packages and the extra that installs each (see pyproject.toml).
EXTRA_OF_MODULE = {
    **dict.fromkeys(
        [
            "trafilatura",
            "warcio",
            "fastwarc",
            "resiliparse",
            "ftfy",
            "py3langid",
            "tokenizers",
            "tiktoken",
            "sentencepiece",
        ],
        "process",
    ),
    "aiohttp": "http",
    "fasttext": "classify",
    "torch": "load",
    "PIL": "images",
    "ray": "ray",
    "s3fs": "s3",
    "gcsfs": "gcs",
    "datasets": "hf",
    "huggingface_hub": "hf",
    "matplotlib": "plot",
}


def run_app(application: typer.Typer) -> int:
    """Run the CLI; user mistakes become one red line and exit code 2 (stage errors, whose
    tracebacks are in the output's `_errors/`: 1), never a traceback."""
    try:
        # Without standalone mode click returns the code of `typer.Exit` instead of exiting.
        code = application(standalone_mode=False)
    except MixplaneError as error:
        # The message is text, not markup: a path like `raw/[ab].jsonl` is printed as it is.
        status.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False)
        return error.exit_code
    except ModuleNotFoundError as error:
        extra = EXTRA_OF_MODULE.get((error.name or "").split(".")[0])
        if extra is None:
            raise
        status.print(
            f"[bold red]error:[/] this needs the package {error.name!r}, which this install "
            f"does not have: pip install 'mixplane\\[{extra}]'",
            highlight=False,
            soft_wrap=True,
        )
        return 2
    except (typer.Abort, KeyboardInterrupt):
        status.print("[red]aborted[/]")
        return 130
    except typer.Exit as done:
        return done.exit_code
    except Exception as error:
        if is_usage_error(error):
            error.show()  # on stderr, with the usage line
            return error.exit_code
        raise
    return code if isinstance(code, int) else 0


def is_usage_error(error: Exception) -> bool:
    """A usage mistake click reports itself (missing argument, unknown option...): click's
    `ClickException`, or the same class of the click copy recent typer versions ship with."""
    import click

    if isinstance(error, click.ClickException):
        return True
    return any(
        kind.__name__ == "ClickException" and kind.__module__.endswith("click.exceptions")
        for kind in type(error).__mro__
    ) and isinstance(getattr(error, "exit_code", None), int)


def print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")


def progress(quiet: bool = False) -> Progress:
    """A progress bar on stderr (hidden with --json or when stderr is not a terminal)."""
    # Imported here: a command that shows no bar (trace) starts without it.
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=status,
        disable=quiet,
        transient=False,
    )
