"""What every command shares: the app, error handling, JSON output and progress bars."""

from __future__ import annotations

import sys
from typing import Any

import orjson
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mixplane.errors import MixplaneError

app = typer.Typer(
    name="mixplane",
    help="Clean, deduplicate, tokenize, catalog and stream training data mixtures.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True)


@app.callback()
def _root() -> None:
    """Clean, deduplicate, tokenize, catalog and stream training data mixtures."""


JSON_OPTION = typer.Option(False, "--json", help="Print the result as JSON on stdout.")


def run_app(application: typer.Typer) -> int:
    """Run the CLI; user mistakes become one red line and exit code 2, never a traceback."""
    try:
        # Without standalone mode click returns the code of `typer.Exit` instead of exiting.
        code = application(standalone_mode=False)
    except MixplaneError as error:
        console.print(f"[bold red]error:[/] {error}", highlight=False)
        return 2
    except (typer.Abort, KeyboardInterrupt):
        console.print("[red]aborted[/]")
        return 130
    except typer.Exit as done:
        return done.exit_code
    except Exception as error:  # click's own usage errors
        import click

        if isinstance(error, click.ClickException):
            error.show()
            return error.exit_code
        raise
    return code if isinstance(code, int) else 0


def print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")


def progress(quiet: bool = False) -> Progress:
    """A progress bar on stderr (hidden with --json or when stderr is not a terminal)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet,
        transient=False,
    )
