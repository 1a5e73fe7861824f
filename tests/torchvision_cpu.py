"""Importing torchvision's transforms next to the CPU build of torch.

The registry's torchvision is built against CUDA torch: its compiled operators (nms and
friends) do not load here, and registering their fake kernels fails at import. Transforms
never use those operators, so the registrations that fail are skipped.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def import_torchvision() -> ModuleType:
    """`torchvision`, imported with its unloadable operators' registrations skipped."""
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
