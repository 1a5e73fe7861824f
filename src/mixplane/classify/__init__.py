"""Training learned quality classifiers (fastText, as in DCLM, or a linear head on a frozen
encoder's embeddings, as in FineWeb-Edu) into model folders that the `classify` stage applies.

Example:
    >>> from mixplane.classify import train_fasttext
    >>> result = train_fasttext({"output": "models/quality", "catalog": "catalog.duckdb",
    ...     "positive": "source = 'wiki'", "negative": "source = 'web'"})  # doctest: +SKIP
    >>> result.metrics["auc"]  # doctest: +SKIP
"""

from mixplane.classify.config import ClassData, TrainConfig
from mixplane.classify.embedding import train_embedding
from mixplane.classify.embedding_config import EmbeddingTrainConfig
from mixplane.classify.imported import import_fasttext
from mixplane.classify.train import TrainResult, train_fasttext
from mixplane.classify.trainer import train_classifier
from mixplane.stages.classify.embedding import EmbeddingClassifier
from mixplane.stages.classify.model import Classifier, load_classifier

__all__ = [
    "ClassData",
    "Classifier",
    "EmbeddingClassifier",
    "EmbeddingTrainConfig",
    "TrainConfig",
    "TrainResult",
    "import_fasttext",
    "load_classifier",
    "train_classifier",
    "train_embedding",
    "train_fasttext",
]
