"""The file names of a classifier model folder, shared by every kind of model.

Example:
    >>> model_file("models/q", {"kind": "fasttext"}).name
    'model.bin'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MODEL_FILE = "model.bin"
DESCRIPTION_FILE = "classifier.json"


def model_file(folder: str | Path, description: dict[str, Any]) -> Path:
    """The path of the folder's model file: the one `classifier.json` names (`model_file`),
    else `model.bin` (a fastText model)."""
    return Path(folder) / description.get("model_file", MODEL_FILE)
