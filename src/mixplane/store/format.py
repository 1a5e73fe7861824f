"""The token shard format, versions 1 and 2: names, the `.idx` header and the token dtype.

A shard is three files sharing a stem (`shard-TTTTT-KKK`):

- `.bin`: the documents' tokens, concatenated, little-endian uint16 or uint32;
- `.idx`: a 24-byte header, then `n_docs + 1` little-endian uint64 token offsets;
- `.meta.parquet`: one row per document (id, n_tokens, source and its properties);

and, in version 2 only (fine-tuning data), `.mask`: one byte per token of the `.bin`, 1
where the loss is taken. Pretraining shards stay version 1, so any reader reads them.

Everything here is pure: building and parsing bytes, choosing names. `docs/format.md`
describes the same layout for readers in other languages.
"""

from __future__ import annotations

import re
import struct

import numpy as np

from mixplane.errors import MixplaneError

FORMAT_NAME = "mixplane-tokens"
FORMAT_VERSION = 1
# Shards with a loss mask beside the tokens: readers of version 1 refuse them rather than
# train on every token of a conversation.
MASKED_FORMAT_VERSION = 2
READ_VERSIONS = (FORMAT_VERSION, MASKED_FORMAT_VERSION)
MAGIC = b"MXTOKIDX"
# magic, version (uint32), dtype code (uint8), 3 reserved bytes, document count (uint64)
HEADER = struct.Struct("<8sIB3xQ")
HEADER_SIZE = HEADER.size  # 24: offsets start 8-byte aligned
OFFSET_DTYPE = np.dtype("<u8")

# The dtype code is the token's size in bytes.
DTYPES: dict[int, np.dtype] = {2: np.dtype("<u2"), 4: np.dtype("<u4")}
UINT16_VOCAB_LIMIT = 1 << 16

BIN, IDX, META, SUMS, MASK = ".bin", ".idx", ".meta.parquet", ".sums", ".mask"
SUFFIXES = (BIN, IDX, META, SUMS, MASK)
# The manifest's key for each file of a shard (`.sums`: see `store.checksums`; datasets
# tokenized before it existed have none; `.mask`: only version 2 shards have one).
FILE_SUFFIXES = {"bin": BIN, "idx": IDX, "meta": META, "sums": SUMS, "mask": MASK}
OPTIONAL_FILES = ("sums", "mask")
MASK_DTYPE = np.dtype("u1")
_STEM = re.compile(r"^shard-(\d{5,})-(\d{3,})$")


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (at most 65,536 entries), else uint32.

    Example:
        >>> token_dtype(50_000), token_dtype(65_536), token_dtype(65_537)
        (dtype('uint16'), dtype('uint16'), dtype('uint32'))
    """
    if vocab_size <= 0:
        raise ValueError(f"vocabulary size must be positive, got {vocab_size}")
    return DTYPES[2] if vocab_size <= UINT16_VOCAB_LIMIT else DTYPES[4]


def dtype_code(dtype: np.dtype) -> int:
    code = np.dtype(dtype).itemsize
    if code not in DTYPES or DTYPES[code] != np.dtype(dtype).newbyteorder("<"):
        raise ValueError(f"token dtype must be uint16 or uint32, got {dtype}")
    return code


def shard_stem(task: int, shard: int) -> str:
    """The stem of shard `shard` written by input task `task`.

    Example:
        >>> shard_stem(3, 1)
        'shard-00003-001'
    """
    return f"shard-{task:05d}-{shard:03d}"


def parse_stem(stem: str) -> tuple[int, int] | None:
    """`(task, shard)` of a shard stem, None if the name is not a shard's.

    Example:
        >>> parse_stem("shard-00003-001"), parse_stem("notes")
        ((3, 1), None)
    """
    match = _STEM.match(stem)
    return (int(match.group(1)), int(match.group(2))) if match else None


def strip_suffix(path: str) -> str:
    """The shard stem path for any of its three files (or for the stem itself).

    Example:
        >>> strip_suffix("out/shard-00000-000.meta.parquet")
        'out/shard-00000-000'
    """
    for suffix in SUFFIXES:
        if path.endswith(suffix):
            return path[: -len(suffix)]
    return path


def format_version(masked: bool) -> int:
    """The version of shards with (2) or without (1) a `.mask`."""
    return MASKED_FORMAT_VERSION if masked else FORMAT_VERSION


def encode_header(dtype: np.dtype, n_docs: int, version: int = FORMAT_VERSION) -> bytes:
    """The `.idx` header for `n_docs` documents of tokens of `dtype`."""
    return HEADER.pack(MAGIC, version, dtype_code(dtype), n_docs)


def header_version(data: bytes) -> int:
    """The format version an `.idx` header (already checked by `decode_header`) names."""
    return HEADER.unpack_from(data)[1]


def decode_header(data: bytes, where: str) -> tuple[np.dtype, int]:
    """`(token dtype, document count)` from the first bytes of an `.idx` file (version 1
    or 2; `header_version` says which)."""
    if len(data) < HEADER_SIZE:
        raise MixplaneError(f"{where}: index is {len(data)} bytes, shorter than its header")
    magic, version, code, n_docs = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise MixplaneError(f"{where}: not a mixplane token index (magic {magic!r})")
    if version not in READ_VERSIONS:
        raise MixplaneError(
            f"{where}: token format version {version}; this mixplane reads versions "
            f"{', '.join(map(str, READ_VERSIONS))}, upgrade mixplane to read it"
        )
    if code not in DTYPES:
        raise MixplaneError(f"{where}: unknown token dtype code {code}")
    return DTYPES[code], n_docs


def encode_index(dtype: np.dtype, offsets: np.ndarray, version: int = FORMAT_VERSION) -> bytes:
    """A whole `.idx` file: header, then the offsets (first 0, last the token count)."""
    offsets = np.asarray(offsets, dtype=OFFSET_DTYPE)
    return encode_header(dtype, len(offsets) - 1, version) + offsets.tobytes()
