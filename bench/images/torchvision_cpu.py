"""Importing torchvision's transforms next to the CPU build of torch.

The registry's torchvision is built against CUDA torch: its compiled operators (nms and
friends) do not load here, and registering their fake kernels fails at import. Transforms
never use those operators, so the registrations that fail are skipped.

It is installed beside the benchmark (`bench/.venvs/torchvision`, without its dependencies),
not into the project's environment: there, transformers would find it and fail to import.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

VERSION = "0.28.0"
TARGET = Path(__file__).resolve().parent.parent / ".venvs" / "torchvision"


def _install() -> None:
    """torchvision into TARGET once, and TARGET onto the import path."""
    if not (TARGET / "torchvision").is_dir():
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        command += ["--target", str(TARGET), f"torchvision=={VERSION}"]
        subprocess.run(command, check=True)
    if str(TARGET) not in sys.path:
        sys.path.append(str(TARGET))


def import_torchvision() -> ModuleType:
    """`torchvision`, imported with its unloadable operators' registrations skipped."""
    _install()
    import torch

    real = torch.library.register_fake

    def tolerant(name, *args, **kwargs):
        def register(function):
            try:
                return real(name, *args, **kwargs)(function)
            except RuntimeError:  # the operator's library did not load
                return function

        return register

    torch.library.register_fake = tolerant
    try:
        return importlib.import_module("torchvision")
    finally:
        torch.library.register_fake = real
