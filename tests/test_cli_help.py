"""Command help reads as prose: paragraphs wrap to the terminal, not to the source's lines."""

from __future__ import annotations

import os
import subprocess
import sys


def help_text(*command: str, columns: int) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mixplane", *command, "--help"],
        capture_output=True,
        text=True,
        env=os.environ | {"COLUMNS": str(columns), "TERM": "dumb"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_help_paragraphs_wrap_to_the_terminal():
    wide = help_text("query", columns=240)
    assert "AND/OR/NOT, IN, LIKE/ILIKE, BETWEEN, IS [NOT] NULL, arithmetic, CAST" in wide
    wide = help_text("lineage", columns=240)
    assert "is named and the command fails (exit status 2)" in wide
    narrow = help_text("query", columns=50)
    assert all(len(line.rstrip()) <= 50 for line in narrow.splitlines())
