"""Tokenizers and tokenization: turning documents into token shards.

Names load on first use, so decoding tokens (which needs only `load_tokenizer` or
`dataset_tokenizer`) does not import the processing engine that tokenizing a corpus uses.

Example:
    >>> from mixplane.tokenize import load_tokenizer, tokenize_dataset, train_tokenizer
    >>> train_tokenizer("clean/", vocab_size=8000, out="tokenizer.json")  # doctest: +SKIP
    >>> tokenize_dataset(
    ...     {"input": "clean/", "output": "tokens/", "tokenizer": "tokenizer.json"}
    ... )  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mixplane.tokenize.base import Tokenizer
    from mixplane.tokenize.config import TokenizeConfig
    from mixplane.tokenize.load import dataset_tokenizer, load_tokenizer
    from mixplane.tokenize.run import TokenizeResult, tokenize_dataset
    from mixplane.tokenize.train import train_tokenizer

_LAZY = {
    "Tokenizer": "mixplane.tokenize.base",
    "TokenizeConfig": "mixplane.tokenize.config",
    "dataset_tokenizer": "mixplane.tokenize.load",
    "load_tokenizer": "mixplane.tokenize.load",
    "TokenizeResult": "mixplane.tokenize.run",
    "tokenize_dataset": "mixplane.tokenize.run",
    "train_tokenizer": "mixplane.tokenize.train",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'mixplane.tokenize' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "TokenizeConfig",
    "TokenizeResult",
    "Tokenizer",
    "dataset_tokenizer",
    "load_tokenizer",
    "tokenize_dataset",
    "train_tokenizer",
]
