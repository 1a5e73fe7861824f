"""Tokenizer backends: Hugging Face `tokenizers`, tiktoken and SentencePiece."""

from __future__ import annotations

import os
from collections.abc import Sequence

from mixplane.tokenize.base import Embedded, Tokenizer


class HFTokenizer(Tokenizer):
    """A Hugging Face `tokenizers` tokenizer (a `tokenizer.json` or a hub model)."""

    kind = "huggingface"

    def __init__(self, spec: str, tokenizer, threads: int | None = None):
        super().__init__(spec)
        if threads == 1:
            # The library reads this on every call: one thread per worker process.
            os.environ["TOKENIZERS_PARALLELISM"] = "false"
        self._tokenizer = tokenizer
        # Text that looks like a special token ("<|endoftext|>" in a web page) stays text.
        tokenizer.encode_special_tokens = True
        self._encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
        self._saved: Embedded | None = None

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self._encode(list(texts), add_special_tokens=False)]

    def encode_markup(self, texts: Sequence[str]) -> list[list[int]]:
        self._tokenizer.encode_special_tokens = False
        try:
            return self.encode_batch(texts)
        finally:
            self._tokenizer.encode_special_tokens = True

    def decode(self, ids: Sequence[int]) -> str:
        return self._tokenizer.decode([int(i) for i in ids], skip_special_tokens=True)

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return self._tokenizer.decode_batch([list(ids) for ids in batch], skip_special_tokens=True)

    def token_id(self, token: str) -> int | None:
        return self._tokenizer.token_to_id(token)

    def token_text(self, token_id: int) -> str | None:
        return self._tokenizer.id_to_token(token_id)

    def embedded(self) -> Embedded:
        if self._saved is None:
            self._saved = Embedded("_tokenizer.json", self._tokenizer.to_str().encode())
        return self._saved


class TiktokenTokenizer(Tokenizer):
    """A tiktoken encoding by name (`tiktoken:cl100k_base`)."""

    kind = "tiktoken"

    def __init__(self, spec: str, encoding, threads: int | None = None):
        super().__init__(spec)
        self._encoding = encoding
        self._threads = threads or os.cpu_count() or 1
        self._special = {encoding.encode_single_token(t) for t in encoding.special_tokens_set}

    @property
    def vocab_size(self) -> int:
        return self._encoding.n_vocab

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if self._threads == 1:
            return [self._encoding.encode_ordinary(text) for text in texts]
        return self._encoding.encode_ordinary_batch(list(texts), num_threads=self._threads)

    def encode_markup(self, texts: Sequence[str]) -> list[list[int]]:
        return [self._encoding.encode(text, allowed_special="all") for text in texts]

    def decode(self, ids: Sequence[int]) -> str:
        return self._encoding.decode([int(i) for i in ids if int(i) not in self._special])

    def token_id(self, token: str) -> int | None:
        try:
            return self._encoding.encode_single_token(token)
        except KeyError:
            return None

    def token_text(self, token_id: int) -> str | None:
        return self._encoding.decode_single_token_bytes(token_id).decode("utf-8", "replace")

    def library_special(self, role: str) -> int | None:
        return self._encoding.eot_token if role == "eos" else None

    def fingerprint(self) -> str:
        # The name pins the ranks: tiktoken checks their hash when it loads them.
        return f"tiktoken:{self._encoding.name}:{self._encoding.n_vocab}"


class SentencePieceTokenizer(Tokenizer):
    """A SentencePiece model (`*.model`)."""

    kind = "sentencepiece"

    def __init__(self, spec: str, proto: bytes, threads: int | None = None):
        super().__init__(spec)
        import sentencepiece

        self._proto = proto
        self._model = sentencepiece.SentencePieceProcessor(model_proto=proto)
        self._threads = threads or -1

    @property
    def vocab_size(self) -> int:
        return self._model.get_piece_size()

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self._model.encode(list(texts), out_type=int, num_threads=self._threads)

    def decode(self, ids: Sequence[int]) -> str:
        return self._model.decode([int(i) for i in ids])

    def token_id(self, token: str) -> int | None:
        found = self._model.piece_to_id(token)
        unknown = self._model.unk_id()
        return None if found == unknown and token != self._model.id_to_piece(unknown) else found

    def token_text(self, token_id: int) -> str | None:
        return self._model.id_to_piece(token_id)

    def library_special(self, role: str) -> int | None:
        found = self._model.bos_id() if role == "bos" else self._model.eos_id()
        return None if found < 0 else found

    def embedded(self) -> Embedded:
        return Embedded("_tokenizer.model", self._proto)
