"""The `mixplane` command. Thin: parse options, call the Python API, print.

Each command group lives in its own module and registers itself on `app`.
"""

from __future__ import annotations

import sys

import typer

from mixplane.cli import catalog as _catalog
from mixplane.cli import demo as _demo
from mixplane.cli import mix as _mix
from mixplane.cli import process as _process
from mixplane.cli import synth as _synth
from mixplane.cli import tokenize as _tokenize
from mixplane.cli.common import app, run_app

for _module in (_synth, _process, _tokenize, _catalog, _mix, _demo):
    _module.register(app)


def main() -> None:
    """Entry point of the `mixplane` console script."""
    sys.exit(run_app(app))


__all__ = ["app", "main", "typer"]
