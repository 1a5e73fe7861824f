"""Scoring what is already registered: `mixplane annotate` adds a classifier's scores to a
registered version as a new column, without reprocessing or copying its data.

Example:
    >>> from mixplane.annotate import annotate_dataset
    >>> result = annotate_dataset({"dataset": "web@1", "classifier": "models/quality",
    ...                            "as": "quality"})  # doctest: +SKIP
    >>> result.version.ref  # doctest: +SKIP
    'web@2'
"""

from mixplane.annotate.config import AnnotateConfig
from mixplane.annotate.run import (
    AnnotateResult,
    Annotation,
    annotate_dataset,
    plan_annotation,
    run_annotation,
)

__all__ = [
    "AnnotateConfig",
    "AnnotateResult",
    "Annotation",
    "annotate_dataset",
    "plan_annotation",
    "run_annotation",
]
