"""What an extraction engine returns, shared by the engines."""

from __future__ import annotations

from typing import NamedTuple


class Extracted(NamedTuple):
    """A page's main text (empty when none), its title and its canonical URL (or None)."""

    text: str
    title: str | None
    url: str | None
