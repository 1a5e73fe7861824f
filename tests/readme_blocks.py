"""The code blocks of the README and the docs, as users copy them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"


def readme_block(language: str, marker: str, document: Path = README) -> str:
    """The text of the first ```LANGUAGE block of `document` (the README unless another
    page is named) that contains `marker`."""
    blocks = re.findall(rf"```{language}\n(.*?)```", document.read_text(), flags=re.S)
    found = [block for block in blocks if marker in block]
    if not found:
        raise LookupError(f"{document.name} has no {language} block containing {marker!r}")
    return found[0]


def run_commands(cli, block: str) -> list[str]:
    """Run each `mixplane ...` line of a bash block through the `cli` fixture, as a user
    pastes them (comments dropped); each must succeed. Their outputs, in order."""
    import shlex

    outputs = []
    for line in block.strip().splitlines():
        command = shlex.split(line, comments=True)
        assert command[0] == "mixplane"
        code, out, err = cli(*command[1:])
        assert code == 0, err
        outputs.append(out)
    return outputs
