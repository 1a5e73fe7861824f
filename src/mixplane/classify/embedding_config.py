"""How to train an embedding classifier: a linear head on a frozen encoder's embeddings.

One model shared by YAML files, the CLI and the Python API (`kind: embedding` picks it).

Regression on scores, as FineWeb-Edu (documents scored 0-5, the scores in a file of
(id, score) rows or in a field of the documents):

    kind: embedding
    output: models/edu
    encoder: models/minilm              # a sentence-transformers / Hugging Face folder
    documents: annotated/               # files, or a predicate with `catalog`
    labels: annotated/scores.csv        # optional: without it the documents' own field
    label_key: score
    threshold: 3                        # held-out precision / recall / F1 at this cut

Classification (logistic), from two selections as the fastText classifier is trained, or
from documents labelled 0/1:

    kind: embedding
    output: models/quality-emb
    encoder: models/minilm
    positive: clean/wiki
    negative: clean/web
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from mixplane.classify.config import ClassData, TrainCommon


class EmbeddingTrainConfig(TrainCommon):
    """A linear head trained on a frozen encoder's embeddings.

    `head: regression` fits the documents' scores (mean squared error); `classification`
    fits the probability of the positive class (logistic loss). The head starts at zero
    weights and the targets' mean (or its log-odds), and trains with AdamW on minibatches
    in a seeded order, its learning rate falling linearly to 0. With the same data, config,
    seed and `threads`, the head file is byte-identical.
    """

    data_keys: ClassVar[tuple[str, ...]] = ("positive", "negative", "documents")

    kind: Literal["embedding"] = Field("embedding", description="the model: a head on an encoder")
    encoder: str = Field(description="the encoder folder (sentence-transformers or Hugging Face)")
    head: Literal["regression", "classification"] | None = Field(
        None,
        description="regression (scores) or classification; default: classification with "
        "positive/negative, regression with documents",
    )
    positive: ClassData | None = Field(None, description="classification: the positive class")
    negative: ClassData | None = Field(None, description="classification: the negative class")
    documents: ClassData | None = Field(None, description="documents with a label each")
    labels: str | None = Field(
        None, description="file of (id, label) rows (JSON Lines, CSV or Parquet) joined by id"
    )
    label_key: str | None = Field(
        None, description="the field holding the label: in `labels`, or else in the documents"
    )
    id_key: str = Field("id", description="the field holding the document id in `labels`")
    positive_label: str = Field("hq", pattern=r"^\S+$", description="classification's labels")
    negative_label: str = Field("lq", pattern=r"^\S+$")
    max_per_class: int | None = Field(None, ge=1, description="with positive/negative")
    max_examples: int | None = Field(None, ge=1, description="with documents: at most this many")
    threshold: float | None = Field(
        None,
        description="where held-out scores are cut for precision/recall/F1 (regression: 3, "
        "classification: 0.5)",
    )
    epoch: int = Field(20, ge=1, description="passes over the training examples")
    lr: float = Field(0.03, gt=0.0, description="AdamW's peak learning rate")
    batch_size: int = Field(32, ge=1, description="training examples per step")
    weight_decay: float = Field(0.0, ge=0.0, description="AdamW's weight decay")
    embed_batch_size: int = Field(32, ge=1, description="texts per encoder batch")
    max_length: int | None = Field(
        None, ge=1, description="tokens per text at most (default: the encoder's limit)"
    )
    threads: int = Field(1, ge=1, description="PyTorch threads (the result depends on it)")

    @model_validator(mode="after")
    def _consistent(self) -> EmbeddingTrainConfig:
        pair = self.positive is not None or self.negative is not None
        if pair == (self.documents is not None):
            raise ValueError(
                "give either positive and negative (two classes) or documents with labels"
            )
        if pair:
            if self.positive is None or self.negative is None:
                raise ValueError("give both positive and negative")
            if self.head == "regression":
                raise ValueError("regression needs scores: give documents and label_key")
            for key in ("labels", "label_key", "max_examples"):
                if getattr(self, key) is not None:
                    raise ValueError(f"{key} goes with documents, not positive/negative")
            self.head = "classification"
        else:
            if self.label_key is None:
                raise ValueError("documents need label_key: the field holding each label")
            if self.max_per_class is not None:
                raise ValueError("max_per_class goes with positive/negative; use max_examples")
            self.head = self.head or "regression"
        if self.positive_label == self.negative_label:
            raise ValueError("positive_label and negative_label must differ")
        if self.threshold is None:
            self.threshold = 3.0 if self.head == "regression" else 0.5
        self.check_catalog()
        return self
