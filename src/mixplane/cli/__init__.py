"""The `mixplane` command. Thin: parse options, call the Python API, print.

Each command group lives in its own module and registers itself on `app`.
"""

from __future__ import annotations

import inspect
import sys

import typer

from mixplane.cli import annotate as _annotate
from mixplane.cli import audit as _audit
from mixplane.cli import catalog as _catalog
from mixplane.cli import classifier as _classifier
from mixplane.cli import demo as _demo
from mixplane.cli import gc as _gc
from mixplane.cli import mix as _mix
from mixplane.cli import process as _process
from mixplane.cli import report as _report
from mixplane.cli import serve as _serve
from mixplane.cli import synth as _synth
from mixplane.cli import takedown as _takedown
from mixplane.cli import tokenize as _tokenize
from mixplane.cli import trace as _trace
from mixplane.cli.common import app, run_app

for _module in (
    _synth,
    _process,
    _classifier,
    _tokenize,
    _catalog,
    _takedown,
    _annotate,
    _mix,
    _trace,
    _audit,
    _report,
    _demo,
    _serve,
    _gc,
):
    _module.register(app)


def prose(text: str) -> str:
    r"""A docstring's paragraphs as one line each, so the help wraps to the terminal.

    Example:
        >>> prose("Count the documents\nof a query.\n\n  Then stop.")
        'Count the documents of a query.\n\nThen stop.'
    """
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def _reflow_help(application: typer.Typer) -> None:
    for command in application.registered_commands:
        if command.help is None and command.callback is not None and command.callback.__doc__:
            command.help = prose(command.callback.__doc__)
    for group in application.registered_groups:
        if group.typer_instance is not None:
            _reflow_help(group.typer_instance)


_reflow_help(app)


def main() -> None:
    """Entry point of the `mixplane` console script."""
    sys.exit(run_app(app))


__all__ = ["app", "main", "typer"]
