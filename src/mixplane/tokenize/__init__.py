"""Tokenizers and tokenization: turning documents into token shards.

Example:
    >>> from mixplane.tokenize import load_tokenizer, tokenize_dataset, train_tokenizer
    >>> train_tokenizer("clean/", vocab_size=8000, out="tokenizer.json")  # doctest: +SKIP
    >>> tokenize_dataset(
    ...     {"input": "clean/", "output": "tokens/", "tokenizer": "tokenizer.json"}
    ... )  # doctest: +SKIP
"""

from mixplane.tokenize.base import Tokenizer
from mixplane.tokenize.config import TokenizeConfig
from mixplane.tokenize.load import load_tokenizer
from mixplane.tokenize.run import TokenizeResult, tokenize_dataset
from mixplane.tokenize.train import train_tokenizer

__all__ = [
    "TokenizeConfig",
    "TokenizeResult",
    "Tokenizer",
    "load_tokenizer",
    "tokenize_dataset",
    "train_tokenizer",
]
