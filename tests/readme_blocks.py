"""The README's code blocks, as users copy them."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def readme_block(language: str, marker: str) -> str:
    """The text of the README's first ```LANGUAGE block that contains `marker`."""
    blocks = re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)
    found = [block for block in blocks if marker in block]
    if not found:
        raise LookupError(f"README.md has no {language} block containing {marker!r}")
    return found[0]
