"""Training learned quality classifiers (fastText, as in DCLM) into model folders that the
`classify` stage applies.

Example:
    >>> from mixplane.classify import train_fasttext
    >>> result = train_fasttext({"output": "models/quality", "catalog": "catalog.duckdb",
    ...     "positive": "source = 'wiki'", "negative": "source = 'web'"})  # doctest: +SKIP
    >>> result.metrics["auc"]  # doctest: +SKIP
"""

from mixplane.classify.config import ClassData, TrainConfig
from mixplane.classify.imported import import_fasttext
from mixplane.classify.train import TrainResult, train_fasttext
from mixplane.stages.classify.model import Classifier, load_classifier

__all__ = [
    "ClassData",
    "Classifier",
    "TrainConfig",
    "TrainResult",
    "import_fasttext",
    "load_classifier",
    "train_fasttext",
]
