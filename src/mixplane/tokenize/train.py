"""Training a byte-level BPE tokenizer on a corpus, with Hugging Face `tokenizers`.

Byte-level means every string, in any script, encodes without unknown tokens and decodes
back to itself exactly. Training is deterministic: the same corpus gives the same file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mixplane.errors import ConfigError
from mixplane.io.atomic import write_bytes
from mixplane.process.config import InputConfig
from mixplane.tokenize.inputs import find_input_files, read_batches

SPECIAL_TOKENS = ("<|endoftext|>", "<|startoftext|>", "<|pad|>")
BYTE_ALPHABET = 256


def train_tokenizer(
    inputs: str | list[str] | list[InputConfig],
    vocab_size: int,
    out: str,
    *,
    min_frequency: int = 2,
    special_tokens: tuple[str, ...] = SPECIAL_TOKENS,
    max_documents: int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train a byte-level BPE on the documents of `inputs` and save it as `out`.

    `inputs` is anything `mixplane tokenize` reads (a processed folder, globs of JSON Lines,
    Parquet...). Returns a summary: documents read, vocabulary size, the output path.

    Example:
        >>> train_tokenizer("clean/", vocab_size=8000, out="tokenizer.json")  # doctest: +SKIP
        {'documents': 1200, 'vocab_size': 8000, 'out': 'tokenizer.json'}
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    smallest = BYTE_ALPHABET + len(special_tokens)
    if vocab_size < smallest:
        raise ConfigError(
            f"vocab size {vocab_size} is too small: a byte-level BPE needs at least {smallest} "
            f"entries (256 bytes + {len(special_tokens)} special tokens)"
        )
    options = storage_options or {}
    specs = _input_configs(inputs)
    files = find_input_files(specs, options)
    counter = {"documents": 0}

    def texts() -> Iterator[list[str]]:
        for file in files:
            for batch in read_batches(file, specs[file.input_index], 1000, options):
                if max_documents is not None:
                    batch.texts = batch.texts[: max_documents - counter["documents"]]
                counter["documents"] += len(batch.texts)
                yield batch.texts
                if max_documents is not None and counter["documents"] >= max_documents:
                    return

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts(), trainer=trainer)
    if counter["documents"] == 0:
        raise ConfigError(f"no documents to train on in {inputs!r}")
    write_bytes(out, tokenizer.to_str(pretty=True).encode(), options)
    return {
        "documents": counter["documents"],
        "vocab_size": tokenizer.get_vocab_size(with_added_tokens=True),
        "out": out,
    }


def _input_configs(inputs: str | list[str] | list[InputConfig]) -> list[InputConfig]:
    items = inputs if isinstance(inputs, list) else [inputs]
    return [item if isinstance(item, InputConfig) else InputConfig(path=item) for item in items]
