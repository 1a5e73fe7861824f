"""mixplane: the data plane between raw corpora and a training loop.

The processing API is imported on first use, so a training node that only loads data
(`import mixplane.load`) does not pay for the processing engine.

Example:
    >>> from mixplane import Pipeline
    >>> pipeline = Pipeline.from_yaml("pipeline.yaml")  # doctest: +SKIP
    >>> result = pipeline.run()  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mixplane._version import __version__
from mixplane.errors import MixplaneError

if TYPE_CHECKING:
    from mixplane.document import Document, Drop
    from mixplane.process.config import PipelineConfig
    from mixplane.process.pipeline import Pipeline, run_pipeline
    from mixplane.stages.base import Stage

_LAZY = {
    "Document": "mixplane.document",
    "Drop": "mixplane.document",
    "PipelineConfig": "mixplane.process.config",
    "Pipeline": "mixplane.process.pipeline",
    "run_pipeline": "mixplane.process.pipeline",
    "Stage": "mixplane.stages.base",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'mixplane' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "Document",
    "Drop",
    "MixplaneError",
    "Pipeline",
    "PipelineConfig",
    "Stage",
    "run_pipeline",
    "__version__",
]
