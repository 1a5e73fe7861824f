"""Export to Megatron's indexed dataset layout (`PREFIX.bin` + `PREFIX.idx`).

One pair per dataset: every document of every shard, in shard order, each document one
sequence. The `.idx` holds the 9-byte magic `MMIDIDX\\x00\\x00`, version 1 (uint64), the
dtype code (uint8: 8 = uint16, 4 = int32), the sequence count and the document-index count
(uint64 each), then int32 sequence lengths, int64 byte pointers into the `.bin`, and int64
document indices (`0..n`, one more than the documents). Megatron has no uint32 code, so
32-bit vocabularies are written as int32.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from mixplane.errors import MixplaneError
from mixplane.io.atomic import atomic_open
from mixplane.store.dataset import TokenizedDataset
from mixplane.store.format import strip_suffix

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES = {np.dtype("<u2"): 8, np.dtype("<i4"): 4}
CHUNK_TOKENS = 1 << 24


def megatron_dtype(dtype: np.dtype) -> np.dtype:
    """The Megatron dtype for our token dtype: uint16 stays, uint32 becomes int32."""
    return np.dtype("<u2") if np.dtype(dtype).itemsize == 2 else np.dtype("<i4")


def export_megatron(
    dataset: TokenizedDataset | str,
    out: str,
    storage_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write `OUT.bin` and `OUT.idx` (a `.bin`/`.idx` suffix on `out` is ignored).

    Example:
        >>> export_megatron("tokens/", "megatron/web")  # doctest: +SKIP
        {'bin': 'megatron/web.bin', 'idx': 'megatron/web.idx', 'documents': 1200, ...}
    """
    if not isinstance(dataset, TokenizedDataset):
        dataset = TokenizedDataset(dataset, storage_options)
    prefix = strip_suffix(out)
    dtype = megatron_dtype(dataset.dtype)
    readers = [dataset.shard(i) for i in range(len(dataset.shards))]
    with atomic_open(prefix + ".bin", storage_options) as handle:
        for reader in readers:
            for start in range(0, reader.n_tokens, CHUNK_TOKENS):
                chunk = np.asarray(reader.tokens[start : start + CHUNK_TOKENS])
                if chunk.dtype != dtype:
                    if len(chunk) and int(chunk.max()) > np.iinfo(dtype).max:
                        raise MixplaneError(
                            f"shard {reader.name}: token id {int(chunk.max())} does not fit "
                            "Megatron's int32 tokens"
                        )
                    chunk = chunk.astype(dtype)
                handle.write(chunk.tobytes())
    n_docs = sum(len(reader) for reader in readers)
    with atomic_open(prefix + ".idx", storage_options) as handle:
        handle.write(MAGIC)
        handle.write(struct.pack("<Q", VERSION))
        handle.write(struct.pack("<B", DTYPE_CODES[dtype]))
        handle.write(struct.pack("<Q", n_docs))
        handle.write(struct.pack("<Q", n_docs + 1))
        for reader in readers:
            lengths = reader.lengths()
            if len(lengths) and int(lengths.max()) > np.iinfo(np.int32).max:
                raise MixplaneError(f"shard {reader.name}: a document is too long for Megatron")
            handle.write(lengths.astype("<i4").tobytes())
        position = 0
        for reader in readers:
            pointers = reader.offsets[:-1].astype("<i8") * dtype.itemsize + position
            handle.write(pointers.tobytes())
            position += reader.n_tokens * dtype.itemsize
        for start in range(0, n_docs + 1, CHUNK_TOKENS):
            stop = min(n_docs + 1, start + CHUNK_TOKENS)
            handle.write(np.arange(start, stop, dtype="<i8").tobytes())
    return {
        "bin": prefix + ".bin",
        "idx": prefix + ".idx",
        "documents": n_docs,
        "tokens": dataset.n_tokens,
        "dtype": dtype.name,
    }
