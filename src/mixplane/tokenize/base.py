"""The interface every tokenizer backend offers, whatever library is underneath.

A backend encodes batches of texts to lists of ids, decodes ids back to text, and knows its
vocabulary size and its BOS/EOS ids (None when it has none or they were not asked for).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import xxhash

from mixplane.errors import ConfigError


@dataclass(frozen=True)
class Embedded:
    """A tokenizer saved beside the token shards, so they decode without the original file."""

    file_name: str
    content: bytes

    def __repr__(self) -> str:  # short: it keys caches of loaded tokenizers
        return f"Embedded({self.file_name!r}, xxh3_128:{xxhash.xxh3_128_hexdigest(self.content)})"


class Tokenizer(ABC):
    """A loaded tokenizer.

    Example:
        >>> tokenizer = load_tokenizer("tokenizer.json")  # doctest: +SKIP
        >>> ids = tokenizer.encode_batch(["Hello world"])[0]  # doctest: +SKIP
        >>> tokenizer.decode(ids)  # doctest: +SKIP
        'Hello world'
    """

    kind: str = ""

    def __init__(self, spec: str):
        self.spec = spec
        self.bos_id: int | None = None
        self.eos_id: int | None = None
        self.bos_token: str | None = None
        self.eos_token: str | None = None

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Number of ids the tokenizer can produce (every id is below it)."""

    @abstractmethod
    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Ids of each text, without BOS/EOS; special-token text is encoded as plain text."""

    def encode_markup(self, texts: Sequence[str]) -> list[list[int]]:
        """Ids of each text with special-token text (`<|im_start|>`) encoded as the special
        token, as for text a chat template rendered. Backends without special tokens
        encode plain text."""
        return self.encode_batch(texts)

    @abstractmethod
    def decode(self, ids: Sequence[int]) -> str:
        """Text of `ids`, leaving out special tokens (BOS, EOS, padding...)."""

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """Text of each list of ids, as `decode` gives it."""
        return [self.decode(ids) for ids in batch]

    @abstractmethod
    def token_id(self, token: str) -> int | None:
        """Id of a token given by its text, None if the vocabulary lacks it."""

    def embedded(self) -> Embedded | None:
        """The tokenizer as a file to store beside the shards, None if it cannot be saved."""
        return None

    def fingerprint(self) -> str:
        """A hash that changes whenever the tokenizer would produce other ids."""
        saved = self.embedded()
        content = saved.content if saved is not None else self.spec.encode()
        return f"xxh3_128:{xxhash.xxh3_128_hexdigest(content)}"

    def library_special(self, role: str) -> int | None:
        """The BOS (`role="bos"`) or EOS id the library itself declares, if any."""
        return None

    def token_text(self, token_id: int) -> str | None:
        """The text of a token id, for the manifest."""
        return None

    def resolve_special(self, role: str, explicit: str | None) -> None:
        """Set the BOS or EOS added to documents: the token named, else the library's own,
        else the first known name (`<|endoftext|>`, `</s>`...) the vocabulary has."""
        if explicit is not None:
            found = self.token_id(explicit)
            if found is None:
                raise ConfigError(
                    f"tokenizer {self.spec!r} has no token {explicit!r} to use as "
                    f"{role.upper()}; check the token's spelling"
                )
            chosen, text = found, explicit
        else:
            chosen, text = self.library_special(role), None
            if chosen is not None:
                text = self.token_text(chosen)
            else:
                candidates = BOS_CANDIDATES if role == "bos" else EOS_CANDIDATES
                for name in candidates:
                    chosen = self.token_id(name)
                    if chosen is not None:
                        text = name
                        break
        if chosen is None:
            raise ConfigError(
                f"tokenizer {self.spec!r} has no {role.upper()} token I can recognise; "
                f"name one with --{role}-token TOKEN"
            )
        setattr(self, f"{role}_id", int(chosen))
        setattr(self, f"{role}_token", text)

    def describe(self) -> dict:
        """What the manifest records about the tokenizer."""
        return {
            "spec": self.spec,
            "kind": self.kind,
            "vocab_size": self.vocab_size,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            "fingerprint": self.fingerprint(),
        }


BOS_CANDIDATES = ("<|startoftext|>", "<|begin_of_text|>", "<s>", "<bos>", "[BOS]", "[CLS]")
EOS_CANDIDATES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "[EOS]", "[SEP]")
