"""Writing a model folder: all of it or nothing, never over an existing one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from mixplane.errors import ConfigError
from mixplane.stages.classify.model import DESCRIPTION_FILE


def check_new_folder(target: Path) -> None:
    """Refuse to write over an existing path (before the work that would fill it)."""
    if target.exists():
        raise ConfigError(f"{target}: already exists; choose a new folder or remove it first")


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """A new folder beside `target`, renamed to `target` when the block completes and
    removed if it fails, so a model folder is never seen half-written.

    Example:
        >>> with staged_folder(Path("models/q")) as folder:  # doctest: +SKIP
        ...     (folder / "model.bin").write_bytes(data)
    """
    check_new_folder(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp's private mode would stay on the published folder
    try:
        yield staging
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_description(folder: Path, description: dict[str, Any]) -> None:
    (folder / DESCRIPTION_FILE).write_bytes(
        orjson.dumps(description, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    )


def require_fasttext(purpose: str) -> Any:
    """The fasttext module, or a ConfigError saying how to install it."""
    try:
        import fasttext
    except ImportError as error:
        raise ConfigError(
            f"{purpose} needs the fasttext package ({error}): pip install 'mixplane[classify]'"
        ) from None
    return fasttext


def fasttext_version() -> str | None:
    """The installed fastText binding's version (one of its distributions' names)."""
    for name in ("fasttext-numpy2-wheel", "fasttext-wheel", "fasttext"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None
