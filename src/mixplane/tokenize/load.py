"""Loading a tokenizer from a spec string.

Specs, in the order they are tried:

- `tiktoken:NAME`: a tiktoken encoding (`tiktoken:cl100k_base`);
- `hf:NAME`: a Hugging Face hub model, named explicitly;
- a path or URL to a `.model` file: SentencePiece; to any other file: a `tokenizer.json`;
- a folder holding `tokenizer.json` or `tokenizer.model` (or a tokenized dataset's copy);
- anything else: a Hugging Face hub model name (`gpt2`, `org/model`).
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from mixplane.errors import ConfigError, InputError
from mixplane.io.urls import url_filesystem
from mixplane.tokenize.backends import HFTokenizer, SentencePieceTokenizer, TiktokenTokenizer
from mixplane.tokenize.base import Embedded, Tokenizer

if TYPE_CHECKING:
    from mixplane.store.dataset import TokenizedDataset

_FOLDER_FILES = ("tokenizer.json", "tokenizer.model", "_tokenizer.json", "_tokenizer.model")
_cache: dict[tuple, Tokenizer] = {}


def load_tokenizer(
    spec: str,
    *,
    bos: bool = False,
    eos: bool = False,
    bos_token: str | None = None,
    eos_token: str | None = None,
    threads: int | None = None,
    storage_options: dict | None = None,
    saved: Embedded | None = None,
) -> Tokenizer:
    """Load the tokenizer `spec` names; `bos`/`eos` choose the ids added around documents.

    `threads=1` keeps the library single-threaded (for one worker process per core); None
    lets it use every core. `saved`: the tokenizer's file as `Tokenizer.embedded()` gave it,
    used instead of resolving `spec` again (a worker on another host may not see the file
    `spec` names, nor reach the hub).

    Example:
        >>> tokenizer = load_tokenizer("tokenizer.json", eos=True)  # doctest: +SKIP
        >>> tokenizer.eos_id  # doctest: +SKIP
        0
    """
    if saved is not None:
        tokenizer = _from_content(spec, saved.file_name, saved.content, threads)
    else:
        tokenizer = _load(spec, threads, storage_options or {})
    if bos or bos_token is not None:
        tokenizer.resolve_special("bos", bos_token)
    if eos or eos_token is not None:
        tokenizer.resolve_special("eos", eos_token)
    return tokenizer


def dataset_tokenizer(dataset: TokenizedDataset) -> Tokenizer:
    """The tokenizer that made a tokenized dataset's shards: the copy saved beside them,
    else the spec it was given.

    Example:
        >>> dataset = TokenizedDataset("tokens/")  # doctest: +SKIP
        >>> dataset_tokenizer(dataset).decode(dataset.document(0))  # doctest: +SKIP
        'The first document...'
    """
    return load_tokenizer(dataset.tokenizer_spec, storage_options=dataset.storage_options)


def cached_tokenizer(spec: str, **options) -> Tokenizer:
    """`load_tokenizer`, once per process for the same arguments (workers reuse it)."""
    key = (spec, tuple(sorted((k, repr(v)) for k, v in options.items())))
    if key not in _cache:
        _cache[key] = load_tokenizer(spec, **options)
    return _cache[key]


def _load(spec: str, threads: int | None, storage_options: dict) -> Tokenizer:
    spec = spec.strip()
    if not spec:
        raise ConfigError(
            "the tokenizer spec is empty; give a tokenizer.json, a .model file, "
            "tiktoken:NAME or a Hugging Face model name"
        )
    if spec.startswith("tiktoken:"):
        return _tiktoken(spec, threads)
    if spec.startswith("hf:"):
        return _hub(spec, spec[3:], threads)
    fs, path = url_filesystem(spec, storage_options)
    if fs.isdir(path):
        for name in _FOLDER_FILES:
            if fs.exists(posixpath.join(path, name)):
                return _from_file(spec, fs, posixpath.join(path, name), threads)
        raise InputError(f"{spec}: folder has no tokenizer.json or tokenizer.model")
    if fs.exists(path):
        return _from_file(spec, fs, path, threads)
    if "://" in spec or spec.startswith((".", "/", "~")) or spec.endswith((".json", ".model")):
        raise InputError(f"tokenizer file {spec!r} not found")
    return _hub(spec, spec, threads)


def _from_file(spec: str, fs, path: str, threads: int | None) -> Tokenizer:
    with fs.open(path, "rb") as handle:
        return _from_content(spec, path, handle.read(), threads)


def _from_content(spec: str, path: str, content: bytes, threads: int | None) -> Tokenizer:
    """The tokenizer in `content`, the bytes of the file `path` (`.model`: SentencePiece)."""
    if path.endswith(".model"):
        try:
            return SentencePieceTokenizer(spec, content, threads)
        except (RuntimeError, OSError) as error:
            raise InputError(f"{spec}: not a SentencePiece model ({error})") from None
    from tokenizers import Tokenizer as Library

    try:
        library = Library.from_str(content.decode("utf-8"))
    except (Exception, UnicodeDecodeError) as error:
        raise InputError(
            f"{spec}: not a Hugging Face tokenizer.json ({str(error).splitlines()[0][:200]})"
        ) from None
    return HFTokenizer(spec, library, threads)


def _hub(spec: str, name: str, threads: int | None) -> Tokenizer:
    from tokenizers import Tokenizer as Library

    try:
        library = Library.from_pretrained(name)
    except Exception as error:
        raise ConfigError(
            f"cannot load tokenizer {name!r} from the Hugging Face hub ({type(error).__name__}: "
            f"{str(error).splitlines()[0][:200]}); check the name and the network, or give a "
            "local tokenizer.json"
        ) from None
    return HFTokenizer(spec, library, threads)


def _tiktoken(spec: str, threads: int | None) -> Tokenizer:
    try:
        import tiktoken
    except ImportError:
        raise ConfigError(f"{spec}: tiktoken is not installed (pip install tiktoken)") from None
    name = spec.split(":", 1)[1]
    if name not in tiktoken.list_encoding_names():
        known = ", ".join(tiktoken.list_encoding_names())
        raise ConfigError(f"{spec}: tiktoken has no encoding {name!r} (known: {known})")
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception as error:
        raise ConfigError(
            f"{spec}: tiktoken could not load the encoding ({type(error).__name__}: "
            f"{str(error).splitlines()[0][:200]}); its vocabulary is downloaded on first use, "
            "so check the network or set TIKTOKEN_CACHE_DIR to a folder that holds it"
        ) from None
    return TiktokenTokenizer(spec, encoding, threads)
