"""mixplane: the data plane between raw corpora and a training loop.

Example:
    >>> from mixplane import Pipeline
    >>> pipeline = Pipeline.from_yaml("pipeline.yaml")  # doctest: +SKIP
    >>> result = pipeline.run()  # doctest: +SKIP
"""

from mixplane.document import Document, Drop
from mixplane.errors import MixplaneError
from mixplane.process.config import PipelineConfig
from mixplane.process.pipeline import Pipeline, run_pipeline
from mixplane.process.stage import Stage

__version__ = "0.1.0"

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
